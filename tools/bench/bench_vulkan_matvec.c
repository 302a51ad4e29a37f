/* sgfp4 bench --backend vulkan --op matvec [--shape OxI] [--batch B] [--profile v1|v2]
 *     [--bpw X] [--variant LIST] [--repeat R] [--no-check] [--json]
 * The D8 matrix-vector products on the GPU (Class A and Class B), measured in the same run
 * as their two references: the device copy (the memory ceiling) and a plain read of the
 * bytes the products read (the read arm, below); the uncompressed peers (ggml's CUDA f16 and
 * q4_0 products, torch's) are timed by tools/gpu/gpu_peers.sh. Shapes: 4096x4096,
 * 14336x4096, 4096x14336, 8192x8192 (or --shape); batches 1 and 4 (or --batch); tensors:
 * v1 (random codes: v1 has one layout, so its speed does not depend on the content) and v2
 * encoder output (sgfp4_encode of an LLM-like matrix at --bpw, default 4.5; shapes made of
 * 2048x2048 tiles repeat the records of one encoded tile).
 * Each measurement is a burst (bench_vulkan.h): R rounds (default 50) in one submission of a
 * product on the next of enough resident copies of the tensor to total at least 256 MiB
 * (so that its weights come from device memory, not the cache), then a device copy of 1 GiB,
 * after bursts that bring the copy rate to its best. Then the same op
 * timed three other ways: the stream (each round every copy's op back to back with no barrier
 * between them, distinct outputs, then the copy: the time per op), and both without the
 * copy. GB/s counts the compressed bytes (the container); the ratio is over the copy's GB/s
 * (read + written), medians of one burst. The read arm: for each shape and tensor,
 * a kernel that only reads the bytes a product reads from device memory (v1: the container;
 * v2: the products' layout the tensor holds, about 1.2x the container;
 * sgfp4_vk_tensor_product_range, the kit's vkit_read_prepare), on the same copies, timed the
 * same ways: the ceiling of reading those bytes at this size, where a few MB take a few
 * microseconds. Its line gives its GB/s of the bytes it reads and its ratio to the copy;
 * each product's line ends with its ratio to the read ("of read": the read's median time
 * over the product's, alone and in the stream); in the JSON, a result of op "read" per tensor
 * and each product's read_bytes, read_us, ratio_to_read and stream_ratio_to_read. Class A
 * activations are quantized on the device once (the quantizer's bytes checked against the
 * CPU's), and the quantizer is timed the same ways per shape and batch (a result of op
 * "quantize": what a whole Class A operation adds to its product); each product's output is
 * checked bit for bit against the CPU's scalar oracle on its first and last 128 rows unless
 * --no-check. With --json the table lines go to stderr as progress.
 * --fast times each variant a second time as the fast products of DECISIONS D9
 * (sgfp4_vk_matvec_options.fast), named "D9-fast" in the table and "products" in the JSON
 * (D8 results: "D8"); instead of the bit check, each fast output of the checked rows must lie
 * within D9's bound c * 2^-24 * sum_j |w_j x_j| of the oracle's D8 result (JSON: bound_c,
 * bound_units = the largest |y_fast - y_D8| in units of 2^-24 * sum_j |w_j x_j|,
 * within_bound).
 * --variant takes a comma-separated list of kernel variants (default, rows16, rows32,
 * noprefetch, rows16-noprefetch, leavesahead, leavesatuse, slices1 .. slices64) or "all";
 * every variant's output is checked too (the read arm runs once per tensor, whatever the
 * variants).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_vulkan.h"
#include "cli.h"
#include "sgfp4_config.h"
#include "datagen/generator.h"

#if SGFP4_HAVE_VULKAN

enum { MAX_SHAPES = 4, MAX_BATCHES = 2, MAX_COPIES = 64, MAX_REPEAT = 62,
       SETTLE_ROUNDS = 20, MAX_VARIANTS = 16, STREAM_DISPATCHES = 2048 };
#define ROTATION_BYTES ((uint64_t)256 << 20)
#define CEILING_BYTES ((uint64_t)1 << 30)

typedef struct variant {
    const char *name;
    unsigned slices, flags;
    int profile_only; /* 1: v1 tensors only, 2: v2 only, 0: both */
} variant;

static const variant all_variants[] = {
    {"default", 0, 0, 0},
    {"rows16", 0, SGFP4_VK_MATVEC_ROWS_16, 1},
    {"rows32", 0, SGFP4_VK_MATVEC_ROWS_32, 1},
    {"noprefetch", 0, SGFP4_VK_MATVEC_NO_PREFETCH, 0},
    {"leavesahead", 0, SGFP4_VK_MATVEC_LEAVES_AHEAD, 2},
    {"leavesatuse", 0, SGFP4_VK_MATVEC_LEAVES_AT_USE, 2},
    {"rows16-noprefetch", 0, SGFP4_VK_MATVEC_ROWS_16 | SGFP4_VK_MATVEC_NO_PREFETCH, 1},
    {"slices1", 1, 0, 0},
    {"slices2", 2, 0, 0},
    {"slices4", 4, 0, 0},
    {"slices8", 8, 0, 0},
    {"slices16", 16, 0, 0},
    {"slices32", 32, 0, 0},
    {"slices64", 64, 0, 0},
};
#define N_VARIANTS (sizeof all_variants / sizeof all_variants[0])

/* One burst's worth of work: the ops (products on the copies), or the kit's dispatches (the
 * plain reads), and the copy interleaved. */
typedef struct burst_job {
    sgfp4_vk_context *ctx;
    vkit *kit;
    sgfp4_vk_op *ops[MAX_COPIES];
    unsigned n_ops;
    vkit_dispatch own[MAX_COPIES]; /* when n_ops == 0 */
    unsigned n_own;
    vkit_dispatch copy_d;
    uint64_t copy_bytes;
    uint64_t y_step; /* the stream: op i writes its output at i * y_step bytes */
    unsigned rounds;
    bool stream; /* the round's ops back to back, no barrier between them (one time each) */
    bool no_copy; /* no copy between rounds (the ops alone, one after another) */
    double op[MAX_REPEAT], copy[MAX_REPEAT];
} burst_job;

static bool run_burst(void *arg, double *copy_gbps)
{
    burst_job *j = arg;
    const unsigned n = j->n_ops ? j->n_ops : j->n_own;
    vkit_step steps[MAX_COPIES];
    for (unsigned i = 0; i < n; i++)
        steps[i] = j->n_ops ? (vkit_step){j->ops[i], NULL} : (vkit_step){NULL, &j->own[i]};
    const vkit_step copy = {NULL, &j->copy_d};
    if (vkit_run(j->kit, steps, n, j->no_copy ? NULL : &copy, j->rounds, j->stream, j->op,
                 j->copy, NULL) != SGFP4_OK)
        return false;
    bench_stats st;
    if (!j->no_copy) {
        bench_stats_of(j->copy, (int)j->rounds, &st);
        *copy_gbps = 2.0 * (double)j->copy_bytes / st.median * 1e-9;
    }
    return true;
}

/* The other ways of timing an op (the isolated burst with its copy is the table's): the
 * stream (every copy's op back to back in a round, no barrier between them: the time per
 * op), each with the copy after every round or with no copy at all (without it the L2 does
 * not start a round full of the copy's dirty lines, which the op then writes back). */
typedef struct other_times {
    bench_stats stream, alone, stream_alone; /* stream + copy; isolated, no copy; stream, no copy */
} other_times;

/* Settles, then measures `repeat` rounds: the op's statistics and the copy's GB/s; then the
 * other timings into *other. */
static bool measure(burst_job *j, unsigned repeat, bench_stats *st, double *copy_gbps,
                    bv_settled *settled, other_times *other)
{
    j->stream = j->no_copy = false;
    j->rounds = SETTLE_ROUNDS;
    if (!bv_settle(run_burst, j, j->copy_bytes, 2.0, settled))
        return false;
    j->rounds = repeat;
    if (!run_burst(j, copy_gbps))
        return false;
    bench_stats_of(j->op, (int)repeat, st);
    const unsigned n = j->n_ops ? j->n_ops : j->n_own;
    bool ok = true;
    for (int way = 0; ok && way < 3; way++) {
        j->stream = way != 1;
        j->no_copy = way != 0;
        const unsigned per_round = (j->stream ? n : 1u) + (j->no_copy ? 0u : 1u);
        j->rounds = repeat < STREAM_DISPATCHES / per_round ? repeat
                                                           : STREAM_DISPATCHES / per_round;
        double unused = 0;
        ok = run_burst(j, &unused);
        if (ok)
            bench_stats_of(j->op, (int)j->rounds,
                        way == 0 ? &other->stream : way == 1 ? &other->alone
                                                             : &other->stream_alone);
    }
    j->stream = j->no_copy = false;
    return ok;
}

static json_t *other_json(const other_times *o)
{
    return json_pack("{s:o,s:o,s:o}", "stream", bench_stats_json(&o->stream), "no_copy",
                     bench_stats_json(&o->alone), "stream_no_copy", bench_stats_json(&o->stream_alone));
}

static uint32_t load32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* A v2 container of ty x tx macroblocks that repeats the records of `src` (sy x sx blocks,
 * records stored back to back, as the encoder writes them): block (by, bx) takes the record
 * of source block (by % sy, bx % sx). NULL when out of memory or the sizes overflow. */
static uint8_t *tile_v2(const uint8_t *src, size_t src_size, uint64_t sy, uint64_t sx,
                        uint64_t ty, uint64_t tx, size_t *size)
{
    const uint64_t sb = sy * sx, tb = ty * tx;
    const uint64_t src_base = (16 + 4 * sb + 15) & ~(uint64_t)15;
    const uint64_t base = (16 + 4 * tb + 15) & ~(uint64_t)15;
    uint64_t total = base;
    for (uint64_t b = 0; b < tb; b++) {
        const uint64_t s = (b / tx % sy) * sx + b % tx % sx;
        const uint64_t end = s + 1 < sb ? load32(src + 16 + 4 * (s + 1)) : src_size - src_base;
        total += end - load32(src + 16 + 4 * s);
    }
    if (total > UINT32_MAX || tb > UINT32_MAX)
        return NULL;
    uint8_t *d = calloc(1, (size_t)total);
    if (!d)
        return NULL;
    memcpy(d, src, 5); /* magic and version */
    store32(d + 5, (uint32_t)tb);
    uint64_t at = 0;
    for (uint64_t b = 0; b < tb; b++) {
        const uint64_t s = (b / tx % sy) * sx + b % tx % sx;
        const uint64_t from = load32(src + 16 + 4 * s);
        const uint64_t end = s + 1 < sb ? load32(src + 16 + 4 * (s + 1)) : src_size - src_base;
        store32(d + 16 + 4 * b, (uint32_t)at);
        memcpy(d + base + at, src + src_base + from, (size_t)(end - from));
        at += end - from;
    }
    *size = (size_t)total;
    return d;
}

/* The tensor of one kind: v1 random codes, or v2 encoder output of an LLM-like matrix (for
 * shapes made of 2048x2048 tiles, one encoded tile repeated: the encoder's layout mix at a
 * fraction of the encoding time). */
static uint8_t *make_tensor(int profile, uint64_t rows, uint64_t cols, double bpw, size_t *size,
                            char *what, size_t what_size)
{
    if (profile == 1) {
        gen_params p = gen_shape_params(1, rows, cols);
        p.halves = GEN_HALVES_LLM;
        p.corners = 0; /* as an encoder writes: no shared payloads */
        snprintf(what, what_size, "v1 random");
        return gen_container_bytes(&p, 11, size);
    }
    const uint64_t tile = 2048;
    const int tiled = rows % tile == 0 && cols % tile == 0 && rows * cols > tile * tile;
    const uint64_t er = tiled ? tile : rows, ec = tiled ? tile : cols;
    float *w = gen_llm_weights(er, ec, 12);
    if (!w)
        return NULL;
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.target_bpw = bpw;
    o.threads = cli_threads(0);
    void *encoded = NULL;
    size_t encoded_size = 0;
    const sgfp4_status s = sgfp4_encode_alloc(w, er, ec, 0, &encoded, &encoded_size, &o, NULL);
    free(w);
    if (s != SGFP4_OK)
        return NULL;
    uint8_t *out = tiled ? tile_v2(encoded, encoded_size, er / 64, ec / 64, rows / 64, cols / 64,
                                   size)
                         : malloc(encoded_size);
    if (out && !tiled) {
        memcpy(out, encoded, encoded_size);
        *size = encoded_size;
    }
    sgfp4_free(encoded);
    if (out)
        snprintf(what, what_size, "v2 enc %.2fb", 8.0 * (double)*size / (double)(rows * cols));
    return out;
}

/* Rows the oracle checks at each end of a tensor. */
static uint64_t check_rows(uint64_t rows)
{
    return rows < 128 ? rows : 128;
}

typedef struct bench_setup {
    const unsigned *batches;
    int n_batches;
    const variant *variants[MAX_VARIANTS];
    int n_variants;
    unsigned repeat;
    bool check, as_json;
    bool fast; /* --fast: each variant also as the D9 fast products */
    double bpw;
    int profiles[2], n_profiles;
} bench_setup;

/* The read arm of one tensor: a kernel that only reads the bytes its products read from
 * device memory (sgfp4_vk_tensor_product_range: v1 the container, v2 the products' layout),
 * on every resident copy, timed as the products are (the same copies, rotation, copy and
 * ways): the ceiling of reading those bytes at this size. */
typedef struct read_arm {
    uint64_t bytes; /* of one copy */
    bench_stats st;    /* isolated, with the copy (the table's timing) */
    other_times other;
} read_arm;

static bool measure_read(burst_job *j, const bench_setup *b, sgfp4_vk_tensor *const *vt,
                         unsigned copies, uint64_t rows, uint64_t cols, const char *what,
                         uint64_t container_bytes, read_arm *r, json_t *results)
{
    sgfp4_diag diag = {0};
    bool ok = true;
    for (unsigned c = 0; ok && c < copies; c++) {
        VkBuffer buffer;
        VkDeviceSize offset;
        ok = sgfp4_vk_tensor_product_range(vt[c], &buffer, &offset, &r->bytes, &diag) ==
                 SGFP4_OK &&
             vkit_read_prepare(j->kit, buffer, offset, r->bytes, &j->own[c], &diag) == SGFP4_OK;
    }
    j->n_ops = 0;
    j->n_own = copies;
    bv_settled settled = {0};
    double copy_gbps = 0;
    ok = ok && measure(j, b->repeat, &r->st, &copy_gbps, &settled, &r->other);
    for (unsigned c = 0; c < copies; c++)
        vkit_dispatch_free(j->kit, &j->own[c]);
    if (!ok)
        return cli_error("bench", "matvec %s: the read arm failed: %s", what, diag.message) == 0;
    const double gbps = (double)r->bytes / r->st.median * 1e-9;
    const double stream_gbps = (double)r->bytes / r->other.stream.median * 1e-9;
    json_array_append_new(
        results,
        json_pack("{s:s,s:I,s:I,s:s,s:I,s:I,s:i,s:f,s:f,s:f,s:f,s:o,s:o,s:o}", "op", "read",
                  "rows", (json_int_t)rows, "cols", (json_int_t)cols, "tensor", what,
                  "container_bytes", (json_int_t)container_bytes, "read_bytes",
                  (json_int_t)r->bytes, "copies", (int)copies, "GBps", gbps, "copy_GBps",
                  copy_gbps, "ratio_to_copy", gbps / copy_gbps, "stream_ratio_to_copy",
                  stream_gbps / copy_gbps, "time", bench_stats_json(&r->st), "other_times",
                  other_json(&r->other), "settle", bv_settled_json(&settled)));
    fprintf(b->as_json ? stderr : stdout,
            "%5llux%-5llu %-12s read %16llu bytes %8.2f us  %7.1f GB/s  copy %6.0f  ratio %.3f  "
            "| stream %.2f us ratio %.3f, no copy %.2f, stream no copy %.2f%s\n",
            (unsigned long long)rows, (unsigned long long)cols, what,
            (unsigned long long)r->bytes, r->st.median * 1e6, gbps, copy_gbps,
            gbps / copy_gbps, r->other.stream.median * 1e6, stream_gbps / copy_gbps,
            r->other.alone.median * 1e6, r->other.stream_alone.median * 1e6,
            settled.settled ? "" : "  UNSETTLED");
    fflush(b->as_json ? stderr : stdout);
    return true;
}

/* The device quantizer of Class A, timed as the products are (copies of the op, each to its
 * own q8 range, so the stream's ops overlap as the products' do): what a whole Class A
 * operation adds to its product, for comparisons with peers whose op quantizes its own
 * activations. One result of op "quantize" per cols and batch. */
static bool measure_quantize(burst_job *j, const bench_setup *b, VkBuffer x, uint64_t cols,
                             unsigned batch, unsigned copies, json_t *results)
{
    sgfp4_diag diag = {0};
    const size_t q8_batch = sgfp4_matvec_q8_bytes(cols, batch);
    sgfp4_vk_buffer *out = NULL;
    bool ok = sgfp4_vk_buffer_create(j->ctx, q8_batch * copies, &out, &diag) == SGFP4_OK;
    for (unsigned c = 0; c < copies; c++)
        j->ops[c] = NULL;
    for (unsigned c = 0; ok && c < copies; c++)
        ok = sgfp4_vk_quantize_create(j->ctx, x, 0, SGFP4_DTYPE_F32, cols, batch, 0,
                                      sgfp4_vk_buffer_handle(out), c * q8_batch, NULL,
                                      &j->ops[c], &diag) == SGFP4_OK;
    j->n_ops = copies;
    bench_stats st;
    other_times other = {0};
    bv_settled settled = {0};
    double copy_gbps = 0;
    ok = ok && measure(j, b->repeat, &st, &copy_gbps, &settled, &other);
    for (unsigned c = 0; c < copies; c++)
        sgfp4_vk_op_free(j->ops[c]);
    sgfp4_vk_buffer_free(j->ctx, out);
    if (!ok)
        return cli_error("bench", "matvec: quantize %llu x %u failed: %s",
                         (unsigned long long)cols, batch, diag.message) == 0;
    json_array_append_new(results,
                          json_pack("{s:s,s:I,s:i,s:o,s:o}", "op", "quantize", "cols",
                                    (json_int_t)cols, "batch", (int)batch, "time",
                                    bench_stats_json(&st), "other_times", other_json(&other)));
    fprintf(b->as_json ? stderr : stdout,
            "      x%-5llu quantize batch %2u %8.2f us | stream %.2f us, no copy %.2f, stream "
            "no copy %.2f\n",
            (unsigned long long)cols, batch, st.median * 1e6, other.stream.median * 1e6,
            other.alone.median * 1e6, other.stream_alone.median * 1e6);
    return true;
}

/* D9's constant c of the Vulkan fast products (docs/matvec.md, "Fast products"): Class A
 * 22 + 2L, Class B 16 + 2L, L = ceil(log2 ceil(I / 64)). */
static double fast_bound_c(int class_a, uint64_t cols)
{
    unsigned l = 0;
    while ((UINT64_C(1) << l) < (cols + 63) / 64)
        l++;
    return (class_a ? 22.0 : 16.0) + 2.0 * l;
}

/* The largest |y_fast - y_D8| / (2^-24 * sum_j |w_j x_j|) over the checked rows (part 0: the
 * first check_rows(rows), part 1: the last), w their decoded weights (wrows, part after part),
 * x as the products read it (Class A: q_j * d_b of the q8 bytes). Where the sum is 0 a
 * difference gives infinity. */
static double fast_bound_units(int class_a, uint64_t rows, uint64_t cols, unsigned batch,
                               const float *wrows, const float *x, const uint8_t *q8,
                               const float *want, const float *got)
{
    const uint64_t n_check = check_rows(rows), tiles_x = (cols + 63) / 64;
    const size_t vector_bytes = sgfp4_matvec_q8_bytes(cols, 1);
    double worst = 0;
    for (unsigned n = 0; n < batch; n++)
        for (int part = 0; part < 2; part++)
            for (uint64_t i = 0; i < n_check; i++) {
                const uint64_t r = part == 0 ? i : rows - n_check + i;
                const float *w = wrows + ((uint64_t)part * n_check + i) * cols;
                double size = 0;
                for (uint64_t c = 0; c < cols; c++) {
                    double xv = x[n * cols + c];
                    if (class_a) {
                        const uint8_t *v = q8 + n * vector_bytes;
                        float d;
                        memcpy(&d, v + tiles_x * 64 + 4 * (c / 64), 4);
                        xv = (double)(int8_t)v[c] * (double)d;
                    }
                    size += fabs((double)w[c] * xv);
                }
                const double diff = fabs((double)got[n * rows + r] - (double)want[n * rows + r]);
                const double units = diff == 0 ? 0 : size == 0 ? INFINITY : diff / (size * 0x1p-24);
                if (!(units <= worst)) /* NaN too */
                    worst = units;
            }
    return worst;
}

/* Every class, batch and variant of one tensor. */
static bool run_tensor(burst_job *j, const bench_setup *b, int profile, uint64_t rows,
                       uint64_t cols, json_t *results, bool *differ)
{
    char what[32];
    size_t size = 0;
    uint8_t *bytes = make_tensor(profile, rows, cols, b->bpw, &size, what, sizeof what);
    if (!bytes)
        return cli_error("bench", "matvec %llux%llu: no v%d tensor (out of memory?)",
                         (unsigned long long)rows, (unsigned long long)cols, profile) == 0;
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag = {0};
    bool ok = sgfp4_tensor_open(bytes, size, (sgfp4_profile)profile, rows, cols, &t, NULL,
                                &diag) == SGFP4_OK;
    uint64_t copies = (ROTATION_BYTES + size - 1) / size;
    copies = copies < 1 ? 1 : copies > MAX_COPIES ? MAX_COPIES : copies;
    sgfp4_vk_tensor *vt[MAX_COPIES] = {0};
    for (unsigned c = 0; ok && c < copies; c++)
        ok = sgfp4_vk_tensor_create(j->ctx, t, &vt[c], &diag) == SGFP4_OK;
    const unsigned max_batch = 16;
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, max_batch);
    float *x = malloc(sizeof *x * max_batch * (size_t)cols);
    uint8_t *q8 = malloc(q8_size), *q8_gpu = malloc(q8_size);
    float *want = malloc(sizeof *want * max_batch * (size_t)rows);
    float *got = malloc(sizeof *got * max_batch * (size_t)rows);
    sgfp4_vk_buffer *xb = NULL, *qb = NULL, *yb = NULL;
    ok = ok && x && q8 && q8_gpu && want && got;
    gen_rng rng = {rows + 7 * cols};
    for (uint64_t i = 0; ok && i < max_batch * cols; i++) { /* a sum of 4 uniforms: near-gauss */
        double s = 0;
        for (int k = 0; k < 4; k++)
            s += (double)gen_below(&rng, 1u << 20) / (1u << 20);
        x[i] = (float)(s - 2.0);
    }
    ok = ok &&
         sgfp4_vk_buffer_create(j->ctx, 4 * max_batch * cols, &xb, &diag) == SGFP4_OK &&
         sgfp4_vk_buffer_create(j->ctx, q8_size, &qb, &diag) == SGFP4_OK &&
         sgfp4_vk_buffer_create(j->ctx, 4 * max_batch * rows * copies, &yb, &diag) ==
             SGFP4_OK &&
         sgfp4_vk_buffer_write(j->ctx, sgfp4_vk_buffer_handle(xb), 0, x,
                               4 * max_batch * (size_t)cols, &diag) == SGFP4_OK;
    sgfp4_matvec_plan *plan = NULL;
    sgfp4_matvec_options cpu;
    sgfp4_matvec_options_init(&cpu);
    cpu.threads = cli_threads(0);
    ok = ok && sgfp4_matvec_plan_create(t, &plan) == SGFP4_OK;
    /* --fast: the checked rows' weights, for the D9 bound */
    float *wrows = NULL;
    if (ok && b->fast && b->check) {
        const uint64_t n_check = check_rows(rows);
        const size_t part_bytes = sizeof *wrows * n_check * (size_t)cols;
        wrows = malloc(2 * part_bytes);
        ok = wrows &&
             sgfp4_decode_rows(t, 0, n_check, SGFP4_DTYPE_F32, wrows, 0, part_bytes, NULL) ==
                 SGFP4_OK &&
             sgfp4_decode_rows(t, rows - n_check, rows, SGFP4_DTYPE_F32, wrows + n_check * cols,
                               0, part_bytes, NULL) == SGFP4_OK;
    }
    read_arm read = {0};
    ok = ok && measure_read(j, b, vt, (unsigned)copies, rows, cols, what, size, &read, results);
    for (int cls = 0; ok && cls < 2; cls++) {
        const int class_a = cls == 0;
        for (int bi = 0; ok && bi < b->n_batches; bi++) {
            const unsigned batch = b->batches[bi];
            const size_t q8_batch = sgfp4_matvec_q8_bytes(cols, batch);
            if (class_a) { /* the device quantizer, checked against the CPU's bytes */
                ok = sgfp4_vk_quantize(j->ctx, sgfp4_vk_buffer_handle(xb), 0, SGFP4_DTYPE_F32,
                                       cols, batch, 0, sgfp4_vk_buffer_handle(qb), 0, NULL,
                                       &diag) == SGFP4_OK &&
                     sgfp4_vk_buffer_read(j->ctx, sgfp4_vk_buffer_handle(qb), 0, q8_gpu,
                                          q8_batch, &diag) == SGFP4_OK &&
                     sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, batch, 0, q8, q8_batch,
                                           NULL, &diag) == SGFP4_OK;
                if (ok && memcmp(q8, q8_gpu, q8_batch) != 0) {
                    cli_error("bench", "matvec %s: the device quantizer's bytes differ", what);
                    ok = false;
                }
                if (ok && profile == b->profiles[0]) /* once per shape and batch */
                    ok = measure_quantize(j, b, sgfp4_vk_buffer_handle(xb), cols, batch,
                                          (unsigned)copies, results);
            }
            /* The oracle on the first and the last CHECK_ROWS rows (every column: the
             * first and last bands of workgroups; the CPU's scalar reference is slow). */
            for (int part = 0; ok && b->check && part < 2; part++) {
                const uint64_t r0 = part == 0 ? 0 : rows - check_rows(rows),
                               r1 = part == 0 ? check_rows(rows) : rows;
                float *at = want + r0;
                const size_t cap = sizeof *want * ((batch - 1) * rows + (r1 - r0));
                ok = (class_a
                          ? sgfp4_matvec_q8(plan, q8, q8_batch, batch, r0, r1, at, rows, cap, &cpu)
                          : sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, batch, 0, r0, r1, at, rows,
                                               cap, &cpu)) == SGFP4_OK;
            }
            const int arms = b->fast ? 2 : 1; /* each variant as D8, then as D9 fast */
            for (int vi = 0; ok && vi < b->n_variants * arms; vi++) {
                const variant *v = b->variants[vi / arms];
                const int fast = vi % arms == 1;
                const char *products = fast ? "D9-fast" : "D8";
                if (v->profile_only != 0 && v->profile_only != profile)
                    continue;
                sgfp4_vk_matvec_options o;
                sgfp4_vk_matvec_options_init(&o);
                o.slices = v->slices;
                o.flags = v->flags;
                o.fast = fast;
                j->n_ops = (unsigned)copies;
                j->y_step = 4 * max_batch * rows; /* distinct outputs: the stream's ops overlap */
                sgfp4_status s = SGFP4_OK;
                for (unsigned c = 0; c < copies; c++)
                    j->ops[c] = NULL;
                for (unsigned c = 0; s == SGFP4_OK && c < copies; c++)
                    s = class_a ? sgfp4_vk_matvec_q8_create(j->ctx, vt[c],
                                                            sgfp4_vk_buffer_handle(qb), 0, batch,
                                                            sgfp4_vk_buffer_handle(yb),
                                                            c * j->y_step, 0, &o, &j->ops[c],
                                                            &diag)
                                : sgfp4_vk_matvec_float_create(
                                      j->ctx, vt[c], sgfp4_vk_buffer_handle(xb), 0,
                                      SGFP4_DTYPE_F32, batch, 0, sgfp4_vk_buffer_handle(yb),
                                      c * j->y_step, 0, &o, &j->ops[c], &diag);
                if (s == SGFP4_ERR_ARGUMENT) { /* a split this shape does not allow */
                    for (unsigned c = 0; c < copies; c++)
                        sgfp4_vk_op_free(j->ops[c]);
                    continue;
                }
                bench_stats st;
                other_times other = {0};
                bv_settled settled = {0};
                double copy_gbps = 0;
                /* op 0's output (the stream, after the burst, runs every op once a round) */
                ok = s == SGFP4_OK &&
                     measure(j, b->repeat, &st, &copy_gbps, &settled, &other) &&
                     sgfp4_vk_buffer_read(j->ctx, sgfp4_vk_buffer_handle(yb), 0, got,
                                          sizeof *got * batch * rows, &diag) == SGFP4_OK;
                const uint64_t scratch = ok ? sgfp4_vk_op_bytes(j->ops[0]) : 0;
                for (unsigned c = 0; c < copies; c++)
                    sgfp4_vk_op_free(j->ops[c]);
                if (!ok) {
                    cli_error("bench", "matvec %s %s failed: %s", what, v->name, diag.message);
                    break;
                }
                bool same = b->check;
                double bound_units = 0;
                const double bound_c = fast_bound_c(class_a, cols);
                if (fast && b->check) {
                    bound_units = fast_bound_units(class_a, rows, cols, batch, wrows, x, q8,
                                                   want, got);
                    same = bound_units <= bound_c;
                }
                for (unsigned n = 0; !fast && same && n < batch; n++)
                    for (int part = 0; part < 2; part++) {
                        const uint64_t r0 = part == 0 ? 0 : rows - check_rows(rows);
                        same = same && memcmp(want + n * rows + r0, got + n * rows + r0,
                                              sizeof *got * check_rows(rows)) == 0;
                    }
                const double gbps = (double)size / st.median * 1e-9;
                const double stream_gbps = (double)size / other.stream.median * 1e-9;
                const double of_read = read.st.median / st.median;
                const double stream_of_read = read.other.stream.median / other.stream.median;
                json_t *result =
                    json_pack("{s:s,s:I,s:I,s:s,s:s,s:i,s:s,s:I,s:I,s:I,s:I,s:i,s:f,s:f,s:f,s:o,"
                              "s:f,s:o,s:o,s:o}",
                              "op", "matvec", "rows", (json_int_t)rows, "cols", (json_int_t)cols,
                              "tensor", what, "class", class_a ? "A" : "B", "batch", (int)batch,
                              "variant", v->name, "container_bytes", (json_int_t)size,
                              "table_bytes", (json_int_t)sgfp4_vk_tensor_table_bytes(vt[0]),
                              "device_bytes", (json_int_t)sgfp4_vk_tensor_device_bytes(vt[0]),
                              "scratch_bytes", (json_int_t)scratch, "copies", (int)copies,
                              "GBps", gbps, "copy_GBps", copy_gbps, "ratio_to_copy",
                              gbps / copy_gbps, "other_times", other_json(&other),
                              "stream_ratio_to_copy", stream_gbps / copy_gbps, "bit_identical",
                              b->check && !fast ? json_boolean(same) : json_null(), "time",
                              bench_stats_json(&st), "settle", bv_settled_json(&settled));
                json_object_set_new(result, "products", json_string(products));
                if (fast) {
                    json_object_set_new(result, "bound_c", json_real(bound_c));
                    json_object_set_new(result, "bound_units",
                                        b->check ? json_real(bound_units) : json_null());
                    json_object_set_new(result, "within_bound",
                                        b->check ? json_boolean(same) : json_null());
                }
                json_object_set_new(result, "read_bytes", json_integer((json_int_t)read.bytes));
                json_object_set_new(result, "read_us", json_real(read.st.median * 1e6));
                json_object_set_new(result, "ratio_to_read", json_real(of_read));
                json_object_set_new(result, "stream_ratio_to_read", json_real(stream_of_read));
                json_array_append_new(results, result);
                /* The table line; with --json on stderr, as progress. */
                fprintf(b->as_json ? stderr : stdout,
                        "%5llux%-5llu %-12s class %s batch %2u %-10s %-7s %8.2f us  %7.1f GB/s  "
                           "copy %6.0f  ratio %.3f  | stream %.2f us ratio %.3f, no copy %.2f, "
                           "stream no copy %.2f  | of read %.3f, stream %.3f  %s%s\n",
                           (unsigned long long)rows, (unsigned long long)cols, what,
                           class_a ? "A" : "B", batch, v->name, products, st.median * 1e6, gbps,
                           copy_gbps, gbps / copy_gbps, other.stream.median * 1e6,
                           stream_gbps / copy_gbps, other.alone.median * 1e6,
                           other.stream_alone.median * 1e6, of_read, stream_of_read,
                           !b->check ? "unchecked"
                           : fast    ? (same ? "within D9 bound" : "BEYOND D9 BOUND")
                           : same    ? "same bits"
                                     : "DIFFERENT BITS",
                           settled.settled ? "" : "  UNSETTLED");
                fflush(b->as_json ? stderr : stdout);
                if (b->check && !same) { /* reported, measured on; the command fails */
                    if (fast)
                        cli_error("bench", "matvec %s class %s batch %u %s D9-fast: %.1f "
                                  "units beyond the bound c = %.0f of the CPU oracle's D8",
                                  what, class_a ? "A" : "B", batch, v->name, bound_units,
                                  bound_c);
                    else
                        cli_error("bench", "matvec %s class %s batch %u %s: results differ "
                                  "from the CPU oracle",
                                  what, class_a ? "A" : "B", batch, v->name);
                    *differ = true;
                }
            }
        }
    }
    if (!ok && diag.message[0])
        cli_error("bench", "matvec %s: %s", what, diag.message);
    sgfp4_matvec_plan_free(plan);
    free(wrows);
    for (unsigned c = 0; c < copies; c++)
        sgfp4_vk_tensor_free(j->ctx, vt[c]);
    sgfp4_vk_buffer_free(j->ctx, xb);
    sgfp4_vk_buffer_free(j->ctx, qb);
    sgfp4_vk_buffer_free(j->ctx, yb);
    sgfp4_tensor_close(t);
    free(bytes);
    free(x);
    free(q8);
    free(q8_gpu);
    free(want);
    free(got);
    return ok;
}

/* Parses --variant LIST into b->variants. */
static bool parse_variants(const char *list, bench_setup *b)
{
    b->n_variants = 0;
    if (!list || strcmp(list, "default") == 0) {
        b->variants[b->n_variants++] = &all_variants[0];
        return true;
    }
    if (strcmp(list, "all") == 0) {
        for (size_t i = 0; i < N_VARIANTS && b->n_variants < MAX_VARIANTS; i++)
            b->variants[b->n_variants++] = &all_variants[i];
        return true;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *name = strtok_r(buf, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < N_VARIANTS && strcmp(all_variants[i].name, name) != 0)
            i++;
        if (i == N_VARIANTS || b->n_variants == MAX_VARIANTS)
            return false;
        b->variants[b->n_variants++] = &all_variants[i];
    }
    return b->n_variants > 0;
}

int bench_vulkan_matvec(const cli_args *a)
{
    static const int not_here[] = {KEY_CODES, KEY_SEED, KEY_THREADS, KEY_OFFSET, KEY_STORE,
                                   KEY_DTYPE, KEY_RUNS, KEY_GATHER_ROWS, KEY_SIZE, KEY_INTEGER, 0};
    const char *cmd = a->command;
    const int rc = cli_reject(a, "--op matvec", not_here);
    if (rc >= 0)
        return rc;
    if (a->in)
        return cli_usage_error(cmd, "--op matvec takes no input file");
    bench_setup b = {0};
    if (!parse_variants(a->given[KEY_VARIANT] ? a->variant : NULL, &b))
        return cli_usage_error(cmd, "--op matvec: --variant wants default, all or a comma list "
                                    "of rows16, rows32, noprefetch, rows16-noprefetch, "
                                    "slices1..slices64");
    b.repeat = a->given[KEY_REPEAT] ? a->repeat : 50;
    if (b.repeat > MAX_REPEAT)
        b.repeat = MAX_REPEAT;
    b.check = !a->given[KEY_NO_CHECK];
    b.fast = a->given[KEY_FAST];
    b.as_json = a->given[KEY_JSON];
    b.bpw = a->given[KEY_BPW] ? a->bpw : 4.5;
    if (a->given[KEY_PROFILE])
        b.profiles[b.n_profiles++] = a->profile == SGFP4_PROFILE_V1 ? 1 : 2;
    else {
        b.profiles[b.n_profiles++] = 1;
        b.profiles[b.n_profiles++] = 2;
    }
    unsigned batches[MAX_BATCHES];
    if (a->batch)
        batches[b.n_batches++] = a->batch;
    else {
        batches[b.n_batches++] = 1;
        batches[b.n_batches++] = 4;
    }
    b.batches = batches;
    uint64_t shapes[MAX_SHAPES][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {8192, 8192}};
    int n_shapes = MAX_SHAPES;
    if (a->given[KEY_SHAPE]) {
        shapes[0][0] = a->rows;
        shapes[0][1] = a->cols;
        n_shapes = 1;
    }
    sgfp4_vk_context *ctx = NULL;
    sgfp4_diag diag;
    if (sgfp4_vk_context_create(&ctx, NULL, &diag) != SGFP4_OK)
        return cli_error(cmd, "--backend vulkan: %s", diag.message);
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    sgfp4_vk_context_get_info(ctx, &info);
    if (info.matvec_path == SGFP4_VK_MATVEC_UNAVAILABLE) {
        sgfp4_vk_context_free(ctx);
        return cli_error(cmd, "--op matvec: device %s has no exact matrix-vector path (it "
                              "cannot declare RoundingModeRTE for 32-bit floats)",
                         info.name);
    }
    uint64_t ceiling_bytes = CEILING_BYTES;
    if (ceiling_bytes > info.max_storage_buffer_range / 2)
        ceiling_bytes = (info.max_storage_buffer_range / 2) & ~(uint64_t)0xFFFF;
    burst_job *j = calloc(1, sizeof *j);
    sgfp4_vk_buffer *copy_a = NULL, *copy_b = NULL;
    double shader = 0, dma = 0;
    bool ok = j && vkit_open(ctx, &j->kit, &diag) == SGFP4_OK &&
              bv_copy_ceiling(j->kit, ceiling_bytes, 10, 0.2, &shader, &dma) &&
              sgfp4_vk_buffer_create(ctx, ceiling_bytes, &copy_a, &diag) == SGFP4_OK &&
              sgfp4_vk_buffer_create(ctx, ceiling_bytes, &copy_b, &diag) == SGFP4_OK &&
              vkit_copy_prepare(j->kit, sgfp4_vk_buffer_handle(copy_a),
                                sgfp4_vk_buffer_handle(copy_b), ceiling_bytes, &j->copy_d,
                                &diag) == SGFP4_OK;
    if (ok) {
        j->ctx = ctx;
        j->copy_bytes = ceiling_bytes;
    } else {
        cli_error(cmd, "the copy ceiling could not be measured");
    }
    if (ok && !b.as_json)
        printf("device: %s; matvec path %s; synchronous copy (%.0f MiB, read + written): shader "
               "%.1f GB/s, vkCmdCopyBuffer %.1f GB/s; bursts of %u rounds, medians; GB/s of "
               "compressed bytes\n",
               info.name, info.matvec_path == SGFP4_VK_MATVEC_DOT_PRODUCT ? "OpSDot" : "shader",
               (double)ceiling_bytes / (1 << 20), shader, dma, b.repeat);
    json_t *results = json_array();
    bool differ = false;
    for (int s = 0; ok && s < n_shapes; s++) {
        for (int p = 0; ok && p < b.n_profiles; p++)
            ok = run_tensor(j, &b, b.profiles[p], shapes[s][0], shapes[s][1], results, &differ);
    }
    if (b.as_json) {
        json_t *root = json_pack("{s:s,s:o,s:s,s:I,s:f,s:f,s:o}", "op", "matvec", "device",
                                 bv_device_json(ctx), "matvec_path",
                                 info.matvec_path == SGFP4_VK_MATVEC_DOT_PRODUCT ? "OpSDot"
                                                                                 : "shader",
                                 "copy_bytes", (json_int_t)ceiling_bytes, "sync_shader_copy_GBps",
                                 shader, "sync_cmd_copy_buffer_GBps", dma, "results", results);
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
    } else {
        json_decref(results);
    }
    sgfp4_vk_buffer_free(ctx, copy_a);
    sgfp4_vk_buffer_free(ctx, copy_b);
    if (j)
        vkit_close(j->kit);
    free(j);
    sgfp4_vk_context_free(ctx);
    return ok && !differ ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

#else /* !SGFP4_HAVE_VULKAN */

int bench_vulkan_matvec(const cli_args *a)
{
    return cli_error(a->command, "--backend vulkan: %s", sgfp4_status_str(SGFP4_ERR_UNAVAILABLE));
}

#endif
