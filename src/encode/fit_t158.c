/* T158_AFFINE leaf fitting: w ~ S t + Bias, t in {-1, 0, +1} (spec §22.6.2); a weight's code
 * is its nearest level, i.e. the threshold is tau = S / 2.
 * Reference (spec §22.7): bias = mean, S = mean absolute deviation of the centred values.
 * Best: starts at S = 1.22 sigma (the Lloyd-Max ternary level of a Gaussian) and, below
 * 32x32 weights, at 1.6 and 0.9 times the mean absolute deviation, each refined by
 * alternating least squares, which moves the scale, the bias and so the threshold.
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "encode/block_plan.h"
#include "encode/fit_als.h"
#include "encode/leaf_fit.h"

static void fit_best(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
                     int fast, sgfp4_affine *best)
{
    const float sigma = (float)sqrt(st->sum_sq / st->weight);
    const float mad = (float)(st->abs_sum / st->weight);
    const float starts[] = {1.22f * sigma, 1.6f * mad, 0.9f * mad};
    best->sse = -1;
    /* Leaves of 32x32 weights or more: the Gaussian start alone (the others never won
     * anything there on the benchmark weights). */
    const unsigned count = n >= SGFP4_LARGE_LEAF || fast ? 1 : sizeof starts / sizeof starts[0];
    for (unsigned k = 0; k < count; k++) {
        sgfp4_affine cand = {starts[k], 0, 0};
        sgfp4_als(c, h, n, st, -1.0f, 1.0f, fast ? SGFP4_FAST_ROUNDS : 4, &cand);
        if (best->sse < 0 || cand.sse < best->sse)
            *best = cand;
    }
}

void sgfp4_search_t158(const float *c, const float *h, const sgfp4_leaf_stats *st, unsigned n,
                       sgfp4_fit fit, float *scale, float *bias)
{
    sgfp4_affine a = {0, 0, 0};
    if (st->max > st->min) {
        if (fit == SGFP4_FIT_REFERENCE)
            a.scale = (float)(st->abs_sum / st->weight);
        else
            fit_best(c, h, n, st, fit == SGFP4_FIT_FAST, &a);
    }
    *scale = a.scale;
    *bias = a.bias + st->mean;
}

void sgfp4_fit_t158(const float *w, const float *c, const float *h, const sgfp4_leaf_stats *st,
                    unsigned n, sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out)
{
    float scale, bias;
    sgfp4_search_t158(c, h, st, n, fit, &scale, &bias);
    sgfp4_fit_finalize(w, h, n, SGFP4_MODE_T158, scale, bias, fit != SGFP4_FIT_REFERENCE,
                       profile, out);
}
