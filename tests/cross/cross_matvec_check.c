/* Every matvec kernel set this machine runs ("generic", "neon", "neondot", "avx2",
 * "avx512", "avx512vnni") against the scalar oracle, bit for bit, with nothing but libc,
 * pthreads and libm, so that it also runs where the CI cannot run natively: CTest builds it
 * natively (`cross_matvec_check`) and cross-builds it for AArch64 to run under qemu-user
 * (`cross.aarch64_matvec`, tests/cmake/matvec.cmake), which is how the NEON sets (with and
 * without SDOT) are checked on an x86-64 CI.
 *
 * Containers: random ones from tools/datagen/generator.c (v1 and v2, every layout, MIXED
 * trees of every depth, both modes and the reserved T158 symbol, edge-case and LLM-like
 * scales, shapes from 1 to 200 on each side), and encoder output of LLM-like matrices at
 * 4.5 bits per weight and v1 (the records the kernels read without the plan's table). Each
 * lies read-only just before an inaccessible page, so a read past its end faults. For each:
 * both classes, f32 and f16 activations of several kinds (Gaussian, zeros and -0, below
 * the 2^-60 and 2^-40 floors, huge, NaN and infinity in Class B), a random batch of 1..16,
 * through tests/matvec/matvec_paths.c (row ranges cut into pieces, 1..3 threads, strided
 * outputs with guarded gaps) for every set, and every set's quantizer. On AArch64 a share
 * of the containers runs again through the public calls under FPCR flush-to-zero and
 * round-toward-zero, which must change nothing. The run fails if the containers missed a
 * feature they are meant to cover.
 *
 * Usage: cross_matvec_check [CONTAINERS [SEED]]. Exit 0 when everything matches, 1 with a
 * message naming the first difference, 2 on bad usage.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "matvec/matvec_paths.h"
#include "sgfp4_experimental.h"
#include "datagen/generator.h"

/* Container i has the shape (edges[i % 8], edges[(i / 8 + i) % 8]): 64 containers give every
 * pair of edge lengths once (and pass the coverage check); more only cost time under qemu. */
#define DEFAULT_CONTAINERS 64u

static const unsigned edges[] = {1, 3, 17, 63, 64, 65, 130, 200};
#define EDGES (sizeof edges / sizeof edges[0])

static const char *fault_message = "cross_matvec_check: memory fault (a read past a container)\n";

static void on_fault(int signo)
{
    (void)signo;
    const ssize_t written = write(2, fault_message, strlen(fault_message));
    (void)written;
    _exit(1);
}

/* A read-only copy whose last byte ends a page, the next page inaccessible. */
typedef struct fenced {
    uint8_t *map, *data;
    size_t map_bytes;
} fenced;

static bool fence_make(fenced *f, const uint8_t *src, size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (size + page - 1) / page * page;
    f->map_bytes = body + page;
    void *map = mmap(NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (map == MAP_FAILED)
        return false;
    f->map = map;
    f->data = f->map + body - size;
    memcpy(f->data, src, size);
    if (mprotect(f->map, body, PROT_READ) != 0 || mprotect(f->map + body, page, PROT_NONE) != 0) {
        munmap(f->map, f->map_bytes);
        return false;
    }
    return true;
}

static void fence_free(fenced *f) { munmap(f->map, f->map_bytes); }

/* What the checked containers held. */
typedef struct coverage {
    uint64_t v1_blocks[2];    /* by mode */
    uint64_t layouts[6];      /* v2 records */
    uint64_t leaves[5][2];    /* v2 leaves by size class and mode */
    uint64_t direct_records;  /* read without the plan's table */
    uint64_t padded_tensors;  /* a partial last block column */
    uint32_t batches;         /* bit n - 1: batch n ran on a tensor of several block columns */
    uint64_t sets_checked;
} coverage;

static void count_features(const sgfp4_tensor *t, coverage *cov)
{
    if (t->cols % 64)
        cov->padded_tensors++;
    sgfp4_leaf leaves[SGFP4_MAX_LEAVES];
    for (uint64_t b = 0; b < t->blocks; b++) {
        const size_t n = sgfp4_tensor_block_leaves(t, b, leaves, SGFP4_MAX_LEAVES);
        if (t->profile == SGFP4_PROFILE_V1) {
            cov->v1_blocks[leaves[0].mode]++;
            continue;
        }
        cov->layouts[sgfp4_record_layout(t, b)]++;
        cov->direct_records += sgfp4_matvec_record_is_direct(t, b);
        for (size_t i = 0; i < n; i++)
            cov->leaves[4 - sgfp4_size_index(leaves[i].size)][leaves[i].mode]++;
    }
}

/* Activations of one kind for `batch` vectors of `cols` (f32; f16 through a copy). */
static void make_activations(float *x, uint64_t cols, unsigned batch, unsigned kind, bool class_b,
                             matvec_rng *rng)
{
    for (uint64_t i = 0; i < cols * batch; i++) {
        const double u = (double)matvec_rng_below(rng, 1u << 24) / (1 << 24) - 0.5;
        float v = (float)(u * 4);
        switch (kind) {
        case 1: v = matvec_rng_below(rng, 2) ? 0.0f : -0.0f; break;               /* zeros */
        case 2: v = (float)(u * 0x1p-59); break;              /* around the 2^-60 floor */
        case 3: v = (float)(u * 0x1p-39); break;              /* around the 2^-40 floor */
        case 4: v = matvec_rng_below(rng, 8) ? v : (float)(u * 2e30); break;       /* huge */
        case 5:
            if (class_b && matvec_rng_below(rng, 64) == 0) /* non-finite: Class B only */
                v = matvec_rng_below(rng, 2) ? (float)NAN : -(float)INFINITY;
            break;
        default: break;
        }
        x[i] = v;
    }
}

/* Some f16 value near f: any f16 value will do as an input (truncated significand, finite
 * values saturated to 65504, tiny ones to zero); NaN and infinity stay what they are. */
static uint16_t f32_to_f16_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    const uint32_t sign = (b >> 16) & 0x8000u;
    const int e = (int)((b >> 23) & 0xFFu) - 127 + 15;
    if ((b & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)(sign | 0x7E00u);
    if ((b & 0x7FFFFFFFu) == 0x7F800000u)
        return (uint16_t)(sign | 0x7C00u);
    if (e >= 31)
        return (uint16_t)(sign | 0x7BFFu);
    if (e <= 0)
        return (uint16_t)sign;
    return (uint16_t)(sign | (uint32_t)e << 10 | ((b >> 13) & 0x3FFu));
}

typedef struct run {
    matvec_check check;
    coverage cov;
    const sgfp4_matvec_kernels *sets[MATVEC_MAX_KERNEL_SETS];
    unsigned set_count;
    char message[700];
} run;

/* Every set on one tensor: both classes, one activation kind, f32 or f16, `batch` vectors
 * (the kernels share each block's weights among a chunk of them). */
static bool check_tensor(run *r, const sgfp4_tensor *t, const char *what, unsigned index,
                         unsigned batch)
{
    sgfp4_matvec_plan *plan;
    if (sgfp4_matvec_plan_create(t, &plan) != SGFP4_OK) {
        snprintf(r->message, sizeof r->message, "%s: plan_create failed", what);
        return false;
    }
    const uint64_t rows = t->rows, cols = t->cols;
    if (t->tiles_x > 1)
        r->cov.batches |= UINT32_C(1) << (batch - 1);
    const unsigned kind = index % 6;
    const bool f16 = index % 5 == 4;
    float *x = malloc(cols * batch * sizeof *x);
    uint16_t *h = malloc(cols * batch * sizeof *h);
    float *oracle = malloc(rows * batch * sizeof *oracle);
    const size_t q8_bytes = sgfp4_matvec_q8_bytes(cols, batch);
    void *q8 = malloc(q8_bytes);
    bool ok = x && h && oracle && q8;
    if (!ok)
        snprintf(r->message, sizeof r->message, "out of memory");
    for (int cls = 0; cls < 2 && ok; cls++) {
        const bool class_a = cls == 0;
        make_activations(x, cols, batch, kind, !class_a, &r->check.rng);
        for (uint64_t i = 0; f16 && i < cols * batch; i++)
            h[i] = f32_to_f16_bits(x[i]);
        const void *in = f16 ? (const void *)h : (const void *)x;
        const sgfp4_dtype dtype = f16 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32;
        matvec_inputs mi = {class_a, {in, cols * (f16 ? 2u : 4u), dtype, batch}, oracle};
        if (class_a) {
            if (sgfp4_matvec_quantize(in, dtype, cols, batch, 0, q8, q8_bytes, NULL, NULL) !=
                SGFP4_OK) {
                snprintf(r->message, sizeof r->message, "%s: quantize failed", what);
                ok = false;
                break;
            }
            mi.x = (sgfp4_matvec_x){q8, q8_bytes / batch, SGFP4_DTYPE_F32, batch};
            for (unsigned k = 0; k < r->set_count && ok; k++)
                if (!(ok = matvec_check_quantizer(&r->check, r->sets[k], in, dtype, cols)))
                    snprintf(r->message, sizeof r->message, "%s: %s", what, r->check.message);
        }
        matvec_oracle(plan, class_a, &mi.x, oracle);
        for (unsigned k = 0; k < r->set_count && ok; k++) {
            if (!(ok = matvec_check_paths(&r->check, plan, &mi, r->sets[k], 2)))
                snprintf(r->message, sizeof r->message, "%s (activations %u, %s, batch %u): %s",
                         what, kind, f16 ? "f16" : "f32", batch, r->check.message);
            r->cov.sets_checked++;
        }
    }
    free(x);
    free(h);
    free(oracle);
    free(q8);
    sgfp4_matvec_plan_free(plan);
    return ok;
}

#if defined(__aarch64__)
/* FPCR.FZ (bit 24), FZ16 (bit 19) and RMode (bits 22..23) = round toward zero. */
static void set_unusual_fpcr(bool on)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    const uint64_t bits = UINT64_C(1) << 24 | UINT64_C(1) << 19 | UINT64_C(3) << 22;
    fpcr = on ? fpcr | bits : fpcr & ~bits;
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}

/* The public calls (AUTO) under that FPCR give the oracle's bits (computed before). */
static bool check_fpcr(run *r, const sgfp4_tensor *t, const char *what)
{
    sgfp4_matvec_plan *plan;
    if (sgfp4_matvec_plan_create(t, &plan) != SGFP4_OK)
        return false;
    const uint64_t rows = t->rows, cols = t->cols;
    float *x = malloc(cols * 4), *want = malloc(rows * 4), *got = malloc(rows * 4);
    const size_t q8_bytes = sgfp4_matvec_q8_bytes(cols, 1);
    void *q8 = malloc(q8_bytes), *q8_unusual = malloc(q8_bytes);
    bool ok = x && want && got && q8 && q8_unusual;
    for (int cls = 0; cls < 2 && ok; cls++) {
        make_activations(x, cols, 1, 2 + cls, cls == 1, &r->check.rng); /* near the floors */
        sgfp4_matvec_options o;
        sgfp4_matvec_options_init(&o);
        o.backend = SGFP4_BACKEND_SCALAR;
        if (cls == 0) {
            sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 1, 0, q8, q8_bytes, &o, NULL);
            sgfp4_matvec_q8(plan, q8, q8_bytes, 1, 0, rows, want, 0, rows * 4, &o);
        } else {
            sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, rows, want, 0, rows * 4, &o);
        }
        set_unusual_fpcr(true);
        if (cls == 0) {
            sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 1, 0, q8_unusual, q8_bytes, NULL,
                                  NULL);
            sgfp4_matvec_q8(plan, q8_unusual, q8_bytes, 1, 0, rows, got, 0, rows * 4, NULL);
        } else {
            sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, rows, got, 0, rows * 4, NULL);
        }
        set_unusual_fpcr(false);
        if (cls == 0 && memcmp(q8, q8_unusual, q8_bytes) != 0) {
            snprintf(r->message, sizeof r->message, "%s: the quantizer under FZ/RZ differs", what);
            ok = false;
        }
        for (uint64_t i = 0; i < rows && ok; i++)
            if (memcmp(&want[i], &got[i], 4) != 0 && !(want[i] != want[i] && got[i] != got[i])) {
                snprintf(r->message, sizeof r->message,
                         "%s: class %c under FZ/RZ, row %llu: %a, the oracle %a", what,
                         cls ? 'B' : 'A', (unsigned long long)i, (double)got[i],
                         (double)want[i]);
                ok = false;
            }
    }
    free(x);
    free(want);
    free(got);
    free(q8);
    free(q8_unusual);
    sgfp4_matvec_plan_free(plan);
    return ok;
}
#endif

/* One container's bytes, fenced, opened, checked. */
static bool check_bytes(run *r, const uint8_t *bytes, size_t size, sgfp4_profile profile,
                        uint64_t rows, uint64_t cols, const char *what, unsigned index,
                        unsigned batch)
{
    fenced f;
    if (!fence_make(&f, bytes, size)) {
        snprintf(r->message, sizeof r->message, "%s: cannot map a fenced copy", what);
        return false;
    }
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    bool ok = sgfp4_tensor_open(f.data, size, profile, rows, cols, &t, NULL, &diag) == SGFP4_OK;
    if (!ok)
        snprintf(r->message, sizeof r->message, "%s does not open: %s", what, diag.message);
    if (ok) {
        count_features(t, &r->cov);
        ok = check_tensor(r, t, what, index, batch);
#if defined(__aarch64__)
        if (ok && index % 8 == 0)
            ok = check_fpcr(r, t, what);
#endif
    }
    sgfp4_tensor_close(t);
    fence_free(&f);
    return ok;
}

/* Encoder output of an LLM-like matrix (the benchmark's kind of container). */
static bool check_encoded(run *r, uint64_t rows, uint64_t cols, sgfp4_profile profile,
                          unsigned index, unsigned batch)
{
    float *w = gen_llm_weights(rows, cols, 1000 + index);
    sgfp4_encode_options eo;
    sgfp4_encode_options_init(&eo);
    eo.profile = profile;
    eo.target_bpw = 4.5;
    void *out = NULL;
    size_t size = 0;
    bool ok = w && sgfp4_encode_alloc(w, rows, cols, 0, &out, &size, &eo, NULL) == SGFP4_OK;
    free(w);
    char what[96];
    snprintf(what, sizeof what, "encoded %s %llux%llu", profile == SGFP4_PROFILE_V1 ? "v1" : "v2",
             (unsigned long long)rows, (unsigned long long)cols);
    if (!ok)
        snprintf(r->message, sizeof r->message, "%s: encode failed", what);
    else
        ok = check_bytes(r, out, size, profile, rows, cols, what, index, batch);
    sgfp4_free(out);
    return ok;
}

static bool coverage_complete(const coverage *cov, char *message, size_t size)
{
    const char *missing = NULL;
    if (!cov->v1_blocks[0] || !cov->v1_blocks[1])
        missing = "v1 blocks of both modes";
    for (unsigned l = 0; l < 6 && !missing; l++)
        if (!cov->layouts[l])
            missing = "every v2 layout";
    for (unsigned c = 0; c < 5 && !missing; c++)
        for (unsigned m = 0; m < 2 && !missing; m++)
            if (!cov->leaves[c][m])
                missing = "v2 leaves of every size in both modes";
    if (!missing && !cov->direct_records)
        missing = "records the kernels read without the plan's table";
    if (!missing && !cov->padded_tensors)
        missing = "tensors with a partial last block column";
    if (!missing && cov->batches != (UINT32_C(1) << SGFP4_MATVEC_MAX_BATCH) - 1)
        missing = "every batch size on a tensor of several block columns";
    if (missing)
        snprintf(message, size, "the containers did not cover %s", missing);
    return !missing;
}

int main(int argc, char **argv)
{
    unsigned containers = DEFAULT_CONTAINERS;
    uint64_t seed = 20240601;
    if (argc > 3 || (argc > 1 && (containers = (unsigned)strtoul(argv[1], NULL, 10)) == 0)) {
        fprintf(stderr, "usage: cross_matvec_check [CONTAINERS [SEED]]\n");
        return 2;
    }
    if (argc > 2)
        seed = strtoull(argv[2], NULL, 10);
    signal(SIGSEGV, on_fault);
    signal(SIGBUS, on_fault);
    static const unsigned threads[] = {1, 2, 3};
    static run r;
    r.check = (matvec_check){.rng = {seed}, .thread_counts = threads, .thread_count_n = 3};
    r.set_count = matvec_kernel_sets(r.sets);
    printf("matvec kernel sets:");
    for (unsigned k = 0; k < r.set_count; k++)
        printf(" %s", r.sets[k]->name);
    printf("\n");
    bool ok = true;
    gen_rng g = {seed};
    for (unsigned i = 0; i < containers && ok; i++) {
        const int profile = i % 3 == 0 ? 1 : 2;
        gen_params p = gen_shape_params(profile, edges[i % EDGES], edges[(i / EDGES + i) % EDGES]);
        p.layouts = i % 7 == 3 ? GEN_LAYOUTS_MIXED_DEEP
                                : i % 11 == 5 ? GEN_LAYOUTS_UNIFORM_64 : GEN_LAYOUTS_ALL;
        if (i % 4 == 1)
            p.halves = GEN_HALVES_LLM;
        gen_container c;
        if (gen_generate(&c, &g, &p) != 0) {
            snprintf(r.message, sizeof r.message, "cannot generate container %u", i);
            ok = false;
            break;
        }
        char what[96];
        snprintf(what, sizeof what, "container %u (v%d %llux%llu)", i, profile,
                 (unsigned long long)c.rows, (unsigned long long)c.cols);
        /* every batch size in turn */
        ok = check_bytes(&r, c.data, c.size, (sgfp4_profile)c.profile, c.rows, c.cols, what, i,
                         1 + i % SGFP4_MATVEC_MAX_BATCH);
        gen_free(&c);
    }
    static const uint64_t shapes[][2] = {{64, 256}, {130, 200}, {65, 1100}};
    /* batches of one chunk, of a chunk and a remainder, of whole chunks */
    static const unsigned batches[][2] = {{5, 16}, {13, 4}, {7, 12}};
    for (unsigned i = 0; i < 3 && ok; i++)
        ok = check_encoded(&r, shapes[i][0], shapes[i][1], SGFP4_PROFILE_V2, i, batches[i][0]) &&
             check_encoded(&r, shapes[i][0], shapes[i][1], SGFP4_PROFILE_V1, i + 3, batches[i][1]);
    if (ok)
        ok = coverage_complete(&r.cov, r.message, sizeof r.message);
    if (!ok) {
        fprintf(stderr, "cross_matvec_check: FAIL: %s\n", r.message);
        return 1;
    }
    printf("cross_matvec_check: %u containers + 6 encoded, %llu set checks, %llu kernel calls, "
           "%llu results, all equal to the oracle\n",
           containers, (unsigned long long)r.cov.sets_checked,
           (unsigned long long)r.check.calls, (unsigned long long)r.check.results);
    return 0;
}
