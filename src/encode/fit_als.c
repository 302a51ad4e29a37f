/* SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/fit_als.h"
#include "encode/leaf_fit.h"
#include "encode/simd.h"
#include <stddef.h>

/* The leaf's statistics from the 8 lanes of a centring pass, added in lane order (both
 * centring loops share it, so both sum the same way). */
static inline void lanes_to_stats(const float s[8], const float sq[8], const float ab[8],
                                  const float mn[8], const float mx[8], float mean,
                                  double weight, sgfp4_leaf_stats *st)
{
    double ts = 0, tsq = 0, tab = 0;
    float tmn = mn[0], tmx = mx[0];
    for (unsigned j = 0; j < 8; j++) {
        ts += s[j];
        tsq += sq[j];
        tab += ab[j];
        tmn = mn[j] < tmn ? mn[j] : tmn;
        tmx = mx[j] > tmx ? mx[j] : tmx;
    }
    st->mean = mean;
    st->sum = ts;
    st->sum_sq = tsq;
    st->abs_sum = tab;
    st->min = tmn;
    st->max = tmx;
    st->weight = weight;
}

/* sgfp4_leaf_center with error weights h. */
SGFP4_VECTOR_CLONES
static void center_weighted(const float *restrict w, const float *restrict h, unsigned n,
                            float *restrict c, sgfp4_leaf_stats *st)
{
    const size_t body = n & ~(size_t)7;
    float acc[8] = {0}, hs[8] = {0};
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++) {
            acc[j] += h[i + j] * w[i + j];
            hs[j] += h[i + j];
        }
    for (size_t i = body; i < n; i++) {
        acc[i - body] += h[i] * w[i];
        hs[i - body] += h[i];
    }
    double sum = 0, weight = 0;
    for (unsigned j = 0; j < 8; j++) {
        sum += acc[j];
        weight += hs[j];
    }
    const float mean = weight > 0 ? (float)(sum / weight) : 0.0f;
    float s[8] = {0}, sq[8] = {0}, ab[8] = {0}, mn[8], mx[8];
    for (unsigned j = 0; j < 8; j++)
        mn[j] = mx[j] = w[0] - mean;
    for (size_t i = 0; i < n; i++) {
        const unsigned j = (unsigned)(i < body ? i % 8 : i - body);
        const float v = w[i] - mean, hv = h[i] * v;
        c[i] = v;
        s[j] += hv;
        sq[j] += hv * v;
        ab[j] += hv < 0 ? -hv : hv;
        mn[j] = v < mn[j] ? v : mn[j];
        mx[j] = v > mx[j] ? v : mx[j];
    }
    lanes_to_stats(s, sq, ab, mn, mx, mean, weight, st);
}

SGFP4_VECTOR_CLONES
static void center_plain(const float *restrict w, unsigned n, float *restrict c,
                         sgfp4_leaf_stats *st)
{
    /* 8 lanes; a tail of n % 8 weights goes to the first lanes, so that a full leaf (n a
     * multiple of 8) sums exactly as before and any n gives the same bits every time. */
    const size_t body = n & ~(size_t)7;
    float acc[8] = {0};
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++)
            acc[j] += w[i + j];
    for (size_t i = body; i < n; i++)
        acc[i - body] += w[i];
    double sum = 0;
    for (unsigned j = 0; j < 8; j++)
        sum += acc[j];
    const float mean = (float)(sum / n);
    float s[8] = {0}, sq[8] = {0}, ab[8] = {0}, mn[8], mx[8];
    for (unsigned j = 0; j < 8; j++)
        mn[j] = mx[j] = w[0] - mean;
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++) {
            const float v = w[i + j] - mean;
            c[i + j] = v;
            s[j] += v;
            sq[j] += v * v;
            ab[j] += v < 0 ? -v : v;
            mn[j] = v < mn[j] ? v : mn[j];
            mx[j] = v > mx[j] ? v : mx[j];
        }
    for (size_t i = body; i < n; i++) {
        const unsigned j = (unsigned)(i - body);
        const float v = w[i] - mean;
        c[i] = v;
        s[j] += v;
        sq[j] += v * v;
        ab[j] += v < 0 ? -v : v;
        mn[j] = v < mn[j] ? v : mn[j];
        mx[j] = v > mx[j] ? v : mx[j];
    }
    lanes_to_stats(s, sq, ab, mn, mx, mean, n, st);
}

void sgfp4_leaf_center(const float *w, const float *h, unsigned n, float *c,
                       sgfp4_leaf_stats *st)
{
    if (h)
        center_weighted(w, h, n, c, st);
    else
        center_plain(w, n, c, st);
}

/* code_sums with error weights h: sums of h q, h q^2 and h q c. */
SGFP4_VECTOR_CLONES
static void code_sums_weighted(const float *restrict c, const float *restrict h, unsigned n,
                               float scale, float bias, float lo, float hi, double *sq,
                               double *sqq, double *sqc)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const size_t body = n & ~(size_t)7;
    float aq[8] = {0}, aqq[8] = {0}, aqc[8] = {0};
    for (size_t i = 0; i < n; i++) {
        const unsigned j = (unsigned)(i < body ? i % 8 : i - body);
        float x = (c[i] - bias) * inv;
        x = x < lo ? lo : x;
        x = x > hi ? hi : x;
        const float q = (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
        const float hq = h[i] * q;
        aq[j] += hq;
        aqq[j] += hq * q;
        aqc[j] += hq * c[i];
    }
    double tq = 0, tqq = 0, tqc = 0;
    for (unsigned j = 0; j < 8; j++) {
        tq += aq[j];
        tqq += aqq[j];
        tqc += aqc[j];
    }
    *sq = tq;
    *sqq = tqq;
    *sqc = tqc;
}

/* Sums of q, q^2 and q c over the leaf for the nearest codes of (scale, bias). */
SGFP4_VECTOR_CLONES
static void code_sums(const float *restrict c, unsigned n, float scale, float bias, float lo,
                      float hi, double *sq, double *sqq, double *sqc)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const size_t body = n & ~(size_t)7;
    float aq[8] = {0}, aqq[8] = {0}, aqc[8] = {0};
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++) {
            float x = (c[i + j] - bias) * inv;
            x = x < lo ? lo : x;
            x = x > hi ? hi : x;
            const float q = (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
            aq[j] += q;
            aqq[j] += q * q;
            aqc[j] += q * c[i + j];
        }
    for (size_t i = body; i < n; i++) { /* the tail of a partly valid leaf (n % 8) */
        const unsigned j = (unsigned)(i - body);
        float x = (c[i] - bias) * inv;
        x = x < lo ? lo : x;
        x = x > hi ? hi : x;
        const float q = (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
        aq[j] += q;
        aqq[j] += q * q;
        aqc[j] += q * c[i];
    }
    double tq = 0, tqq = 0, tqc = 0;
    for (unsigned j = 0; j < 8; j++) {
        tq += aq[j];
        tqq += aqq[j];
        tqc += aqc[j];
    }
    *sq = tq;
    *sqq = tqq;
    *sqc = tqc;
}

void sgfp4_als_round(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
                     float lo, float hi, sgfp4_affine *fit, sgfp4_affine *refit)
{
    double sq, sqq, sqc;
    if (h)
        code_sums_weighted(c, h, n, fit->scale, fit->bias, lo, hi, &sq, &sqq, &sqc);
    else
        code_sums(c, n, fit->scale, fit->bias, lo, hi, &sq, &sqq, &sqc);
    const double s = fit->scale > 0.0f ? fit->scale : 0.0, b = fit->bias, nn = st->weight;
    fit->sse = st->sum_sq - 2 * s * sqc - 2 * b * st->sum + s * s * sqq + 2 * s * b * sq +
               nn * b * b;
    const double det = nn * sqq - sq * sq;
    *refit = *fit;
    if (det > 0) {
        const double rs = (nn * sqc - sq * st->sum) / det;
        if (rs > 0 && rs < SGFP4_HALF_MAX) {
            const double rb = (st->sum - rs * sq) / nn;
            refit->scale = (float)rs;
            refit->bias = (float)rb;
            refit->sse = st->sum_sq - 2 * rs * sqc - 2 * rb * st->sum + rs * rs * sqq +
                         2 * rs * rb * sq + nn * rb * rb;
        }
    }
}

void sgfp4_als(const float *c, const float *h, unsigned n, const sgfp4_leaf_stats *st,
               float lo, float hi, unsigned rounds, sgfp4_affine *fit)
{
    sgfp4_affine cur = *fit, best, next;
    best.sse = -1;
    for (unsigned r = 0; r < rounds; r++) {
        const float from_scale = cur.scale, from_bias = cur.bias;
        sgfp4_als_round(c, h, n, st, lo, hi, &cur, &next);
        if (best.sse < 0 || cur.sse < best.sse)
            best = cur;
        /* The refit's error is measured with the old codes: an upper bound of its error
         * with nearest codes, so it is a valid candidate too. */
        if (next.sse < best.sse)
            best = next;
        if (next.scale == cur.scale && next.bias == cur.bias)
            break;
        cur = next;
        if (r > 0) {
            cur.scale = next.scale + (SGFP4_ALS_OVERRELAX - 1.0f) * (next.scale - from_scale);
            cur.bias = next.bias + (SGFP4_ALS_OVERRELAX - 1.0f) * (next.bias - from_bias);
        }
    }
    *fit = best;
}
