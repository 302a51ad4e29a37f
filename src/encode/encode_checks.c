/* The checks of an encode call before any work: the shape, the options, the input values
 * (finite, how many lie beyond the fp16 range) and the threshold policy's scale. Every
 * failure names what is wrong (and, for a non-finite input, its row, column and byte offset)
 * in the diag.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/diag.h"
#include "common/options.h"
#include "common/results.h"
#include "encode/block_plan.h"
#include "encode/encode_checks.h"
#include "encode/error_weights.h"
#include "encode/hessian.h"
#include "encode/simd.h"
#include "format/bits.h"

int sgfp4_encode_shape_ok(uint64_t rows, uint64_t cols, uint64_t *blocks)
{
    if (rows == 0 || cols == 0 || rows > (UINT64_C(1) << 40) || cols > (UINT64_C(1) << 40) ||
        rows > (UINT64_C(1) << 40) / cols) /* at most 2^40 weights */
        return 0;
    const uint64_t ty = (rows + 63) / 64, tx = (cols + 63) / 64;
    if (ty > UINT64_MAX / tx)
        return 0;
    *blocks = ty * tx;
    return *blocks <= UINT32_MAX;
}

/* NULL when the options are valid, else what is wrong, naming the field (into buf). */
const char *sgfp4_encode_options_problem(const sgfp4_encode_options *o, char *buf, size_t size)
{
    if (o->profile != SGFP4_PROFILE_AUTO && o->profile != SGFP4_PROFILE_V1 &&
        o->profile != SGFP4_PROFILE_V2)
        snprintf(buf, size, "profile %d is not AUTO, V1 or V2", (int)o->profile);
    else if (o->policy != SGFP4_POLICY_RATE && o->policy != SGFP4_POLICY_THRESHOLD)
        snprintf(buf, size, "policy %d is not RATE or THRESHOLD", (int)o->policy);
    else if (o->fit != SGFP4_FIT_BEST && o->fit != SGFP4_FIT_REFERENCE &&
             o->fit != SGFP4_FIT_FAST)
        snprintf(buf, size, "fit %d is not BEST, REFERENCE or FAST", (int)o->fit);
    else if (sgfp4_threads_resolve(o->threads) == 0)
        snprintf(buf, size, "threads %u is above %d", o->threads, SGFP4_MAX_THREADS);
    else if (!(o->delta >= 0 && o->delta <= 1e6))
        snprintf(buf, size, "delta %g is outside [0, 1e6]", o->delta);
    else if (!(o->threshold > 0 && o->threshold <= 1e12))
        snprintf(buf, size, "threshold %g is outside (0, 1e12]", o->threshold);
    else if (o->metric != SGFP4_METRIC_SSE && o->metric != SGFP4_METRIC_ROW_RELATIVE)
        snprintf(buf, size, "metric %d is not SSE or ROW_RELATIVE", (int)o->metric);
    /* target_bpw matters only to the v2 rate policy (v1 is fixed-rate). */
    else if (o->profile != SGFP4_PROFILE_V1 && o->policy == SGFP4_POLICY_RATE &&
             !(o->target_bpw > 0 && o->target_bpw <= 64))
        snprintf(buf, size, "target_bpw %g is outside (0, 64]", o->target_bpw);
    else
        return NULL;
    return buf;
}

/* Whether every input is finite, and how many values lie beyond the fp16 range (*clipped)
 * and the largest magnitude (*max_abs). x - x is 0 for a finite x and NaN for an infinity
 * or a NaN, so eight lanes of such sums are all 0 exactly when every value is finite; the
 * counts and maxima are per lane too (no branch in the loop). */
SGFP4_VECTOR_CLONES
int sgfp4_encode_inputs_scan(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                             uint64_t *clipped, float *max_abs)
{
    uint64_t over = 0;
    float top = 0;
    for (uint64_t r = 0; r < rows; r++) {
        const float *restrict row = src + r * stride;
        const uint64_t body = cols & ~(uint64_t)7;
        float acc[8] = {0}, big[8] = {0};
        uint64_t count[8] = {0};
        for (uint64_t c = 0; c < body; c += 8)
            SGFP4_LANE_LOOP
            for (unsigned j = 0; j < 8; j++) {
                const float v = row[c + j], m = fabsf(v);
                acc[j] += v - v;
                count[j] += m > SGFP4_HALF_MAX;
                big[j] = m > big[j] ? m : big[j];
            }
        for (uint64_t c = body; c < cols; c++) {
            const float v = row[c], m = fabsf(v);
            acc[0] += v - v;
            count[0] += m > SGFP4_HALF_MAX;
            big[0] = m > big[0] ? m : big[0];
        }
        for (unsigned j = 0; j < 8; j++) {
            if (acc[j] != 0.0f)
                return 0;
            over += count[j];
            top = big[j] > top ? big[j] : top;
        }
    }
    *clipped = over;
    *max_abs = top;
    return 1;
}

/* The first value of the input that is not finite, named in diag (row, column, byte
 * offset from src). */
static sgfp4_status nonfinite_input(const float *src, uint64_t rows, uint64_t cols,
                                    size_t stride, sgfp4_diag *diag)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++)
            if (!isfinite(src[r * stride + c])) {
                sgfp4_fail(diag, SGFP4_ERR_ARGUMENT,
                           (int64_t)((r * stride + c) * sizeof(float)), -1, -1,
                           "input row %llu, column %llu is %s (the encoder takes finite "
                           "values)", (unsigned long long)r, (unsigned long long)c,
                           isnan(src[r * stride + c]) ? "NaN" : "infinite");
                return sgfp4_fail_at_element(diag, SGFP4_ERR_ARGUMENT, r, c);
            }
    return SGFP4_ERR_ARGUMENT;
}

/* The mean of w^2 (clipped to the fp16 range): the threshold policy's scale. */
double sgfp4_encode_mean_square(const float *src, uint64_t rows, uint64_t cols, size_t stride)
{
    double sum = 0;
    for (uint64_t r = 0; r < rows; r++) {
        const float *row = src + r * stride;
        float acc = 0;
        for (uint64_t c = 0; c < cols; c++) {
            const float v = fminf(fabsf(row[c]), SGFP4_HALF_MAX);
            acc += v * v;
        }
        sum += acc;
    }
    return sum / ((double)rows * (double)cols);
}

/* The checks of an encode call's arguments and input, before any work: on success *o holds
 * the options (profile AUTO resolved), *blocks the number of 64x64 blocks, *stride the row
 * stride, and the report the input's clipped count and largest magnitude. */
sgfp4_status sgfp4_encode_arguments_check(const float *src, uint64_t rows, uint64_t cols,
                                          size_t *stride, const size_t *written,
                                          sgfp4_encode_options *o, uint64_t *blocks,
                                          sgfp4_diag *diag)
{
    char problem[160];
    if (!src || !written)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL %s",
                          !src ? "src" : "written");
    if (sgfp4_encode_options_problem(o, problem, sizeof problem))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "%s", problem);
    if (!sgfp4_encode_shape_ok(rows, cols, blocks))
        return sgfp4_fail(diag, SGFP4_ERR_SHAPE, -1, -1, -1,
                          "shape %llux%llu: rows and cols 1..2^40, at most 2^40 weights and "
                          "2^32 blocks of 64x64", (unsigned long long)rows,
                          (unsigned long long)cols);
    if (*stride == 0)
        *stride = (size_t)cols;
    if (*stride < cols)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "src_stride %zu is below cols %llu", *stride,
                          (unsigned long long)cols);
    if (o->profile == SGFP4_PROFILE_AUTO)
        o->profile = SGFP4_PROFILE_V2;
    if (o->profile == SGFP4_PROFILE_V1 && *blocks * SGFP4_V1_PAYLOAD > UINT32_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "%llu blocks: a v1 container addresses at most %llu",
                          (unsigned long long)*blocks,
                          (unsigned long long)(UINT32_MAX / SGFP4_V1_PAYLOAD));
    uint64_t clipped;
    float max_abs;
    if (!sgfp4_encode_inputs_scan(src, rows, cols, *stride, &clipped, &max_abs))
        return nonfinite_input(src, rows, cols, *stride, diag);
    if (o->report) {
        sgfp4_encode_report report;
        memset(&report, 0, sizeof report);
        report.clipped = clipped;
        report.max_abs = max_abs;
        sgfp4_result_store(o->report, &report); /* its struct_size was checked */
    }
    const bool columns_ok = sgfp4_importance_ok(o->column_importance, cols);
    if (!columns_ok || !sgfp4_importance_ok(o->row_importance, rows))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "%s_importance: not %llu finite values >= 0, not all 0",
                          columns_ok ? "row" : "column",
                          (unsigned long long)(columns_ok ? rows : cols));
    if (o->hessian && o->hessian->dim != cols)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "hessian: dimension %llu for %llu columns",
                          (unsigned long long)o->hessian->dim, (unsigned long long)cols);
    return SGFP4_OK;
}
