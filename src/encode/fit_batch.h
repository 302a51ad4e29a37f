/* Best (and fast) fitting of 16 leaves of one size at once (docs/encoder.md, "Leaf
 * fitting"): lane j of every array belongs to leaf j, so the loops run across leaves, with
 * no per-leaf reductions or calls. Each lane runs the algorithm of the per-leaf fits
 * (fit_fp4.c, fit_t158.c: the same starts, over-relaxed ALS with early stop, finalize; 5
 * rounds per start, 4 at 4x4) for its leaf, with sums taken in element order. A lane's result
 * depends only on its own leaf, never on the other leaves of its batch.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_FIT_BATCH_H
#define SGFP4_ENCODE_FIT_BATCH_H

#include "encode/block_plan.h"
#include "encode/leaf_fit.h"

#define SGFP4_LANES 16u

typedef struct sgfp4_batch {
    unsigned n;      /* element slots per leaf: size * size */
    /* [n * SGFP4_LANES], element k of lane j at k * SGFP4_LANES + j */
    float *w;        /* the weights (padding slots: 0) */
    float *c;        /* centred weights (filled by sgfp4_batch_center) */
    float *h;        /* error weights, 0 for padding slots; NULL: every slot valid, weight 1 */
    unsigned count[SGFP4_LANES]; /* valid weights of each leaf (>= 1) */
    sgfp4_leaf_stats st[SGFP4_LANES];
    /* st's sums again, lane by lane, for the vector loops */
    double sum[SGFP4_LANES], sum_sq[SGFP4_LANES], weight[SGFP4_LANES];
} sgfp4_batch;

/* Centres every lane and fills its statistics (as sgfp4_leaf_center). */
void sgfp4_batch_center(sgfp4_batch *b);

/* Best fit of every lane in one mode; out[j] as sgfp4_fit_fp4 / sgfp4_fit_t158 with
 * SGFP4_FIT_BEST would give for the v2 profile. */
void sgfp4_batch_fit(const sgfp4_batch *b, unsigned mode, sgfp4_fit fit,
                     sgfp4_leaf_params out[SGFP4_LANES]);

#endif
