/* Best fitting of 16 leaves at once (fit_batch.h). The algorithm per lane is that of
 * fit_fp4.c / fit_t158.c / fit_finalize.c (starts, over-relaxed ALS rounds with early stop,
 * stored-value rounding); the loops run over the elements of all lanes together, each lane
 * summing its own elements in element order. Lanes whose start does not apply, or that
 * stopped early, run along without their results being used, so every lane ends where a
 * per-leaf loop over its leaf alone would. The error weights of a weighted metric (and 0 for the padding slots
 * of edge leaves) enter every sum; without them (h NULL) the products by 1 are left out,
 * which gives the same bits.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>

#include "encode/block_plan.h"
#include "encode/fit_als.h"
#include "encode/fit_batch.h"
#include "encode/leaf_fit.h"
#include "encode/quantize.h"
#include "encode/simd.h"

#define L SGFP4_LANES

/* The hot loops take the lanes eight at a time (G): one vector of eight accumulators per
 * sum, which the compiler keeps in registers. */
#define G 8u

typedef struct fits {
    float scale[L], bias[L];
    double sse[L];
} fits;

/* Centres eight lanes (stride L) around their means; their sums, minima and maxima. Inlined
 * into the (cloned) caller. */
static inline __attribute__((always_inline)) void center_group(const float *restrict w, const float *restrict h, size_t n,
                                const float *restrict mean, float *restrict c,
                                float *restrict s, float *restrict sq, float *restrict ab,
                                float *restrict mn, float *restrict mx)
{
    for (unsigned j = 0; j < G; j++) {
        s[j] = sq[j] = ab[j] = 0.0f;
        mn[j] = INFINITY;
        mx[j] = -INFINITY;
    }
    if (h) {
        for (size_t k = 0; k < n; k++)
            SGFP4_LANE_LOOP
            for (unsigned j = 0; j < G; j++) {
                const float hk = h[k * L + j];
                const float v = w[k * L + j] - mean[j], hv = hk * v;
                c[k * L + j] = v;
                s[j] += hv;
                sq[j] += hv * v;
                ab[j] += hv < 0 ? -hv : hv;
                mn[j] = hk > 0.0f && v < mn[j] ? v : mn[j];
                mx[j] = hk > 0.0f && v > mx[j] ? v : mx[j];
            }
    } else {
        for (size_t k = 0; k < n; k++)
            SGFP4_LANE_LOOP
            for (unsigned j = 0; j < G; j++) {
                const float v = w[k * L + j] - mean[j];
                c[k * L + j] = v;
                s[j] += v;
                sq[j] += v * v;
                ab[j] += v < 0 ? -v : v;
                mn[j] = v < mn[j] ? v : mn[j];
                mx[j] = v > mx[j] ? v : mx[j];
            }
    }
}

SGFP4_VECTOR_CLONES
void sgfp4_batch_center(sgfp4_batch *b)
{
    const size_t n = b->n;
    const float *restrict w = b->w;
    const float *restrict h = b->h;
    float *restrict c = b->c;
    for (unsigned g = 0; g < L; g += G) {
        float acc[G] = {0}, hs[G] = {0}, mean[G];
        if (h) {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    acc[j] += h[k * L + g + j] * w[k * L + g + j];
                    hs[j] += h[k * L + g + j];
                }
        } else {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++)
                    acc[j] += w[k * L + g + j];
        }
        for (unsigned j = 0; j < G; j++) {
            const double weight = h ? (double)hs[j] : (double)n;
            mean[j] = weight > 0 ? (float)((double)acc[j] / weight) : 0.0f;
            b->st[g + j].weight = weight > 0 ? weight : 1.0; /* an unused empty lane */
        }
        float s[G], sq[G], ab[G], mn[G], mx[G];
        center_group(w + g, h ? h + g : NULL, n, mean, c + g, s, sq, ab, mn, mx);
        for (unsigned j = 0; j < G; j++) {
            sgfp4_leaf_stats *st = &b->st[g + j];
            const int empty = !(mn[j] <= mx[j]); /* a lane without valid weights: unused */
            st->mean = mean[j];
            st->sum = s[j];
            st->sum_sq = sq[j];
            st->abs_sum = ab[j];
            st->min = empty ? 0.0f : mn[j];
            st->max = empty ? 0.0f : mx[j];
            b->sum[g + j] = st->sum;
            b->sum_sq[g + j] = st->sum_sq;
            b->weight[g + j] = st->weight;
        }
    }
}

/* Sums of (h) q, (h) q^2 and (h) q c per lane for the nearest codes of (scale, bias). */
SGFP4_VECTOR_CLONES
static void code_sums(const sgfp4_batch *b, const float *restrict bias,
                      const float *restrict inv, float lo, float hi, float *restrict out_q,
                      float *restrict out_qq, float *restrict out_qc)
{
    const size_t n = b->n;
    const float *restrict c = b->c;
    const float *restrict h = b->h;
    for (unsigned g = 0; g < L; g += G) {
        float aq[G] = {0}, aqq[G] = {0}, aqc[G] = {0}, bi[G], iv[G];
        for (unsigned j = 0; j < G; j++) {
            bi[j] = bias[g + j];
            iv[j] = inv[g + j];
        }
        if (h) {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    const float ck = c[k * L + g + j];
                    float x = (ck - bi[j]) * iv[j];
                    x = x < lo ? lo : x;
                    x = x > hi ? hi : x;
                    const float q = (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
                    const float hq = h[k * L + g + j] * q;
                    aq[j] += hq;
                    aqq[j] += hq * q;
                    aqc[j] += hq * ck;
                }
        } else {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    const float ck = c[k * L + g + j];
                    float x = (ck - bi[j]) * iv[j];
                    x = x < lo ? lo : x;
                    x = x > hi ? hi : x;
                    const float q = (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
                    aq[j] += q;
                    aqq[j] += q * q;
                    aqc[j] += q * ck;
                }
        }
        for (unsigned j = 0; j < G; j++) {
            out_q[g + j] = aq[j];
            out_qq[g + j] = aqq[j];
            out_qc[g + j] = aqc[j];
        }
    }
}

/* The closed-form part of an ALS round for every lane (sgfp4_als_round), branch-free so
 * that it runs on vectors of doubles. Every operation is evaluated for every lane and the
 * results selected; the compiler may do so only when told that no floating-point exception
 * is observed (SGFP4_NO_TRAPS), which changes no value. */
SGFP4_VECTOR_CLONES SGFP4_NO_TRAPS
static void als_solve(const sgfp4_batch *b, const float *restrict sq, const float *restrict sqq,
                      const float *restrict sqc, fits *restrict cur, fits *restrict refit)
{
    for (unsigned j = 0; j < L; j++) {
        const float positive = cur->scale[j] > 0.0f ? cur->scale[j] : 0.0f;
        const double s = positive, bb = cur->bias[j];
        const double nn = b->weight[j], q = sq[j], qq = sqq[j], qc = sqc[j];
        const double sum = b->sum[j], sum_sq = b->sum_sq[j];
        const double sse =
            sum_sq - 2 * s * qc - 2 * bb * sum + s * s * qq + 2 * s * bb * q + nn * bb * bb;
        const double det = nn * qq - q * q;
        const double rs = (nn * qc - q * sum) / (det > 0 ? det : 1.0);
        const double rb = (sum - rs * q) / nn;
        const int ok = (det > 0) & (rs > 0) & (rs < SGFP4_HALF_MAX);
        const double rsse =
            sum_sq - 2 * rs * qc - 2 * rb * sum + rs * rs * qq + 2 * rs * rb * q + nn * rb * rb;
        const float rs_float = (float)rs, rb_float = (float)rb; /* evaluated either way */
        cur->sse[j] = sse;
        refit->scale[j] = ok ? rs_float : cur->scale[j];
        refit->bias[j] = ok ? rb_float : cur->bias[j];
        refit->sse[j] = ok ? rsse : sse;
    }
}

/* One ALS round on every lane (sgfp4_als_round): cur->sse gets the error of cur with its
 * nearest codes, *refit the least-squares (S, B) for those codes. */
static void als_round(const sgfp4_batch *b, float lo, float hi, fits *cur, fits *refit)
{
    float inv[L], sq[L], sqq[L], sqc[L];
    for (unsigned j = 0; j < L; j++)
        inv[j] = cur->scale[j] > 0.0f ? 1.0f / cur->scale[j] : 0.0f;
    code_sums(b, cur->bias, inv, lo, hi, sq, sqq, sqc);
    als_solve(b, sq, sqq, sqc, cur, refit);
}

static void take(fits *dst, const fits *src, unsigned j)
{
    dst->scale[j] = src->scale[j];
    dst->bias[j] = src->bias[j];
    dst->sse[j] = src->sse[j];
}

/* The bookkeeping of one ALS round on every lane, branch-free (so it runs on vectors):
 * lanes still running keep the best of cur and next, stop when the refit no longer moves or
 * their rounds are used up, and otherwise step on, over-relaxed from the second round.
 * Returns whether any lane runs on. */
SGFP4_VECTOR_CLONES SGFP4_NO_TRAPS
static int als_step(unsigned r, const unsigned *restrict rounds, int *restrict stopped,
                    const float *restrict from_scale, const float *restrict from_bias,
                    fits *restrict cur, const fits *restrict next, fits *restrict best)
{
    int running = 0;
    for (unsigned j = 0; j < L; j++) {
        const int active = !stopped[j];
        const int take_cur = active & ((best->sse[j] < 0) | (cur->sse[j] < best->sse[j]));
        best->scale[j] = take_cur ? cur->scale[j] : best->scale[j];
        best->bias[j] = take_cur ? cur->bias[j] : best->bias[j];
        best->sse[j] = take_cur ? cur->sse[j] : best->sse[j];
        const int take_next = active & (next->sse[j] < best->sse[j]);
        best->scale[j] = take_next ? next->scale[j] : best->scale[j];
        best->bias[j] = take_next ? next->bias[j] : best->bias[j];
        best->sse[j] = take_next ? next->sse[j] : best->sse[j];
        const int still = (next->scale[j] != cur->scale[j]) | (next->bias[j] != cur->bias[j]);
        const int go_on = active & still & (r + 1 < rounds[j]);
        const float relax = r > 0 ? SGFP4_ALS_OVERRELAX - 1.0f : 0.0f;
        const float step_scale = next->scale[j] + relax * (next->scale[j] - from_scale[j]);
        const float step_bias = next->bias[j] + relax * (next->bias[j] - from_bias[j]);
        cur->scale[j] = go_on ? step_scale : cur->scale[j];
        cur->bias[j] = go_on ? step_bias : cur->bias[j];
        stopped[j] = !go_on;
        running |= go_on;
    }
    return running;
}

/* sgfp4_als on every lane: up to rounds[j] rounds from *fit, the best fit seen left in
 * *fit. A lane that stopped (converged or out of rounds) keeps its result. */
static void als(const sgfp4_batch *b, float lo, float hi, const unsigned *rounds, fits *fit)
{
    fits cur = *fit, best = *fit, next;
    unsigned most = 0;
    int stopped[L];
    for (unsigned j = 0; j < L; j++) {
        best.sse[j] = -1;
        stopped[j] = rounds[j] == 0;
        most = rounds[j] > most ? rounds[j] : most;
    }
    for (unsigned r = 0; r < most; r++) {
        float from_scale[L], from_bias[L];
        memcpy(from_scale, cur.scale, sizeof from_scale);
        memcpy(from_bias, cur.bias, sizeof from_bias);
        als_round(b, lo, hi, &cur, &next);
        if (!als_step(r, rounds, stopped, from_scale, from_bias, &cur, &next, &best))
            break;
    }
    for (unsigned j = 0; j < L; j++)
        if (rounds[j] > 0)
            take(fit, &best, j);
}

/* fit_from() of fit_fp4.c on the lanes where enabled[j]: ALS from the scale with the bias at
 * the mean or half a step above it (whichever fits better first); kept if better. */
static void fp4_from(const sgfp4_batch *b, const float *scale, const int *enabled,
                     const unsigned *rounds, fits *best)
{
    fits at_mean, half_up, unused, cand;
    unsigned lane_rounds[L];
    int any = 0;
    for (unsigned j = 0; j < L; j++) {
        at_mean.scale[j] = half_up.scale[j] = scale[j];
        at_mean.bias[j] = 0.0f;
        half_up.bias[j] = 0.5f * scale[j];
        lane_rounds[j] = enabled[j] ? rounds[j] : 0;
        any |= enabled[j];
    }
    if (!any)
        return;
    als_round(b, -8.0f, 7.0f, &at_mean, &unused);
    als_round(b, -8.0f, 7.0f, &half_up, &unused);
    for (unsigned j = 0; j < L; j++)
        take(&cand, at_mean.sse[j] < half_up.sse[j] ? &at_mean : &half_up, j);
    als(b, -8.0f, 7.0f, lane_rounds, &cand);
    for (unsigned j = 0; j < L; j++)
        if (enabled[j] && (best->sse[j] < 0 || cand.sse[j] < best->sse[j]))
            take(best, &cand, j);
}

/* ALS rounds per start for the small leaves of the batches: 5, and 4 for leaves of at most
 * 16 weights (the per-leaf fits of fit_fp4.c, for larger leaves, run 7). */
static unsigned fp4_rounds(unsigned count) { return count <= 16 ? 4u : 5u; }

static void fit_fp4(const sgfp4_batch *b, int fast, fits *best)
{
    unsigned rounds[L];
    float start[L];
    int enabled[L];
    for (unsigned j = 0; j < L; j++) {
        const sgfp4_leaf_stats *st = &b->st[j];
        rounds[j] = fast ? SGFP4_FAST_ROUNDS : fp4_rounds(b->count[j]);
        /* The min-max grid: min maps to -8, max to 7. */
        best->scale[j] = (st->max - st->min) / 15.0f;
        best->bias[j] = st->min + 8.0f * best->scale[j];
    }
    als(b, -8.0f, 7.0f, rounds, best);
    static const float shrink[] = {0.9f, 0.8f};
    for (unsigned k = 0; k < (fast ? 1u : 2u); k++) {
        for (unsigned j = 0; j < L; j++) {
            const sgfp4_leaf_stats *st = &b->st[j];
            start[j] = shrink[k] * fmaxf(-st->min, st->max) / 7.5f;
            enabled[j] = k == 0 || b->count[j] > 16;
        }
        fp4_from(b, start, enabled, rounds, best);
    }
    for (unsigned j = 0; j < L; j++) {
        const sgfp4_leaf_stats *st = &b->st[j];
        const float sigma = (float)sqrt(st->sum_sq / st->weight);
        start[j] = 0.335f * sigma;
        enabled[j] = !fast && b->count[j] > 16 &&
                     0.335f * sigma < 0.8f * fmaxf(-st->min, st->max) / 7.5f;
    }
    fp4_from(b, start, enabled, rounds, best);
}

static void fit_t158(const sgfp4_batch *b, int fast, fits *best)
{
    unsigned rounds[L];
    for (unsigned j = 0; j < L; j++) {
        best->sse[j] = -1;
        rounds[j] = fast ? SGFP4_FAST_ROUNDS : 4;
    }
    for (unsigned k = 0; k < (fast ? 1u : 3u); k++) {
        fits cand;
        for (unsigned j = 0; j < L; j++) {
            const sgfp4_leaf_stats *st = &b->st[j];
            const float sigma = (float)sqrt(st->sum_sq / st->weight);
            const float mad = (float)(st->abs_sum / st->weight);
            cand.scale[j] = k == 0 ? 1.22f * sigma : k == 1 ? 1.6f * mad : 0.9f * mad;
            cand.bias[j] = 0.0f;
        }
        als(b, -1.0f, 1.0f, rounds, &cand);
        for (unsigned j = 0; j < L; j++)
            if (best->sse[j] < 0 || cand.sse[j] < best->sse[j])
                take(best, &cand, j);
    }
}

/* The nearest code of one weight (quantize.c's code_of). */
static inline float code_of(float w, float bias, float inv, float lo, float hi)
{
    float x = (w - bias) * inv;
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    return (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
}

/* Per lane: the (h-weighted) mean of w - S q (sgfp4_bias_for_codes). */
SGFP4_VECTOR_CLONES
static void bias_for_codes(const sgfp4_batch *b, float lo, float hi, const float *restrict s,
                           const float *restrict inv, const float *restrict bias,
                           float *restrict out)
{
    const size_t n = b->n;
    const float *restrict w = b->w;
    const float *restrict h = b->h;
    for (unsigned g = 0; g < L; g += G) {
        float acc[G] = {0}, sg[G], ig[G], bg[G];
        for (unsigned j = 0; j < G; j++) {
            sg[j] = s[g + j];
            ig[j] = inv[g + j];
            bg[j] = bias[g + j];
        }
        if (h) {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    const float wk = w[k * L + g + j];
                    acc[j] += h[k * L + g + j] * (wk - sg[j] * code_of(wk, bg[j], ig[j], lo, hi));
                }
        } else {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    const float wk = w[k * L + g + j];
                    acc[j] += wk - sg[j] * code_of(wk, bg[j], ig[j], lo, hi);
                }
        }
        for (unsigned j = 0; j < G; j++) {
            const double weight = b->st[g + j].weight;
            out[g + j] = weight > 0 ? (float)((double)acc[j] / weight) : bias[g + j];
        }
    }
}

/* Per lane: the exact (h-weighted) squared error of the decoded leaf (sgfp4_sse_at). */
SGFP4_VECTOR_CLONES
static void sse_at(const sgfp4_batch *b, float lo, float hi, const float *restrict s,
                   const float *restrict inv, const float *restrict bias, double *restrict out)
{
    const size_t n = b->n;
    const float *restrict w = b->w;
    const float *restrict h = b->h;
    for (unsigned g = 0; g < L; g += G) {
        float acc[G] = {0}, sg[G], ig[G], bg[G];
        for (unsigned j = 0; j < G; j++) {
            sg[j] = s[g + j];
            ig[j] = inv[g + j];
            bg[j] = bias[g + j];
        }
        if (h) {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    const float wk = w[k * L + g + j];
                    const float product = sg[j] * code_of(wk, bg[j], ig[j], lo, hi);
                    const float e = wk - (product + bg[j]);
                    acc[j] += h[k * L + g + j] * e * e;
                }
        } else {
            for (size_t k = 0; k < n; k++)
                SGFP4_LANE_LOOP
                for (unsigned j = 0; j < G; j++) {
                    const float wk = w[k * L + g + j];
                    const float product = sg[j] * code_of(wk, bg[j], ig[j], lo, hi);
                    const float e = wk - (product + bg[j]);
                    acc[j] += e * e;
                }
        }
        for (unsigned j = 0; j < G; j++)
            out[g + j] = acc[j];
    }
}

static uint16_t scale_to_half(float scale)
{
    if (!(scale > 0.0f))
        return 0;
    if (scale > SGFP4_HALF_MAX)
        scale = SGFP4_HALF_MAX;
    return sgfp4_float_to_half(scale);
}

/* sgfp4_fit_finalize with refinement for the v2 profile, on every lane. */
static void finalize(const sgfp4_batch *b, unsigned mode, const fits *a,
                     sgfp4_leaf_params out[L])
{
    const float lo = mode ? -1.0f : -8.0f, hi = mode ? 1.0f : 7.0f;
    float s[L], inv[L], bias[L], refined[L], first[L], second[L];
    uint16_t first_bits[L], second_bits[L];
    for (unsigned j = 0; j < L; j++) {
        out[j].mode = (uint8_t)mode;
        out[j].scale = scale_to_half(a->scale[j]);
        s[j] = sgfp4_half_to_float(out[j].scale);
        inv[j] = s[j] > 0.0f ? 1.0f / s[j] : 0.0f;
        bias[j] = a->bias[j];
    }
    bias_for_codes(b, lo, hi, s, inv, bias, refined);
    for (unsigned j = 0; j < L; j++)
        sgfp4_bias_candidates(refined[j], &first_bits[j], &second_bits[j], &first[j], &second[j]);
    double e_first[L], e_second[L];
    sse_at(b, lo, hi, s, inv, first, e_first);
    sse_at(b, lo, hi, s, inv, second, e_second);
    for (unsigned j = 0; j < L; j++) {
        const int other = second_bits[j] != first_bits[j] && e_second[j] < e_first[j];
        out[j].bias = other ? second_bits[j] : first_bits[j];
        out[j].sse = (float)(other ? e_second[j] : e_first[j]);
    }
}

void sgfp4_batch_fit(const sgfp4_batch *b, unsigned mode, sgfp4_fit fit,
                     sgfp4_leaf_params out[L])
{
    fits a;
    if (mode == SGFP4_MODE_FP4)
        fit_fp4(b, fit == SGFP4_FIT_FAST, &a);
    else
        fit_t158(b, fit == SGFP4_FIT_FAST, &a);
    for (unsigned j = 0; j < L; j++) {
        const sgfp4_leaf_stats *st = &b->st[j];
        if (!(st->max > st->min)) { /* a constant leaf: S = 0 and the bias at the mean */
            a.scale[j] = 0.0f;
            a.bias[j] = 0.0f;
        }
        a.bias[j] += st->mean;
    }
    finalize(b, mode, &a, out);
}
