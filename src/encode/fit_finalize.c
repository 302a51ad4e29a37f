/* From a fitted (S, Bias) in float to the values a container stores: S rounded to fp16, the
 * bias rounded to what the profile can hold (v2 keeps only half & 0xFFF0), and the codes
 * re-quantized against the stored values, so the reported error is the decoded error.
 * SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/leaf_fit.h"
#include "encode/quantize.h"

static uint16_t scale_to_half(float scale)
{
    if (!(scale > 0.0f)) /* also catches NaN: never store a negative or non-finite S */
        return 0;
    if (scale > SGFP4_HALF_MAX)
        scale = SGFP4_HALF_MAX;
    return sgfp4_float_to_half(scale);
}

void sgfp4_fit_finalize(const float *w, const float *h, unsigned n, unsigned mode, float scale,
                        float bias, int refine, sgfp4_profile profile, sgfp4_leaf_params *out)
{
    const uint16_t s_bits = scale_to_half(scale);
    const float s = sgfp4_half_to_float(s_bits);
    out->mode = (uint8_t)mode;
    out->scale = s_bits;
    if (refine)
        bias = (float)sgfp4_bias_for_codes(w, h, n, mode, s, bias);
    uint16_t best_bits = sgfp4_bias_to_half(bias, profile, 0);
    double best = sgfp4_sse_at(w, h, n, mode, s, sgfp4_half_to_float(best_bits));
    if (refine) {
        const uint16_t other = sgfp4_bias_to_half(bias, profile, 1);
        if (other != best_bits) {
            const double e = sgfp4_sse_at(w, h, n, mode, s, sgfp4_half_to_float(other));
            if (e < best) {
                best = e;
                best_bits = other;
            }
        }
    }
    out->bias = best_bits;
    out->sse = (float)best;
}
