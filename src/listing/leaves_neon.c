/* Listing a block's leaves for the NEON kernels: the leaves of sgfp4_block_leaf_refs() as
 * arrays (sgfp4_leaf_list), grouped by kind. Positions come from
 * sgfp4_list_record_positions() (leaf_parse.c); the v2 headers' scales and biases are
 * converted 4 at a time (integer re-biasing, or an exact conversion and scaling for
 * subnormal halves, so no FPCR mode can touch them); then sgfp4_list_group() records each
 * leaf's mode, payload offset and kind group.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "listing/leaf_list.h"

#ifdef SGFP4_HAVE_NEON_KERNELS
#include <arm_neon.h>

/* Exact f32 of 4 finite halves (low 16 bits of each lane), as sgfp4_half_to_float_finite()
 * computes them: normal halves by integer re-biasing, the others as magnitude * 2^-24 (an
 * exact conversion and an exact product whose result is 0 or a normal binary32, so no
 * flush-to-zero mode touches it); the sign is OR-ed in last (-0 stays -0). */
static inline float32x4_t half_to_float_x4(uint32x4_t half)
{
    const uint32x4_t sign = vshlq_n_u32(vandq_u32(half, vdupq_n_u32(0x8000u)), 16);
    const uint32x4_t magnitude = vandq_u32(half, vdupq_n_u32(0x7FFFu));
    const uint32x4_t normal = vaddq_u32(vshlq_n_u32(magnitude, 13), vdupq_n_u32(112u << 23));
    const uint32x4_t small =
        vreinterpretq_u32_f32(vmulq_f32(vcvtq_f32_u32(magnitude), vdupq_n_f32(0x1p-24f)));
    const uint32x4_t is_normal = vcgtq_u32(magnitude, vdupq_n_u32(0x3FFu));
    return vreinterpretq_f32_u32(vorrq_u32(vbslq_u32(is_normal, normal, small), sign));
}

void sgfp4_neon_halves_to_floats(const uint16_t *halves, size_t count, float *out)
{
    size_t i = 0;
    for (; i + 4 <= count; i += 4)
        vst1q_f32(out + i, half_to_float_x4(vmovl_u16(vld1_u16(halves + i))));
    for (; i < count; i++)
        out[i] = sgfp4_half_to_float_finite(halves[i]);
}

unsigned sgfp4_neon_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    const uint8_t *headers;
    const unsigned n = sgfp4_list_begin(t, b, list, &headers);
    if (!headers)
        return n; /* v1: listed */
    for (unsigned i = 0; i < n; i += 4) {
        uint8_t last[16] = {0};
        const uint8_t *from = headers + 4 * i;
        if (n - i < 4) { /* the last headers only: no read past them */
            memcpy(last, from, 4 * (size_t)(n - i));
            from = last;
        }
        const uint32x4_t h = vreinterpretq_u32_u8(vld1q_u8(from)); /* little-endian words */
        vst1q_f32(list->scale + i, half_to_float_x4(vshrq_n_u32(h, 16)));
        vst1q_f32(list->bias + i, half_to_float_x4(vandq_u32(h, vdupq_n_u32(0xFFF0u))));
    }
    sgfp4_list_group(list, n);
    return n;
}

#endif
