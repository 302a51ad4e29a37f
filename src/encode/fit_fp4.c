/* FP4_AFFINE leaf fitting: w ~ S q + Bias, q in [-8, 7] (spec §22.6.1).
 * Reference (spec §22.7): bias = mean, S0 = max|w - mean| / 7, 16 scales log-spaced over
 * [0.5, 1.5] S0, keep the lowest L2 error.
 * Best: up to four starts (the min-max grid; symmetric grids shrunk to 0.9 and 0.8 of the
 * absolute maximum to clip outliers; for heavy tails a step of 0.335 sigma), the latter
 * three with the bias at the mean or half a step off it (the codes span [-8, 7]), each
 * refined by up to ALS_ROUNDS rounds of alternating least squares; then the best is rounded
 * to the stored values (fit_finalize.c).
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "encode/block_plan.h"
#include "encode/fit_als.h"
#include "encode/leaf_fit.h"

/* 0.5 * 3^(k/15), k = 0..15: 16 log-spaced factors over [0.5, 1.5] (a table, so that no
 * libm function enters the output). */
static const float reference_factor[16] = {
    0.5f,         0.537994812f, 0.578876836f, 0.62286547f,  0.670196783f, 0.721124785f,
    0.775922787f, 0.834884868f, 0.898327456f, 0.966591022f, 1.04004191f,  1.11907431f,
    1.20411234f,  1.29561239f,  1.39406549f,  1.5f};

static void fit_reference(const float *c, const float *h, unsigned n,
                          const sgfp4_leaf_stats *st, sgfp4_affine *best)
{
    const float absmax = fmaxf(-st->min, st->max);
    const float s0 = absmax / 7.0f;
    best->scale = s0;
    best->bias = 0;
    best->sse = -1;
    for (unsigned k = 0; k < 16; k++) {
        sgfp4_affine cand = {s0 * reference_factor[k], 0.0f, 0}, unused;
        sgfp4_als_round(c, h, n, st, -8.0f, 7.0f, &cand, &unused);
        if (best->sse < 0 || cand.sse < best->sse)
            *best = cand;
    }
}

/* ALS rounds per start (over-relaxed, fit_als.h). */
#define ALS_ROUNDS 7
#define ALS_ROUNDS_4X4 4

/* 4x4 leaves are many (256 per block), each call costs more per weight, and few of them
 * are kept: they get fewer rounds and starts. */
static unsigned als_rounds(unsigned n) { return n <= 16 ? ALS_ROUNDS_4X4 : ALS_ROUNDS; }

/* Runs ALS from scale S with the bias at the mean or half a step above it, whichever fits
 * better at the start: the error is periodic in the bias with period S, so ALS cannot move
 * from one to the other, and leaves with many weights near the mean want a level there. */
static void fit_from(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
                     float scale, unsigned rounds, sgfp4_affine *best)
{
    sgfp4_affine at_mean = {scale, 0.0f, 0}, half_up = {scale, 0.5f * scale, 0}, unused;
    sgfp4_als_round(c, h, n, st, -8.0f, 7.0f, &at_mean, &unused);
    sgfp4_als_round(c, h, n, st, -8.0f, 7.0f, &half_up, &unused);
    sgfp4_affine cand = at_mean.sse < half_up.sse ? at_mean : half_up;
    sgfp4_als(c, h, n, st, -8.0f, 7.0f, rounds, &cand);
    if (best->sse < 0 || cand.sse < best->sse)
        *best = cand;
}

static void fit_best(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
                     int fast, sgfp4_affine *best)
{
    static const float shrink[] = {0.9f, 0.8f};
    const float absmax = fmaxf(-st->min, st->max);
    /* The min-max grid: min maps to -8, max to 7. */
    sgfp4_affine cand = {(st->max - st->min) / 15.0f, 0, 0};
    cand.bias = st->min + 8.0f * cand.scale;
    const unsigned rounds = fast ? SGFP4_FAST_ROUNDS : als_rounds(n);
    sgfp4_als(c, h, n, st, -8.0f, 7.0f, rounds, &cand);
    *best = cand;
    /* Symmetric grids shrunk to clip outliers: 0.9 and 0.8; only 0.9 for 4x4 leaves (see
     * als_rounds), only 0.8 for leaves of 32x32 weights or more (where 0.9 never won
     * anything on the benchmark weights). */
    const unsigned first = n >= SGFP4_LARGE_LEAF && !fast ? 1 : 0;
    const unsigned starts = n <= 16 || fast ? 1 : sizeof shrink / sizeof shrink[0];
    for (unsigned k = first; k < starts; k++)
        fit_from(c, h, n, st, shrink[k] * absmax / 7.5f, rounds, best);
    if (fast)
        return;
    /* Heavy-tailed leaves have their optimum far below the absolute maximum (clipping
     * several large values): also start from the step of the optimal 16-level uniform
     * quantizer of a Gaussian of the leaf's deviation, 0.335 sigma. */
    const float sigma = (float)sqrt(st->sum_sq / st->weight);
    if (n > 16 && 0.335f * sigma < 0.8f * absmax / 7.5f)
        fit_from(c, h, n, st, 0.335f * sigma, rounds, best);
}

void sgfp4_search_fp4(const float *c, const float *h, const sgfp4_leaf_stats *st, unsigned n,
                      sgfp4_fit fit, float *scale, float *bias)
{
    sgfp4_affine a = {0, 0, 0};
    if (st->max > st->min) {
        if (fit == SGFP4_FIT_REFERENCE)
            fit_reference(c, h, n, st, &a);
        else
            fit_best(c, h, n, st, fit == SGFP4_FIT_FAST, &a);
    }
    *scale = a.scale;
    *bias = a.bias + st->mean;
}

void sgfp4_fit_fp4(const float *w, const float *c, const float *h, const sgfp4_leaf_stats *st,
                   unsigned n, sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out)
{
    float scale, bias;
    sgfp4_search_fp4(c, h, st, n, fit, &scale, &bias);
    sgfp4_fit_finalize(w, h, n, SGFP4_MODE_FP4, scale, bias, fit != SGFP4_FIT_REFERENCE,
                       profile, out);
}
