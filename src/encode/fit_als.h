/* One alternating-least-squares round of the leaf fits (codes for a given S, B; then the S,
 * B that minimize the squared error for those codes), on centred values.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_FIT_ALS_H
#define SGFP4_ENCODE_FIT_ALS_H

#include "encode/leaf_fit.h"

/* An affine fit of centred values: c ~ S q + B, with its squared error. */
typedef struct sgfp4_affine {
    float scale, bias;
    double sse;
} sgfp4_affine;

/* h: error weights or NULL (leaf_fit.h). Sets fit->sse to the squared error of c against S q + B when every q is the nearest code
 * in [lo, hi], and *refit to the least-squares (S, B) for those codes (its sse: the error
 * with those codes, an upper bound of its error with nearest codes). */
void sgfp4_als_round(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
                     float lo, float hi, sgfp4_affine *fit, sgfp4_affine *refit);

/* Runs up to `rounds` ALS rounds from *fit and leaves the best fit seen in *fit. From the
 * second round on, each step is over-relaxed: the next (S, B) is the refit plus
 * (SGFP4_ALS_OVERRELAX - 1) times the step that led to it (S' + (S' - S) for 2), which
 * reaches better fits in fewer rounds; every point is still scored exactly. */
#define SGFP4_ALS_OVERRELAX 2.0f

/* Leaves of at least this many weights (32x32) search from fewer starts (fit_fp4.c,
 * fit_t158.c). */
#define SGFP4_LARGE_LEAF 1024u

/* SGFP4_FIT_FAST: ALS rounds per start (from the min-max and the 0.9 grids for FP4, the
 * Gaussian start for T158). */
#define SGFP4_FAST_ROUNDS 3u
void sgfp4_als(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
               float lo, float hi, unsigned rounds, sgfp4_affine *fit);

#endif
