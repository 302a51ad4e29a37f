/* The Class A activation quantizer of DECISIONS D8, in integer arithmetic only, so that no
 * floating-point mode or conversion instruction can change a bit:
 *   m = max |x_j| over the 64-column block (padding columns count as 0);
 *   m < 2^-40:  d_b = 0 and every q_j = 0;
 *   otherwise:  d_b = 2^e, e the smallest integer with m <= 127 * 2^e, and
 *               q_j = round_half_even(x_j * 2^-e), an exact scaling (|q_j| <= 127).
 * SPDX-License-Identifier: MIT */
#include "matvec/matvec_internal.h"


/* |x| = significand * 2^exponent for the magnitude bits of a finite binary32. */
static void split_magnitude(uint32_t magnitude, uint32_t *significand, int *exponent)
{
    const uint32_t field = magnitude >> 23;
    if (field == 0) { /* subnormal (or zero): mantissa * 2^-149 */
        *significand = magnitude & 0x7FFFFFu;
        *exponent = -149;
    } else {
        *significand = (magnitude & 0x7FFFFFu) | 0x800000u;
        *exponent = (int)field - 150;
    }
}


/* round_half_even(significand / 2^shift), shift >= 1. */
static uint32_t round_shift_half_even(uint32_t significand, int shift)
{
    if (shift > 32)
        return 0; /* significand < 2^24 <= 2^(shift - 1) / 2^8: below one half */
    const uint64_t value = significand;
    const uint64_t kept = value >> shift;
    const uint64_t rest = value & ((UINT64_C(1) << shift) - 1u);
    const uint64_t half = UINT64_C(1) << (shift - 1);
    return (uint32_t)(kept + (rest > half || (rest == half && (kept & 1u))));
}

void sgfp4_matvec_quantize_scalar(const void *in, sgfp4_dtype dtype, uint64_t cols, int8_t *q,
                                  uint8_t *d)
{
    const uint64_t tiles_x = (cols + 63u) / 64u;
    for (uint64_t b = 0; b < tiles_x; b++) {
        const uint64_t c0 = b * 64u;
        const unsigned width = (unsigned)(cols - c0 < 64u ? cols - c0 : 64u);
        uint32_t bits[64];
        uint32_t m = 0; /* magnitude bits order like magnitudes for finite values */
        for (unsigned j = 0; j < width; j++) {
            bits[j] = sgfp4_float_to_bits(sgfp4_matvec_x_at(in, dtype, c0 + j));
            const uint32_t magnitude = bits[j] & 0x7FFFFFFFu;
            m = magnitude > m ? magnitude : m;
        }
        int8_t *qb = q + c0;
        memset(qb, 0, 64);
        if (m < SGFP4_MATVEC_Q8_FLOOR) {
            sgfp4_store_u32le(d + 4u * b, 0); /* d_b = +0 */
            continue;
        }
        const int e = sgfp4_matvec_block_exponent(m);
        sgfp4_store_u32le(d + 4u * b, (uint32_t)(e + 127) << 23); /* 2^e, e in [-46, 122] */
        for (unsigned j = 0; j < width; j++) {
            uint32_t significand;
            int exponent;
            split_magnitude(bits[j] & 0x7FFFFFFFu, &significand, &exponent);
            /* |x_j| * 2^-e = significand / 2^(e - exponent), and e - exponent >= 1: a
             * normal x_j has significand >= 2^23 and |x_j| <= 127 * 2^e, so
             * 2^(exponent - e) <= 127 / 2^23; a subnormal has exponent -149 < -46 <= e. */
            const uint32_t magnitude_q = round_shift_half_even(significand, e - exponent);
            qb[j] = (int8_t)((bits[j] >> 31) ? -(int32_t)magnitude_q : (int32_t)magnitude_q);
        }
    }
}
