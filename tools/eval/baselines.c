/* Simple peers at equal bits, reimplemented here from their published descriptions (they are
 * not the original code, and are labeled so in every table):
 *  - Q4_0-style (llama.cpp's Q4_0): groups of 32 consecutive weights of a row; d = the
 *    weight of largest magnitude (with its sign) / -8, stored as fp16; codes
 *    q = min(15, trunc(w / d + 8.5)) in 0..15; w = (q - 8) d. 4 + 16/32 = 4.5 bits a weight.
 *  - MLX-style affine (mlx.core.quantize): groups of `group` weights of a row; scale =
 *    (max - min) / (2^bits - 1), signed toward the edge of larger magnitude, adjusted so that
 *    edge is exactly a code; bias = that edge; codes rint((w - bias) / scale) clipped to
 *    0..2^bits-1; scale and bias stored as fp16. bits + 32/group bits a weight.
 * A row whose length is not a multiple of the group ends in a shorter group, fitted to its
 * real weights and stored as a whole group (the formats store whole groups: a Q4_0 block is
 * 18 bytes), so its bits count whole groups. Codes are clipped to the grid, which only the
 * error feedback of GPTQ (gptq.c) can leave.
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "eval.h"

static float to_half_and_back(float v) { return sgfp4_half_to_float(sgfp4_float_to_half(v)); }

static void fit_q4_0(const float *x, uint64_t n, baseline_params *p)
{
    float amax = 0.0f, max = 0.0f;
    for (uint64_t j = 0; j < n; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    p->inverse = d != 0.0f ? 1.0f / d : 0.0f;
    p->stored_scale = to_half_and_back(d);
    p->scale = d;
    p->bias = p->stored_bias = 0.0f;
}

static void fit_affine(const float *x, uint64_t n, int bits, baseline_params *p)
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
    p->scale = scale;
    p->inverse = 0.0f;
    p->bias = bias;
    p->stored_scale = to_half_and_back(scale);
    p->stored_bias = to_half_and_back(bias);
}

void baseline_fit(const baseline *b, const float *x, uint64_t n, baseline_params *p)
{
    if (b->kind == BASELINE_Q4_0)
        fit_q4_0(x, n, p);
    else
        fit_affine(x, n, b->bits, p);
}

float baseline_value(const baseline *b, const baseline_params *p, float x)
{
    if (b->kind == BASELINE_Q4_0) {
        float v = x * p->inverse + 8.5f; /* truncated below: llama.cpp's rounding */
        v = v > 0.0f ? v : 0.0f;
        const int code = v < 15.0f ? (int)v : 15;
        return (float)(code - 8) * p->stored_scale;
    }
    const float bins = (float)((1 << b->bits) - 1);
    float q = rintf((x - p->bias) / p->scale);
    q = q > 0.0f ? q : 0.0f; /* also a NaN quotient: 0 */
    q = q < bins ? q : bins;
    return q * p->stored_scale + p->stored_bias;
}

int baseline_group(const baseline *b)
{
    return b->kind == BASELINE_Q4_0 ? 32 : b->group;
}

double baseline_bits(const baseline *b, uint64_t rows, uint64_t cols)
{
    const uint64_t g = (uint64_t)baseline_group(b), groups = (cols + g - 1) / g;
    const double per_group = b->kind == BASELINE_Q4_0 ? 32.0 * 4.0 + 16.0
                                                       : (double)g * b->bits + 32.0;
    return (double)rows * (double)groups * per_group;
}

double baseline_quantize(const baseline *b, float *w, uint64_t rows, uint64_t cols)
{
    const uint64_t g = (uint64_t)baseline_group(b), groups = (cols + g - 1) / g;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t k = 0; k < groups; k++) {
            float *x = w + r * cols + k * g;
            const uint64_t n = cols - k * g < g ? cols - k * g : g;
            baseline_params p;
            baseline_fit(b, x, n, &p);
            for (uint64_t j = 0; j < n; j++)
                x[j] = baseline_value(b, &p, x[j]);
        }
    return baseline_bits(b, rows, cols);
}
