/* Quantization against stored fp16 values: the code of each weight, the exact decoded error,
 * and the payload bit packing (spec §22.6). Loops work on 8 independent lanes, which gcc
 * vectorizes without reordering any floating-point sum (no fast-math: DECISIONS D7).
 * SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/quantize.h"
#include "encode/simd.h"
#include <stddef.h>
#include "format/bits.h"

static uint16_t clip_half(float v)
{
    if (v > SGFP4_HALF_MAX)
        v = SGFP4_HALF_MAX;
    if (v < -SGFP4_HALF_MAX)
        v = -SGFP4_HALF_MAX;
    return sgfp4_float_to_half(v);
}

uint16_t sgfp4_bias_to_half(float bias, sgfp4_profile profile, int other)
{
    const uint16_t h = clip_half(bias);
    if (profile != SGFP4_PROFILE_V2)
        return h;
    /* Masking the low 4 bits of a half moves it toward zero; the next stored value away
     * from zero is 0x10 above (same sign). Pick the nearer of the two, or the other. */
    const uint16_t toward = (uint16_t)(h & 0xFFF0u);
    const uint16_t away = (uint16_t)(toward + 0x10u);
    const int away_ok = (away & 0x7C00u) != 0x7C00u;
    if (!away_ok || (h & 0xFu) == 0)
        return other && away_ok ? away : toward;
    const float dt = bias - sgfp4_half_to_float(toward);
    const float da = sgfp4_half_to_float(away) - bias;
    const int pick_away = (dt < 0 ? -dt : dt) > (da < 0 ? -da : da);
    return (pick_away != (other != 0)) ? away : toward;
}

void sgfp4_bias_candidates(float bias, uint16_t *nearest, uint16_t *other, float *nearest_value,
                           float *other_value)
{
    const uint16_t h = clip_half(bias);
    const uint16_t toward = (uint16_t)(h & 0xFFF0u);
    const uint16_t away = (uint16_t)(toward + 0x10u);
    const int away_ok = (away & 0x7C00u) != 0x7C00u;
    const float toward_value = sgfp4_half_to_float(toward);
    const float away_value = away_ok ? sgfp4_half_to_float(away) : toward_value;
    int pick_away = 0;
    if (away_ok && (h & 0xFu) != 0) {
        const float dt = bias - toward_value, da = away_value - bias;
        pick_away = (dt < 0 ? -dt : dt) > (da < 0 ? -da : da);
    }
    *nearest = pick_away ? away : toward;
    *nearest_value = pick_away ? away_value : toward_value;
    *other = !away_ok ? toward : pick_away ? toward : away;
    *other_value = !away_ok ? toward_value : pick_away ? toward_value : away_value;
}

SGFP4_VECTOR_CLONES
void sgfp4_quantize(const float *restrict w, unsigned n, unsigned mode, float scale,
                    float bias, float *restrict codes)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const float lo = mode ? -1.0f : -8.0f, hi = mode ? 1.0f : 7.0f;
    const size_t body = n & ~(size_t)7;
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++)
            codes[i + j] = sgfp4_code_of(w[i + j], bias, inv, lo, hi);
    for (size_t i = body; i < n; i++)
        codes[i] = sgfp4_code_of(w[i], bias, inv, lo, hi);
}

SGFP4_VECTOR_CLONES
static double sse_weighted(const float *restrict w, const float *restrict h, unsigned n,
                           unsigned mode, float scale, float bias)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const float lo = mode ? -1.0f : -8.0f, hi = mode ? 1.0f : 7.0f;
    const size_t body = n & ~(size_t)7;
    float acc[8] = {0};
    for (size_t i = 0; i < n; i++) {
        const float q = sgfp4_code_of(w[i], bias, inv, lo, hi);
        const float product = scale * q;
        const float e = w[i] - (product + bias);
        acc[i < body ? i % 8 : i - body] += h[i] * e * e;
    }
    double sum = 0;
    for (unsigned j = 0; j < 8; j++)
        sum += acc[j];
    return sum;
}

SGFP4_VECTOR_CLONES
static double sse_plain(const float *restrict w, unsigned n, unsigned mode, float scale,
                        float bias)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const float lo = mode ? -1.0f : -8.0f, hi = mode ? 1.0f : 7.0f;
    const size_t body = n & ~(size_t)7;
    float acc[8] = {0};
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++) {
            const float q = sgfp4_code_of(w[i + j], bias, inv, lo, hi);
            const float product = scale * q;
            const float e = w[i + j] - (product + bias);
            acc[j] += e * e;
        }
    for (size_t i = body; i < n; i++) { /* tail: lane i - body */
        const float q = sgfp4_code_of(w[i], bias, inv, lo, hi);
        const float product = scale * q;
        const float e = w[i] - (product + bias);
        acc[i - body] += e * e;
    }
    double sum = 0;
    for (unsigned j = 0; j < 8; j++)
        sum += acc[j];
    return sum;
}

double sgfp4_sse_at(const float *w, const float *h, unsigned n, unsigned mode, float scale,
                    float bias)
{
    return h ? sse_weighted(w, h, n, mode, scale, bias) : sse_plain(w, n, mode, scale, bias);
}

SGFP4_VECTOR_CLONES
static double bias_weighted(const float *restrict w, const float *restrict h, unsigned n,
                            unsigned mode, float scale, float bias)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const float lo = mode ? -1.0f : -8.0f, hi = mode ? 1.0f : 7.0f;
    const size_t body = n & ~(size_t)7;
    float acc[8] = {0}, hs[8] = {0};
    for (size_t i = 0; i < n; i++) {
        const unsigned j = (unsigned)(i < body ? i % 8 : i - body);
        acc[j] += h[i] * (w[i] - scale * sgfp4_code_of(w[i], bias, inv, lo, hi));
        hs[j] += h[i];
    }
    double sum = 0, weight = 0;
    for (unsigned j = 0; j < 8; j++) {
        sum += acc[j];
        weight += hs[j];
    }
    return weight > 0 ? sum / weight : bias;
}

SGFP4_VECTOR_CLONES
static double bias_plain(const float *restrict w, unsigned n, unsigned mode, float scale,
                         float bias)
{
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const float lo = mode ? -1.0f : -8.0f, hi = mode ? 1.0f : 7.0f;
    const size_t body = n & ~(size_t)7;
    float acc[8] = {0};
    for (size_t i = 0; i < body; i += 8)
        SGFP4_LANE_LOOP
        for (unsigned j = 0; j < 8; j++)
            acc[j] += w[i + j] - scale * sgfp4_code_of(w[i + j], bias, inv, lo, hi);
    for (size_t i = body; i < n; i++) /* tail: lane i - body */
        acc[i - body] += w[i] - scale * sgfp4_code_of(w[i], bias, inv, lo, hi);
    double sum = 0;
    for (unsigned j = 0; j < 8; j++)
        sum += acc[j];
    return sum / n;
}

double sgfp4_bias_for_codes(const float *w, const float *h, unsigned n, unsigned mode,
                            float scale, float bias)
{
    return h ? bias_weighted(w, h, n, mode, scale, bias) : bias_plain(w, n, mode, scale, bias);
}

void sgfp4_pack_codes(const float *codes, unsigned n, unsigned mode, uint8_t *payload)
{
    if (mode == SGFP4_MODE_FP4) {
        for (unsigned i = 0; i < n; i += 2) {
            const unsigned lo = (unsigned)(int)codes[i] & 0xFu;
            const unsigned hi = (unsigned)(int)codes[i + 1] & 0xFu;
            payload[i / 2] = (uint8_t)(lo | hi << 4);
        }
        return;
    }
    for (unsigned i = 0; i < n; i += 4) {
        unsigned byte = 0;
        for (unsigned k = 0; k < 4; k++) {
            const int q = (int)codes[i + k];
            const unsigned symbol = q > 0 ? 1u : q < 0 ? 2u : 0u; /* 01 = +1, 10 = -1 */
            byte |= symbol << (2 * k);
        }
        payload[i / 4] = (uint8_t)byte;
    }
}
