/* Every decode kernel set this machine runs ("generic", "neon", "avx2", "avx512") against
 * the scalar oracle, bit for bit, with nothing but libc, pthreads and libm, so that it also
 * runs where the CI cannot run natively: CTest builds it natively (`cross_decode_check`) and
 * cross-builds it for AArch64 to run under qemu-user (`cross.aarch64_decode`,
 * tests/cmake/cross.cmake), which is how the NEON kernels are checked on an x86-64 CI.
 *
 * Random containers from tools/datagen/generator.c: v1 and v2, every layout, random
 * split maps, both modes and the reserved T158 symbol, every shape of {1, 3, 17, 63, 64, 65,
 * 130, 191, 320} x the same (partial last tiles and macroblock rows), scales and biases over
 * every finite fp16 value (subnormals and signed zeros included) and a few at the benchmark
 * rates. Each goes through tests/support/decode_paths.h (row ranges, gathers with repeats,
 * 1..3 threads, both store kinds, every dtype, wide strides, odd destination offsets, bytes
 * around the rows untouched) for every kernel set, and once through the public entry
 * points. Each container lies read-only just before an inaccessible page, so a read past
 * its end faults (and is reported as such). The run fails if the containers missed a feature
 * they are meant to cover. Where the NEON kernels are built, their parts are checked on
 * their own (neon_parts_check.h), and the parts and a container of every shape are checked
 * again under flush-to-zero and round-toward-zero (FPCR), which must not change a bit.
 *
 * Usage: cross_decode_check [CONTAINERS [SEED]]. Exit 0 when everything matches, 1 with a
 * message naming the first difference, 2 on bad usage.
 * SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cross/neon_parts_check.h"
#include "decode/kernels.h"
#include "support/decode_paths.h"
#include "support/options.h"
#include "datagen/generator.h"

#define DEFAULT_CONTAINERS 324u /* every shape pair 4 times */
#define ROUNDS 12u              /* per container and kernel set: each (dtype, store kind) twice */

static const unsigned edges[] = {1, 3, 17, 63, 64, 65, 130, 191, 320};
#define EDGES (sizeof edges / sizeof edges[0])

/* What the checked containers held, so that a run cannot pass without testing it. */
typedef struct coverage {
    uint64_t v1_blocks[2];    /* by mode */
    uint64_t layouts[6];      /* v2 records by layout */
    uint64_t leaves[5][2];    /* v2 leaves by size class (edge 4 << c) and mode */
    uint64_t reserved_symbols;
    uint64_t subnormal_scales, subnormal_biases, negative_zero_biases;
    uint64_t t158_ends; /* containers whose last bytes are a T158 payload */
} coverage;

static bool is_subnormal(float f)
{
    const uint32_t b = sgfp4_float_to_bits(f) & 0x7FFFFFFFu;
    return b != 0 && b < 0x38800000u; /* below 2^-14: an fp16 subnormal */
}

static void count_features(const sgfp4_tensor *t, coverage *cov)
{
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    for (uint64_t b = 0; b < t->blocks; b++) {
        const unsigned n = sgfp4_block_leaf_refs(t, b, leaves);
        if (t->profile == SGFP4_PROFILE_V1) {
            cov->v1_blocks[leaves[0].mode]++;
        } else {
            const uint8_t *rec =
                t->data + t->record_base + sgfp4_load_u32le(t->data + 16 + 4 * b);
            cov->layouts[rec[0] & 7u]++;
            for (unsigned i = 0; i < n; i++)
                cov->leaves[4u - sgfp4_size_index(leaves[i].size)][leaves[i].mode]++;
        }
        for (unsigned i = 0; i < n; i++) {
            const uint64_t bytes = sgfp4_payload_bytes(leaves[i].size, leaves[i].mode);
            cov->t158_ends += leaves[i].mode == SGFP4_MODE_T158 &&
                              leaves[i].payload + sgfp4_align16(bytes) == t->data + t->size;
            cov->subnormal_scales += is_subnormal(leaves[i].scale);
            cov->subnormal_biases += is_subnormal(leaves[i].bias);
            cov->negative_zero_biases += sgfp4_float_to_bits(leaves[i].bias) == 0x80000000u;
        }
    }
    cov->reserved_symbols += sgfp4_tensor_reserved_symbols(t);
}

/* The first feature the containers missed, or NULL. */
static const char *coverage_gap(const coverage *cov, const decode_check *c)
{
    static char gap[96];
    for (unsigned m = 0; m < 2; m++)
        if (!cov->v1_blocks[m]) {
            snprintf(gap, sizeof gap, "no v1 block in mode %u", m);
            return gap;
        }
    for (unsigned l = 0; l < 6; l++)
        if (!cov->layouts[l]) {
            snprintf(gap, sizeof gap, "no v2 record of layout %u", l);
            return gap;
        }
    for (unsigned s = 0; s < 5; s++)
        for (unsigned m = 0; m < 2; m++)
            if (!cov->leaves[s][m]) {
                snprintf(gap, sizeof gap, "no %ux%u leaf in mode %u", 4u << s, 4u << s, m);
                return gap;
            }
    if (!cov->reserved_symbols)
        return "no reserved T158 symbol";
    if (!cov->subnormal_scales || !cov->subnormal_biases)
        return "no subnormal scale or bias";
    if (!cov->negative_zero_biases)
        return "no -0 bias";
    if (!cov->t158_ends)
        return "no container ending in a T158 payload";
    if (!c->f16_subnormals)
        return "no subnormal f16 output compared";
    return NULL;
}

/* What a memory fault reports: which container was being decoded (set before each). */
static char fault_message[256];

static void on_fault(int signo)
{
    (void)signo;
    const ssize_t written = write(2, fault_message, strlen(fault_message));
    (void)written;
    _exit(1);
}

/* A read-only copy of a container whose last byte ends a page, the next page inaccessible:
 * a kernel that reads past the container (or writes into it) faults instead of passing. */
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

/* The public entry points on t: the automatic choice and a forced NEON set give the oracle's
 * f32 (ref) for a whole decode and for a gather; NEON is refused exactly where it is absent. */
static bool check_public(const sgfp4_tensor *t, const decode_reference *ref, char *message,
                         size_t size)
{
    const size_t row_bytes = (size_t)t->cols * 4, bytes = (size_t)t->rows * row_bytes;
    const uint64_t rows[3] = {t->rows - 1, 0, t->rows / 2};
    uint8_t *whole = malloc(bytes), *gathered = malloc(3 * row_bytes);
    bool ok = whole && gathered;
    if (!ok)
        snprintf(message, size, "out of memory for the public decode");
    const bool have_neon = sgfp4_decode_kernels_forced(SGFP4_BACKEND_NEON) != NULL;
    const sgfp4_backend backends[2] = {SGFP4_BACKEND_AUTO, SGFP4_BACKEND_NEON};
    for (unsigned i = 0; i < 2 && ok; i++) {
        const sgfp4_decode_options o = decode_options(backends[i], 2, SGFP4_STORE_AUTO);
        const sgfp4_status want = i == 1 && !have_neon ? SGFP4_ERR_UNAVAILABLE : SGFP4_OK;
        const sgfp4_status s = sgfp4_decode(t, SGFP4_DTYPE_F32, whole, 0, bytes, &o);
        const sgfp4_status g =
            sgfp4_decode_gather(t, rows, 3, SGFP4_DTYPE_F32, gathered, 0, 3 * row_bytes, &o);
        ok = s == want && g == want;
        if (ok && want == SGFP4_OK) {
            ok = memcmp(whole, ref->data[SGFP4_DTYPE_F32], bytes) == 0;
            for (unsigned k = 0; k < 3; k++)
                ok = ok && memcmp(gathered + k * row_bytes,
                                  ref->data[SGFP4_DTYPE_F32] + rows[k] * row_bytes,
                                  row_bytes) == 0;
        }
        if (!ok)
            snprintf(message, size,
                     "public decode with backend %s on %llux%llu: status %d and %d (want %d), "
                     "or the bits differ from the oracle's",
                     i ? "neon" : "auto", (unsigned long long)t->rows,
                     (unsigned long long)t->cols, (int)s, (int)g, (int)want);
    }
    free(whole);
    free(gathered);
    return ok;
}

/* The kernel set the dispatcher picks: NEON wherever it is built. */
static bool check_dispatch(char *message, size_t size)
{
    const char *best = sgfp4_decode_kernels_best()->name;
#ifdef SGFP4_HAVE_NEON_KERNELS
    const bool ok = strcmp(best, "neon") == 0 &&
                    sgfp4_decode_kernels_forced(SGFP4_BACKEND_NEON) == &sgfp4_kernels_neon;
#else
    const bool ok = sgfp4_decode_kernels_named("neon") == NULL;
#endif
    if (!ok)
        snprintf(message, size, "dispatch: best kernel set is %s", best);
    return ok;
}

static bool parse_count(const char *s, uint64_t *out)
{
    char *end;
    const unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* Everything a run shares. */
typedef struct run {
    decode_check check;
    const sgfp4_decode_kernels *sets[DECODE_MAX_KERNEL_SETS];
    unsigned set_count;
    uint64_t seed, containers;
    coverage cov;
    uint64_t checked;  /* containers checked, every pass */
    const char *phase; /* "" or what is different about this pass */
    char where[96];    /* the container being checked, if any */
    /* Set during the pass under unusual floating-point modes: switches them off (false) or
     * on (true), so that the public API's output can be compared with the oracle's in the
     * default modes, the normative bits, not only with the oracle's under the same modes. */
    bool (*set_unusual_modes)(bool on);
} run;

/* Container i of the run: its shape, profile, rate and kind of halves. */
static gen_params container_params(uint64_t i)
{
    const double rates[16] = {[5] = 2.5, [13] = 4.5}; /* the rest: random records */
    gen_params p = gen_shape_params(i % 3 == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2,
                                    edges[i % EDGES], edges[(i / EDGES) % EDGES]);
    p.target_bpw = rates[i % 16];
    p.halves = i % 4 != 3 ? GEN_HALVES_ANY : GEN_HALVES_EDGES;
    if (p.target_bpw > 0)
        p.profile = SGFP4_PROFILE_V2;
    return p;
}

/* Container i through every kernel set and the public entry points. */
static bool check_container(run *r, uint64_t i)
{
    decode_check *c = &r->check;
    const gen_params p = container_params(i);
    const uint64_t seed = r->seed * 1000003u + i;
    snprintf(r->where, sizeof r->where, "container %llu (%s, %llux%llu, seed %llu): ",
             (unsigned long long)i, p.profile == SGFP4_PROFILE_V1 ? "v1" : "v2",
             (unsigned long long)p.rows, (unsigned long long)p.cols, (unsigned long long)seed);
    snprintf(fault_message, sizeof fault_message,
             "cross_decode_check: FAIL: %s%smemory fault (a read past the container's end hits "
             "the guard page after it)\n", r->phase, r->where);
    size_t size;
    uint8_t *data = gen_container_bytes(&p, seed, &size);
    fenced f;
    const bool fenced_ok = data && fence_make(&f, data, size);
    free(data);
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag = {0};
    if (!fenced_ok ||
        sgfp4_tensor_open(f.data, size, p.profile, p.rows, p.cols, &t, NULL, &diag) != SGFP4_OK) {
        snprintf(c->message, sizeof c->message, "did not open: %s",
                 fenced_ok ? diag.message : "out of memory");
        if (fenced_ok)
            fence_free(&f);
        return false;
    }
    count_features(t, &r->cov);
    decode_reference ref;
    bool ok = decode_reference_make(t, &ref);
    if (!ok)
        snprintf(c->message, sizeof c->message, "out of memory for the oracle's output");
    for (unsigned k = 0; ok && k < r->set_count; k++)
        ok = decode_check_paths(c, t, &ref, r->sets[k], ROUNDS);
    if (ok && r->set_unusual_modes) {
        /* the public calls run in the default modes whatever the caller's: their bits are
         * the oracle's in the default modes */
        decode_reference normative;
        r->set_unusual_modes(false);
        const bool made = decode_reference_make(t, &normative);
        r->set_unusual_modes(true);
        if (!made)
            snprintf(c->message, sizeof c->message, "out of memory for the oracle's output");
        ok = made && check_public(t, &normative, c->message, sizeof c->message);
        if (made)
            decode_reference_free(&normative);
    } else {
        ok = ok && check_public(t, &ref, c->message, sizeof c->message);
    }
    decode_reference_free(&ref);
    sgfp4_tensor_close(t);
    fence_free(&f);
    if (ok) {
        r->where[0] = '\0';
        r->checked++;
    }
    return ok;
}

#ifdef SGFP4_HAVE_NEON_KERNELS
/* FPCR.FZ (bit 24) and FZ16 (bit 19), flush-to-zero for binary32 and binary16, and RMode
 * (bits 22..23) 3, round toward zero: set or cleared together. Threads created meanwhile
 * inherit them. True if they took effect. */
static bool set_unusual_fpcr(bool on)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    const uint64_t bits = UINT64_C(1) << 24 | UINT64_C(1) << 19 | UINT64_C(3) << 22;
    fpcr = on ? fpcr | bits : fpcr & ~bits;
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
    volatile float tiny = 0x1p-126f, one = 1.0f;
    const float flushed = tiny * 0.5f;           /* a binary32 subnormal unless flushed */
    const float truncated = one + 0x1.8p-24f;    /* 1 + 2^-23 to nearest, 1 toward zero */
    return (flushed == 0.0f) == on && (truncated == 1.0f) == on;
}

/* The NEON parts and one container of every shape again under that FPCR: the kernels' fp16
 * conversions must not depend on it (D1), their weights must round as the oracle's do under
 * the same modes (one rounding of an exact product either way), and the public API, which
 * runs in the default modes, must give the normative bits. */
static bool check_unusual_fpcr(run *r)
{
    if (!set_unusual_fpcr(true)) {
        snprintf(r->check.message, sizeof r->check.message, "could not set FPCR");
        return false;
    }
    r->phase = "with FPCR.FZ, FZ16 and round-toward-zero set: ";
    r->set_unusual_modes = set_unusual_fpcr;
    bool ok = neon_parts_check(r->check.message, sizeof r->check.message);
    for (uint64_t i = 0; ok && i < EDGES * EDGES; i++)
        ok = check_container(r, i);
    r->set_unusual_modes = NULL;
    set_unusual_fpcr(false);
    if (ok)
        r->phase = "";
    return ok;
}
#endif

static bool check_all(run *r)
{
    char *message = r->check.message;
    const size_t size = sizeof r->check.message;
    if (!check_dispatch(message, size))
        return false;
#ifdef SGFP4_HAVE_NEON_KERNELS
    if (!neon_parts_check(message, size))
        return false;
    printf("cross_decode_check: neon parts (halves, f16/bf16 rounding, leaf listing) OK\n");
#endif
    for (uint64_t i = 0; i < r->containers; i++)
        if (!check_container(r, i))
            return false;
    const char *gap = r->containers >= DEFAULT_CONTAINERS ? coverage_gap(&r->cov, &r->check) : NULL;
    if (gap) {
        snprintf(message, size, "the containers did not cover: %s", gap);
        return false;
    }
#ifdef SGFP4_HAVE_NEON_KERNELS
    if (!check_unusual_fpcr(r))
        return false;
    printf("cross_decode_check: neon parts and %u containers again with FPCR.FZ, FZ16 and "
           "round-toward-zero: OK\n", (unsigned)(EDGES * EDGES));
#endif
    return true;
}

int main(int argc, char **argv)
{
    static run r;
    r.containers = DEFAULT_CONTAINERS;
    r.seed = 1;
    r.phase = "";
    if (argc > 3 || (argc > 1 && !parse_count(argv[1], &r.containers)) ||
        (argc > 2 && !parse_count(argv[2], &r.seed))) {
        fprintf(stderr, "usage: %s [CONTAINERS [SEED]]\n", argv[0]);
        return 2;
    }
    const clock_t began = clock();
    struct sigaction fault = {0};
    fault.sa_handler = on_fault;
    sigaction(SIGSEGV, &fault, NULL);
    sigaction(SIGBUS, &fault, NULL);
    static const unsigned thread_counts[] = {1, 2, 3};
    r.check.rng.state = r.seed * 0x9E3779B97F4A7C15ull + 1;
    r.check.thread_counts = thread_counts;
    r.check.thread_count_n = sizeof thread_counts / sizeof thread_counts[0];
    r.set_count = decode_kernel_sets(r.sets);
    printf("cross_decode_check: kernel sets:");
    for (unsigned i = 0; i < r.set_count; i++)
        printf(" %s", r.sets[i]->name);
    printf(" (best: %s)\n", sgfp4_decode_kernels_best()->name);
    fflush(stdout);
    if (!check_all(&r)) {
        fprintf(stderr, "cross_decode_check: FAIL: %s%s%s\n", r.phase, r.where,
                r.check.message);
        return 1;
    }
    const coverage *cov = &r.cov;
    uint64_t leaves = 0;
    for (unsigned s = 0; s < 5; s++)
        leaves += cov->leaves[s][0] + cov->leaves[s][1];
    printf("cross_decode_check: OK: %llu containers x %u kernel sets: %llu tiled decodes, "
           "%llu rows, %llu bytes, %llu subnormal f16 outputs, all equal to the oracle; "
           "%llu v2 leaves, %llu v1 blocks, %llu reserved symbols, %llu containers ending in "
           "a T158 payload (%.1f s CPU)\n",
           (unsigned long long)r.checked, r.set_count, (unsigned long long)r.check.decodes,
           (unsigned long long)r.check.rows, (unsigned long long)r.check.bytes,
           (unsigned long long)r.check.f16_subnormals, (unsigned long long)leaves,
           (unsigned long long)(cov->v1_blocks[0] + cov->v1_blocks[1]),
           (unsigned long long)cov->reserved_symbols, (unsigned long long)cov->t158_ends,
           (double)(clock() - began) / CLOCKS_PER_SEC);
    return 0;
}
