/* FP4_AFFINE leaf fitting: w ~ S q + Bias, q in [-8, 7] (spec §22.6.1).
 * Reference (spec §22.7): bias = mean, S0 = max|w - mean| / 7, 16 scales log-spaced over
 * [0.5, 1.5] S0, keep the lowest L2 error.
 * Best: three starts (the min-max grid, and symmetric grids shrunk to 0.9 and 0.8 of the
 * absolute maximum to clip outliers, with the bias half a step off the mean because the codes
 * span [-8, 7]), each refined by up to ALS_ROUNDS rounds of alternating least squares; then
 * the best is rounded to the stored values (fit_finalize.c).
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "encode/fit_als.h"

/* 0.5 * 3^(k/15), k = 0..15: 16 log-spaced factors over [0.5, 1.5] (a table, so that no
 * libm function enters the output). */
static const float reference_factor[16] = {
    0.5f,         0.537994812f, 0.578876836f, 0.62286547f,  0.670196783f, 0.721124785f,
    0.775922787f, 0.834884868f, 0.898327456f, 0.966591022f, 1.04004191f,  1.11907431f,
    1.20411234f,  1.29561239f,  1.39406549f,  1.5f};

static void fit_reference(const float *c, unsigned n, const sgfp4_leaf_stats *st,
                          sgfp4_affine *best)
{
    const float absmax = fmaxf(-st->min, st->max);
    const float s0 = absmax / 7.0f;
    best->scale = s0;
    best->bias = 0;
    best->sse = -1;
    for (unsigned k = 0; k < 16; k++) {
        sgfp4_affine cand = {s0 * reference_factor[k], 0.0f, 0}, unused;
        sgfp4_als_round(c, n, st, -8.0f, 7.0f, &cand, &unused);
        if (best->sse < 0 || cand.sse < best->sse)
            *best = cand;
    }
}

/* ALS rounds per start: the fits keep improving for many rounds (each moves a few codes). */
#define ALS_ROUNDS 10

static void fit_best(const float *c, unsigned n, const sgfp4_leaf_stats *st, sgfp4_affine *best)
{
    static const float shrink[] = {0.9f, 0.8f};
    const float absmax = fmaxf(-st->min, st->max);
    best->sse = -1;
    /* The min-max grid: min maps to -8, max to 7. */
    sgfp4_affine cand = {(st->max - st->min) / 15.0f, 0, 0};
    cand.bias = st->min + 8.0f * cand.scale;
    sgfp4_als(c, n, st, -8.0f, 7.0f, ALS_ROUNDS, &cand);
    *best = cand;
    for (unsigned k = 0; k < sizeof shrink / sizeof shrink[0]; k++) {
        cand.scale = shrink[k] * absmax / 7.5f;
        cand.bias = 0.5f * cand.scale; /* levels -7.5 .. 7.5 steps around the mean */
        sgfp4_als(c, n, st, -8.0f, 7.0f, ALS_ROUNDS, &cand);
        if (cand.sse < best->sse)
            *best = cand;
    }
}

void sgfp4_fit_fp4(const float *w, const float *c, const sgfp4_leaf_stats *st, unsigned n,
                   sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out)
{
    sgfp4_affine a = {0, 0, 0};
    if (st->max > st->min) {
        if (fit == SGFP4_FIT_REFERENCE)
            fit_reference(c, n, st, &a);
        else
            fit_best(c, n, st, &a);
    }
    sgfp4_fit_finalize(w, n, SGFP4_MODE_FP4, a.scale, a.bias + st->mean,
                       fit != SGFP4_FIT_REFERENCE, profile, out);
}
