/* Fitting one leaf's scale and bias in a mode (fit_als.c, fit_fp4.c, fit_t158.c,
 * fit_finalize.c; docs/encoder.md, "Leaf fitting").
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_LEAF_FIT_H
#define SGFP4_ENCODE_LEAF_FIT_H

#include "encode/block_plan.h"
#include "sgfp4.h"

typedef struct sgfp4_leaf_stats {
    float mean;          /* mean of w */
    float min, max;      /* of the centred values c = w - mean */
    double sum, sum_sq;  /* sum of c and of c^2 */
    double abs_sum;      /* sum of |c| */
    double weight;       /* sum of the error weights (n when unweighted) */
} sgfp4_leaf_stats;
/* Error weights: a leaf's fits minimize sum h_i (w_i - decoded_i)^2, h the per-weight error
 * weights of the metric (docs/encoder.md, "Error metrics"), or h = NULL: every h_i = 1 (plain
 * squared error). With weights, the sums of sgfp4_leaf_stats are weighted (sum = sum h c,
 * sum_sq = sum h c^2, abs_sum = sum h |c|) and the mean is the weighted mean. */
/* Centres w (n >= 1 weights) into c and fills the statistics. The fits work on c, so
 * their sums do not cancel when a leaf's values sit far from zero. */
void sgfp4_leaf_center(const float *w, const float *h, unsigned n, float *c,
                       sgfp4_leaf_stats *st);
/* Fits a leaf of n weights (w, and c and st from sgfp4_leaf_center) in one mode and returns
 * the stored parameters with the exact (weighted) squared error of the decoded leaf. */
void sgfp4_fit_fp4(const float *w, const float *c, const float *h, const sgfp4_leaf_stats *st,
                   unsigned n, sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out);
void sgfp4_fit_t158(const float *w, const float *c, const float *h, const sgfp4_leaf_stats *st,
                    unsigned n, sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out);
/* The searches of those fits alone: the fitted (scale, bias) before rounding to the stored
 * values (bias in w's coordinates, not centred). */
void sgfp4_search_fp4(const float *c, const float *h, const sgfp4_leaf_stats *st, unsigned n,
                      sgfp4_fit fit, float *scale, float *bias);
void sgfp4_search_t158(const float *c, const float *h, const sgfp4_leaf_stats *st, unsigned n,
                       sgfp4_fit fit, float *scale, float *bias);
/* Rounds a fitted (scale, bias) to the stored fp16 values; the codes are those nearest
 * under the stored values. `refine`: refit the bias to the codes after rounding S, and keep
 * the better of the two stored bias neighbours. Fills out. */
void sgfp4_fit_finalize(const float *w, const float *h, unsigned n, unsigned mode, float scale,
                        float bias, int refine, sgfp4_profile profile, sgfp4_leaf_params *out);

#endif
