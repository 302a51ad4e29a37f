/* The public encode calls: the passes over macroblocks (each block's work independent of
 * the others, so the output is the same for any thread count), rate control,
 * and a final strict open of the produced container as a self-check (the argument checks:
 * encode_checks.c).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/fp_env.h"
#include "common/options.h"
#include "common/results.h"
#include "container/tensor.h"
#include "encode/block_io.h"
#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "encode/block_write.h"
#include "encode/calibrate.h"
#include "encode/encode_checks.h"
#include "encode/error_weights.h"
#include "encode/rate_control.h"
#include "encode/simd.h"
#include "encode/team.h"
#include "format/bits.h"

sgfp4_status sgfp4_encode_options_init_sized(sgfp4_encode_options *options, size_t size)
{
    sgfp4_encode_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.profile = SGFP4_PROFILE_V2;
    defaults.policy = SGFP4_POLICY_RATE;
    defaults.target_bpw = 4.5;
    defaults.delta = 0.10;
    defaults.threshold = 1.0;
    defaults.fit = SGFP4_FIT_BEST;
    defaults.threads = 0;
    defaults.metric = SGFP4_METRIC_SSE;
    return SGFP4_OPTIONS_INIT(sgfp4_encode_options, options, size, &defaults);
}

/* Largest v2 record: MIXED head (4 + 12 + 4 * 256, padded) plus 256 padded 4x4 payloads. */
#define MAX_RECORD_BYTES (1040u + 16u + 256u * 16u)

size_t sgfp4_encode_bound(sgfp4_profile profile, uint64_t rows, uint64_t cols)
{
    uint64_t blocks;
    if ((profile != SGFP4_PROFILE_AUTO && profile != SGFP4_PROFILE_V1 &&
         profile != SGFP4_PROFILE_V2) ||
        !sgfp4_encode_shape_ok(rows, cols, &blocks))
        return 0;
    const uint64_t per = profile == SGFP4_PROFILE_V1 ? SGFP4_V1_BLOCK_BYTES : MAX_RECORD_BYTES;
    if (blocks > (UINT64_MAX - 64) / (per + 4))
        return 0;
    const uint64_t bytes = profile == SGFP4_PROFILE_V1
                               ? blocks * per
                               : sgfp4_v2_table_bytes(blocks) + blocks * per;
    return bytes > SIZE_MAX ? 0 : (size_t)bytes;
}

typedef struct job {
    const float *src;
    uint64_t rows, cols, tiles_x, blocks;
    size_t stride;
    sgfp4_encode_options o;
    double mean_square;
    const float *row_weight, *col_weight; /* error weights of the metric, or NULL */
    float *scratch;              /* per worker: block + SGFP4_ENCODE_SCRATCH floats */
    sgfp4_block_plan *plans;     /* v2 */
    sgfp4_leaf_params *params;   /* rate policy: SGFP4_NODES * 2 per block */
    uint64_t *offsets;           /* v2: record offset, relative to the record region */
    uint8_t *out;
} job;

static float *worker_block(const job *j, unsigned worker)
{
    return j->scratch + (size_t)worker * (4096 + SGFP4_ENCODE_SCRATCH);
}

/* Gathers block b (zero padded) and its valid extent: the top-left rows x cols that lie
 * inside the tensor (64 x 64 except at the bottom and right edges). */
static float *load_block(const job *j, uint64_t b, unsigned worker, unsigned *rows,
                         unsigned *cols)
{
    float *block = worker_block(j, worker);
    const uint64_t by = b / j->tiles_x, bx = b % j->tiles_x;
    sgfp4_gather_block(j->src, j->rows, j->cols, j->stride, by, bx, block);
    *rows = (unsigned)(j->rows - by * 64 < 64 ? j->rows - by * 64 : 64);
    *cols = (unsigned)(j->cols - bx * 64 < 64 ? j->cols - bx * 64 : 64);
    return block;
}

static void v1_block(void *ctx, uint64_t b, unsigned worker)
{
    const job *j = ctx;
    unsigned rows, cols;
    float *block = load_block(j, b, worker, &rows, &cols);
    sgfp4_block_plan *plan = &j->plans[worker];
    sgfp4_plan_v1(block, rows, cols, &j->o, block + 4096, plan);
    sgfp4_write_v1_block(plan, block, b, j->blocks, block + 4096, j->out);
}

/* The plan of v1 block b alone (the calibrated sweep writes it later). */
static void v1_plan(void *ctx, uint64_t b, unsigned worker)
{
    const job *j = ctx;
    unsigned rows, cols;
    float *block = load_block(j, b, worker, &rows, &cols);
    sgfp4_plan_v1(block, rows, cols, &j->o, block + 4096, &j->plans[b]);
}

static void threshold_block(void *ctx, uint64_t b, unsigned worker)
{
    const job *j = ctx;
    unsigned rows, cols;
    float *block = load_block(j, b, worker, &rows, &cols);
    sgfp4_plan_threshold(block, rows, cols, &j->o, j->mean_square, block + 4096, &j->plans[b]);
}

static void analyze_block(void *ctx, uint64_t b, unsigned worker)
{
    const job *j = ctx;
    unsigned rows, cols;
    float *block = load_block(j, b, worker, &rows, &cols);
    const float *rw = NULL, *cw = NULL;
    if (j->row_weight) {
        const uint64_t by = b / j->tiles_x, bx = b % j->tiles_x;
        rw = j->row_weight + by * 64;
        cw = j->col_weight + bx * 64;
    }
    sgfp4_analyze_block(block, rows, cols, rw, cw, j->o.fit, SGFP4_PROFILE_V2, block + 4096,
                        j->params + b * SGFP4_NODES * 2);
}

static void write_block(void *ctx, uint64_t b, unsigned worker)
{
    const job *j = ctx;
    unsigned rows, cols;
    float *block = load_block(j, b, worker, &rows, &cols);
    sgfp4_write_record(&j->plans[b], block, block + 4096,
                       j->out + sgfp4_v2_table_bytes(j->blocks) + j->offsets[b]);
}

/* The working memory of the passes: per-worker scratch, the plans, the v2 record offsets and,
 * when the metric weights errors or a Hessian calibrates, the error weights (row weights,
 * then column weights, each padded to the 64-grid). SGFP4_ERR_NOMEM if any is missing. */
static sgfp4_status job_prepare(job *j, unsigned threads, const sgfp4_allocator *alloc)
{
    const sgfp4_encode_options *o = &j->o;
    j->scratch = sgfp4_alloc_with(alloc, (size_t)threads * (4096 + SGFP4_ENCODE_SCRATCH) *
                                             sizeof(float));
    /* v1 writes each block as it plans it, unless the sweep needs every plan first. */
    const size_t plan_count =
        o->profile == SGFP4_PROFILE_V1 && !o->hessian ? threads : (size_t)j->blocks;
    j->plans = sgfp4_alloc_with(alloc, plan_count * sizeof *j->plans);
    if (o->profile == SGFP4_PROFILE_V2)
        j->offsets = sgfp4_alloc_with(alloc, (size_t)j->blocks * sizeof *j->offsets);
    if (!j->scratch || !j->plans || (o->profile == SGFP4_PROFILE_V2 && !j->offsets))
        return SGFP4_ERR_NOMEM;
    if ((o->profile == SGFP4_PROFILE_V2 && o->policy == SGFP4_POLICY_RATE &&
         sgfp4_metric_is_weighted(o)) ||
        o->hessian) {
        const size_t tiles_y = (size_t)(j->blocks / j->tiles_x);
        float *weights = sgfp4_alloc_with(alloc, (tiles_y + (size_t)j->tiles_x) * 64 *
                                                     sizeof *weights);
        if (!weights)
            return SGFP4_ERR_NOMEM;
        j->row_weight = weights;
        j->col_weight = weights + tiles_y * 64;
        sgfp4_error_weights(j->src, j->rows, j->cols, j->stride, o, weights,
                            weights + tiles_y * 64);
    }
    return SGFP4_OK;
}

/* The planning pass: every block's plan (v2: by the rate or the threshold policy, then the
 * record offsets; v1 with a Hessian: the plans the sweep writes later) and the container's
 * size, *total. */
static sgfp4_status plan_pass(job *j, sgfp4_team *team, const sgfp4_allocator *alloc,
                              uint64_t *total, sgfp4_diag *diag)
{
    const sgfp4_encode_options *o = &j->o;
    const uint64_t blocks = j->blocks;
    if (o->profile == SGFP4_PROFILE_V1) {
        *total = blocks * SGFP4_V1_BLOCK_BYTES;
        if (o->hessian)
            sgfp4_team_run(team, blocks, v1_plan, j);
        return SGFP4_OK;
    }
    if (o->policy == SGFP4_POLICY_RATE) {
        j->params = sgfp4_alloc_with(alloc, (size_t)blocks * SGFP4_NODES * 2 *
                                                sizeof *j->params);
        if (!j->params)
            return SGFP4_ERR_NOMEM;
        if (!sgfp4_team_run(team, blocks, analyze_block, j))
            return SGFP4_ERR_CANCELLED;
        const sgfp4_status s = sgfp4_rate_control(j->params, blocks, j->rows * j->cols,
                                                  o->target_bpw, team, alloc, j->plans);
        if (s != SGFP4_OK)
            return s;
    } else if (!sgfp4_team_run(team, blocks, threshold_block, j)) {
        return SGFP4_ERR_CANCELLED;
    }
    uint64_t at = 0;
    for (uint64_t b = 0; b < blocks; b++) {
        j->offsets[b] = at;
        at += sgfp4_record_bytes(&j->plans[b]);
    }
    if (at > UINT32_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "the records take %llu bytes, more than a v2 offset addresses",
                          (unsigned long long)at);
    *total = sgfp4_v2_table_bytes(blocks) + at;
    return SGFP4_OK;
}

/* The writing pass into j->out: the v2 offset table, then every block (v1 or v2 records as
 * planned, or, with a Hessian, the calibrated sweep over bands of blocks, which plans v2 as it
 * goes). *sweep_scratch is the sweep's working memory, for the caller to free. */
static sgfp4_status write_pass(job *j, sgfp4_team *team, unsigned threads,
                               const sgfp4_allocator *alloc, float **sweep_scratch)
{
    const sgfp4_encode_options *o = &j->o;
    if (o->profile == SGFP4_PROFILE_V2)
        sgfp4_write_v2_table(j->blocks, j->offsets, j->out);
    bool ran;
    if (o->hessian) {
        *sweep_scratch = sgfp4_alloc_with(alloc, (size_t)threads *
                                                     sgfp4_sweep_scratch(j->cols) *
                                                     sizeof(float));
        if (!*sweep_scratch)
            return SGFP4_ERR_NOMEM;
        sgfp4_sweep sweep = {j->src, j->rows, j->cols, j->tiles_x, j->blocks, j->stride,
                             o->hessian, j->row_weight, j->col_weight, o->fit, o->profile,
                             j->plans, j->offsets, j->out, *sweep_scratch,
                             sgfp4_gemm_kernels_best()};
        ran = sgfp4_team_run(team, j->blocks / j->tiles_x, sgfp4_sweep_band, &sweep);
    } else {
        ran = sgfp4_team_run(team, j->blocks,
                             o->profile == SGFP4_PROFILE_V1 ? v1_block : write_block, j);
    }
    return ran ? SGFP4_OK : SGFP4_ERR_CANCELLED;
}

/* Self-check: what was written must pass the strict validation. */
static sgfp4_status written_check(const job *j, uint64_t total, sgfp4_diag *diag)
{
    sgfp4_tensor *check = NULL;
    sgfp4_open_options check_options;
    sgfp4_open_options_init(&check_options);
    check_options.allocator = j->o.allocator;
    check_options.limits.max_elements = j->rows * j->cols;
    check_options.limits.max_container_bytes = total;
    if (sgfp4_tensor_open(j->out, (size_t)total, j->o.profile, j->rows, j->cols, &check,
                          &check_options, NULL) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1,
                          "the encoded container fails its strict validation (a bug)");
    sgfp4_tensor_close(check);
    return SGFP4_OK;
}

/* Where the container goes: dst (capacity cap) or, when allocate is set, a buffer of the
 * exact size allocated with malloc (so that sgfp4_free() releases it) into *allocated. */
static sgfp4_status output_place(uint8_t *dst, size_t cap, bool allocate, uint64_t total,
                                 uint8_t **out, uint8_t **allocated, sgfp4_diag *diag)
{
    if (total > SIZE_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "the container takes %llu bytes, more than this address space",
                          (unsigned long long)total);
    if (allocate) {
        *out = *allocated = malloc((size_t)total);
        return *out ? SGFP4_OK : SGFP4_ERR_NOMEM;
    }
    if (!dst)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL dst");
    if (cap < total)
        return sgfp4_fail(diag, SGFP4_ERR_DST_TOO_SMALL, -1, -1, -1,
                          "dst_capacity %zu: the container takes %llu bytes", cap,
                          (unsigned long long)total);
    *out = dst;
    return SGFP4_OK;
}

/* Encodes into dst (capacity cap), or, when out_alloc is set, into a buffer of the exact
 * size allocated with malloc (so that sgfp4_free() releases it). Working memory comes from
 * the options' allocator. */
static sgfp4_status encode_in_scope(const float *src, uint64_t rows, uint64_t cols,
                                    size_t src_stride, const sgfp4_encode_options *options,
                                    uint8_t *dst, size_t cap, size_t *written, void **out_alloc,
                                    sgfp4_diag *diag)
{
    sgfp4_encode_options o;
    uint64_t blocks = 0; /* set by sgfp4_encode_arguments_check() */
    sgfp4_diag_clear(diag);
    /* On a struct_size it does not know, no field of the struct can be trusted: the report
     * stays untouched. */
    if (SGFP4_OPTIONS_READ(sgfp4_encode_options, options, &o) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is no layout of sgfp4_encode_options",
                          options->struct_size);
    if (o.report && !SGFP4_RESULT_KNOWN(sgfp4_encode_report, o.report))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options.report: struct_size %zu is no layout of sgfp4_encode_report "
                          "(initialise it with sgfp4_encode_report_init)",
                          o.report->struct_size);
    if (o.report)
        sgfp4_result_clear(o.report);
    if (written)
        *written = 0;
    sgfp4_status status =
        sgfp4_encode_arguments_check(src, rows, cols, &src_stride, written, &o, &blocks, diag);
    if (status != SGFP4_OK)
        return status;

    const unsigned threads = sgfp4_threads_resolve(o.threads);
    const int threshold = o.profile == SGFP4_PROFILE_V2 && o.policy == SGFP4_POLICY_THRESHOLD;
    job j = {src, rows, cols, (cols + 63) / 64, blocks, src_stride, o,
             threshold ? sgfp4_encode_mean_square(src, rows, cols, src_stride) : 0,
             NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    uint8_t *allocated = NULL;
    float *sweep_scratch = NULL;
    const sgfp4_allocator *alloc = &o.allocator; /* working memory */
    uint64_t total = 0;
    /* The workers, for the whole call (those that cannot be started leave the calling thread
     * to do more: the same bytes), and the cancel hook, asked once now. */
    sgfp4_team *team = sgfp4_team_create(blocks < threads ? (unsigned)blocks : threads, alloc,
                                         o.cancel, o.cancel_user);
    if (!team)
        status = SGFP4_ERR_NOMEM;
    else if (sgfp4_team_cancelled(team))
        status = SGFP4_ERR_CANCELLED;
    if (status == SGFP4_OK)
        status = job_prepare(&j, threads, alloc);
    if (status == SGFP4_OK)
        status = plan_pass(&j, team, alloc, &total, diag);
    if (status == SGFP4_OK)
        status = output_place(dst, cap, out_alloc != NULL, total, &j.out, &allocated, diag);
    if (status == SGFP4_OK)
        status = write_pass(&j, team, threads, alloc, &sweep_scratch);
    if (status == SGFP4_OK)
        status = written_check(&j, total, diag);
    if (status == SGFP4_OK) {
        *written = (size_t)total;
        if (out_alloc) {
            *out_alloc = allocated;
            allocated = NULL;
        }
    }
    if (status == SGFP4_ERR_NOMEM)
        sgfp4_fail(diag, status, -1, -1, -1, "out of memory for the encoder's working memory");
    sgfp4_team_free(team);
    free(allocated);
    sgfp4_free_with(alloc, j.scratch);
    sgfp4_free_with(alloc, j.plans);
    sgfp4_free_with(alloc, j.params);
    sgfp4_free_with(alloc, j.offsets);
    sgfp4_free_with(alloc, (void *)j.row_weight);
    sgfp4_free_with(alloc, sweep_scratch);
    return status;
}

/* The analysis of sgfp4_encode_rate_curve() (v2, rate policy), then the curve. */
static sgfp4_status curve_in_scope(const float *src, uint64_t rows, uint64_t cols,
                                   size_t src_stride, const sgfp4_encode_options *options,
                                   double *lambda, uint64_t *bytes, double *error)
{
    sgfp4_encode_options o;
    uint64_t blocks;
    char problem[160];
    if (SGFP4_OPTIONS_READ(sgfp4_encode_options, options, &o) != SGFP4_OK || !src ||
        sgfp4_encode_options_problem(&o, problem, sizeof problem) ||
        o.profile == SGFP4_PROFILE_V1 || o.policy != SGFP4_POLICY_RATE)
        return SGFP4_ERR_ARGUMENT;
    if (!sgfp4_encode_shape_ok(rows, cols, &blocks))
        return SGFP4_ERR_SHAPE;
    if (src_stride == 0)
        src_stride = (size_t)cols;
    uint64_t clipped;
    float max_abs;
    if (src_stride < cols ||
        !sgfp4_encode_inputs_scan(src, rows, cols, src_stride, &clipped, &max_abs) ||
        !sgfp4_importance_ok(o.column_importance, cols) ||
        !sgfp4_importance_ok(o.row_importance, rows) || (o.hessian && o.hessian->dim != cols))
        return SGFP4_ERR_ARGUMENT;
    const unsigned threads = sgfp4_threads_resolve(o.threads);
    const sgfp4_allocator *alloc = &o.allocator;
    job j = {src, rows, cols, (cols + 63) / 64, blocks, src_stride, o, 0,
             NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    sgfp4_team *team = sgfp4_team_create(blocks < threads ? (unsigned)blocks : threads, alloc,
                                         o.cancel, o.cancel_user);
    sgfp4_status status = SGFP4_ERR_NOMEM;
    const size_t tiles_y = (size_t)(blocks / j.tiles_x);
    float *weights = NULL;
    if (!team)
        goto done;
    j.scratch = sgfp4_alloc_with(alloc, (size_t)threads * (4096 + SGFP4_ENCODE_SCRATCH) *
                                            sizeof(float));
    j.params = sgfp4_alloc_with(alloc, (size_t)blocks * SGFP4_NODES * 2 * sizeof *j.params);
    if (!j.scratch || !j.params)
        goto done;
    if (sgfp4_metric_is_weighted(&o)) {
        weights = sgfp4_alloc_with(alloc, (tiles_y + (size_t)j.tiles_x) * 64 * sizeof *weights);
        if (!weights)
            goto done;
        j.row_weight = weights;
        j.col_weight = weights + tiles_y * 64;
        sgfp4_error_weights(src, rows, cols, src_stride, &o, weights, weights + tiles_y * 64);
    }
    if (!sgfp4_team_run(team, blocks, analyze_block, &j))
        status = SGFP4_ERR_CANCELLED;
    else if (sgfp4_rate_curve(j.params, blocks, team, alloc, lambda, bytes, error))
        status = SGFP4_OK;
    else if (sgfp4_team_cancelled(team))
        status = SGFP4_ERR_CANCELLED;
done:
    sgfp4_team_free(team);
    sgfp4_free_with(alloc, j.scratch);
    sgfp4_free_with(alloc, j.params);
    sgfp4_free_with(alloc, weights);
    return status;
}

sgfp4_status sgfp4_encode_rate_curve(const float *src, uint64_t rows, uint64_t cols,
                                     size_t src_stride, const sgfp4_encode_options *options,
                                     double *lambda, uint64_t *bytes, double *error)
{
    if (!lambda || !bytes || !error)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_fp_scope scope;
    sgfp4_fp_scope_enter(&scope);
    const sgfp4_status s =
        curve_in_scope(src, rows, cols, src_stride, options, lambda, bytes, error);
    sgfp4_fp_scope_leave(&scope);
    return s;
}

/* encode_in_scope() in the default floating-point environment (common/fp_env.h): the
 * caller's rounding or flush-to-zero modes must not change the bytes (D7). */
static sgfp4_status encode(const float *src, uint64_t rows, uint64_t cols, size_t src_stride,
                           const sgfp4_encode_options *options, uint8_t *dst, size_t cap,
                           size_t *written, void **out_alloc, sgfp4_diag *diag)
{
    sgfp4_fp_scope scope;
    sgfp4_fp_scope_enter(&scope);
    const sgfp4_status s = encode_in_scope(src, rows, cols, src_stride, options, dst, cap,
                                           written, out_alloc, diag);
    sgfp4_fp_scope_leave(&scope);
    return s;
}

sgfp4_status sgfp4_encode(const float *src, uint64_t rows, uint64_t cols, size_t src_stride,
                          void *dst, size_t dst_capacity, size_t *written,
                          const sgfp4_encode_options *options, sgfp4_diag *diag)
{
    return encode(src, rows, cols, src_stride, options, dst, dst_capacity, written, NULL,
                  diag);
}

sgfp4_status sgfp4_encode_alloc(const float *src, uint64_t rows, uint64_t cols,
                                size_t src_stride, void **out, size_t *out_size,
                                const sgfp4_encode_options *options, sgfp4_diag *diag)
{
    if (!out) {
        sgfp4_diag_clear(diag);
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL out");
    }
    *out = NULL;
    return encode(src, rows, cols, src_stride, options, NULL, 0, out_size, out, diag);
}
