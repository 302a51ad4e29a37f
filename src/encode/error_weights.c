/* The error weights of the metrics (docs/encoder.md, "Error metrics"): the error of weight
 * (r, c) counts with row_weight[r] * col_weight[c] in rate control and the leaf fits.
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "encode/block_plan.h"
#include "encode/error_weights.h"
#include "encode/hessian.h"

int sgfp4_metric_is_weighted(const sgfp4_encode_options *o)
{
    return o->metric != SGFP4_METRIC_SSE || o->column_importance != NULL ||
           o->row_importance != NULL || o->hessian != NULL;
}

int sgfp4_importance_ok(const float *importance, uint64_t count)
{
    if (!importance)
        return 1;
    double sum = 0;
    for (uint64_t i = 0; i < count; i++) {
        if (!isfinite(importance[i]) || importance[i] < 0)
            return 0;
        sum += importance[i];
    }
    return sum > 0 && isfinite(sum);
}

/* Scales v[0..n) to mean 1 and raises every value to at least `floor` (so that no leaf has
 * all its weights at 0, where a fit has nothing to go by). */
static void normalize(float *v, uint64_t n, double floor)
{
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += v[i];
    const double scale = sum > 0 ? (double)n / sum : 1.0;
    for (uint64_t i = 0; i < n; i++) {
        const double x = v[i] * scale;
        v[i] = (float)(x > floor ? x : floor);
    }
}

void sgfp4_error_weights(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                         const sgfp4_encode_options *o, float *row_weight, float *col_weight)
{
    const uint64_t padded_rows = (rows + 63) / 64 * 64, padded_cols = (cols + 63) / 64 * 64;
    for (uint64_t r = 0; r < padded_rows; r++)
        row_weight[r] = r < rows ? 1.0f : 0.0f;
    /* A Hessian's diagonal is E[x_c^2], the column importance it implies. */
    const float *columns = o->column_importance ? o->column_importance
                           : o->hessian         ? o->hessian->diagonal
                                                : NULL;
    for (uint64_t c = 0; c < padded_cols; c++)
        col_weight[c] = c < cols ? (columns ? columns[c] : 1.0f) : 0.0f;
    if (o->metric == SGFP4_METRIC_ROW_RELATIVE) {
        double smallest = 0;
        for (uint64_t r = 0; r < rows; r++) {
            double norm = 0;
            for (uint64_t c = 0; c < cols; c++) {
                const double v = fmin(fabs(src[r * stride + c]), SGFP4_HALF_MAX);
                norm += v * v;
            }
            row_weight[r] = norm > 0 ? (float)(1.0 / norm) : 0.0f;
            if (norm > 0 && (smallest == 0 || norm < smallest))
                smallest = norm;
        }
        /* A row of zeros takes the weight of the smallest non-zero row. */
        for (uint64_t r = 0; r < rows; r++)
            if (row_weight[r] == 0.0f)
                row_weight[r] = smallest > 0 ? (float)(1.0 / smallest) : 1.0f;
    }
    /* A calibrated encode (with a Hessian) weights rows by the square root of their
     * importance: row factors measured on a few thousand calibration tokens spread over
     * decades for rarely used outputs (a token embedding's rows), and their full weight
     * leaves such rows almost unconstrained, which costs more than it saves (docs/encoder.md,
     * "Calibrated encoding"). */
    if (o->row_importance)
        for (uint64_t r = 0; r < rows; r++)
            row_weight[r] *= o->hessian ? sqrtf(o->row_importance[r]) : o->row_importance[r];
    normalize(row_weight, rows, 1e-6);
    normalize(col_weight, cols, 1e-4);
}
