/* Shared steps of the leaf fits: leaf statistics and one alternating-least-squares round
 * (codes for a given S, B; then the S, B that minimize the error for those codes).
 * The fits work on centred values c = w - mean, so sums do not cancel when a leaf's values
 * sit far from zero.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_FIT_ALS_H
#define SGFP4_ENCODE_FIT_ALS_H

typedef struct sgfp4_leaf_stats {
    float mean;          /* mean of w */
    float min, max;      /* of the centred values */
    double sum, sum_sq;  /* sum of c and of c^2 */
    double abs_sum;      /* sum of |c| */
} sgfp4_leaf_stats;

/* Centres w into c and fills the statistics. */
void sgfp4_leaf_center(const float *w, unsigned n, float *c, sgfp4_leaf_stats *st);

/* An affine fit of centred values: c ~ S q + B, with its squared error. */
typedef struct sgfp4_affine {
    float scale, bias;
    double sse;
} sgfp4_affine;

/* Squared error of c against S q + B when every q is the nearest code in [lo, hi]. Also the
 * least-squares refit for those codes in *refit (its sse field is that refit's error). */
void sgfp4_als_round(const float *c, unsigned n, const sgfp4_leaf_stats *st, float lo,
                     float hi, sgfp4_affine *fit, sgfp4_affine *refit);

/* Runs `rounds` ALS rounds from *fit, keeping the best fit seen (fit->sse is set). */
void sgfp4_als(const float *c, unsigned n, const sgfp4_leaf_stats *st, float lo, float hi,
               unsigned rounds, sgfp4_affine *fit);

#endif
