/* Quantization against the stored values: the stored bias, a weight's code, a leaf's codes,
 * their exact error and their payload (quantize.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_QUANTIZE_H
#define SGFP4_ENCODE_QUANTIZE_H

#include <stdint.h>

#include "encode/simd.h"
#include "sgfp4.h"

/* The stored fp16 value of a bias: v1 nearest fp16; v2 the nearest value whose low 4 bits
 * are zero. `other` (v2) selects the other neighbour instead (the same one when the other
 * is not finite). Clips to the fp16 range. */
uint16_t sgfp4_bias_to_half(float bias, sgfp4_profile profile, int other);
/* The two stored v2 values around a bias at once, as sgfp4_bias_to_half(bias, V2, 0) and
 * (.., 1) give them, with their float values. */
void sgfp4_bias_candidates(float bias, uint16_t *nearest, uint16_t *other, float *nearest_value,
                           float *other_value);
/* The nearest code of one weight w for bias B and inv = 1 / S (0 when S is 0), clipped to
 * [lo, hi]: the one rounding every quantizing loop shares, so that they agree exactly. */
static inline float sgfp4_code_of(float w, float bias, float inv, float lo, float hi)
{
    float x = (w - bias) * inv;
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    return (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
}
/* Codes (as floats) of n weights for S and B: nearest grid point,
 * clipped to the mode's code range; all zero when S is zero. */
void sgfp4_quantize(const float *w, unsigned n, unsigned mode, float scale, float bias,
                    float *codes);
/* Exact squared error of the decoded leaf fl32(S*q + B) against w, q as sgfp4_quantize,
 * each weight's error times h_i (h NULL: unweighted). */
double sgfp4_sse_at(const float *w, const float *h, unsigned n, unsigned mode, float scale,
                    float bias);
/* The (h-weighted) mean of w - S q, q as sgfp4_quantize: the best bias for those codes. */
double sgfp4_bias_for_codes(const float *w, const float *h, unsigned n, unsigned mode,
                            float scale, float bias);
/* Packs codes into a payload (FP4 nibbles or T158 2-bit symbols, spec §22.6). */
void sgfp4_pack_codes(const float *codes, unsigned n, unsigned mode, uint8_t *payload);

#endif
