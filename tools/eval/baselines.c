/* Simple peers at equal bits, reimplemented here from their published descriptions (they are
 * not the original code, and are labeled so in every table):
 *  - Q4_0-style (llama.cpp's Q4_0): groups of 32 consecutive weights of a row; d = the
 *    weight of largest magnitude (with its sign) / -8, stored as fp16; codes
 *    q = min(15, trunc(w / d + 8.5)) in 0..15; w = (q - 8) d. 4 + 16/32 = 4.5 bits a weight.
 *  - MLX-style affine (mlx.core.quantize): groups of `group` weights of a row; scale =
 *    (max - min) / (2^bits - 1), signed toward the edge of larger magnitude, adjusted so that
 *    edge is exactly a code; bias = that edge; codes rint((w - bias) / scale) clipped to
 *    0..2^bits-1; scale and bias stored as fp16. bits + 32/group bits a weight.
 * A row whose length is not a multiple of the group ends in a shorter group (counted as a
 * whole group's side information). Both quantize in place and return the bits they use.
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "eval.h"

static float to_half_and_back(float v) { return sgfp4_half_to_float(sgfp4_float_to_half(v)); }

static void q4_0_group(float *x, uint64_t n)
{
    float amax = 0.0f, max = 0.0f;
    for (uint64_t j = 0; j < n; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float stored = to_half_and_back(d);
    for (uint64_t j = 0; j < n; j++) {
        const int code = (int)(int8_t)(x[j] * id + 8.5f);
        x[j] = (float)((code < 15 ? code : 15) - 8) * stored;
    }
}

double baseline_q4_0(float *w, uint64_t rows, uint64_t cols)
{
    const uint64_t groups = (cols + 31) / 32;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t g = 0; g < groups; g++) {
            const uint64_t at = g * 32, n = cols - at < 32 ? cols - at : 32;
            q4_0_group(w + r * cols + at, n);
        }
    return (double)rows * ((double)cols * 4.0 + (double)groups * 16.0);
}

static void affine_group(float *x, uint64_t n, int bits)
{
    const float bins = (float)((1 << bits) - 1);
    float lo = x[0], hi = x[0];
    for (uint64_t j = 1; j < n; j++) {
        lo = x[j] < lo ? x[j] : lo;
        hi = x[j] > hi ? x[j] : hi;
    }
    const int low_edge = fabsf(lo) > fabsf(hi);
    float scale = fmaxf((hi - lo) / bins, 1e-7f);
    if (!low_edge)
        scale = -scale;
    const float edge = low_edge ? lo : hi;
    const float q0 = rintf(edge / scale);
    float bias = 0.0f;
    if (q0 != 0.0f) {
        scale = edge / q0;
        bias = edge;
    }
    const float stored_scale = to_half_and_back(scale), stored_bias = to_half_and_back(bias);
    for (uint64_t j = 0; j < n; j++) {
        float q = rintf((x[j] - bias) / scale);
        q = q < 0.0f ? 0.0f : q > bins ? bins : q;
        x[j] = q * stored_scale + stored_bias;
    }
}

double baseline_affine(float *w, uint64_t rows, uint64_t cols, int bits, int group)
{
    const uint64_t g = (uint64_t)group, groups = (cols + g - 1) / g;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t k = 0; k < groups; k++) {
            const uint64_t at = k * g, n = cols - at < g ? cols - at : g;
            affine_group(w + r * cols + at, n, bits);
        }
    return (double)rows * ((double)cols * bits + (double)groups * 32.0);
}
