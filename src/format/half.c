/* Exact conversions between binary16, bfloat16 and binary32 using integer bit operations
 * only, so that no platform flush-to-zero mode or conversion instruction can change them.
 * SPDX-License-Identifier: MIT */
#include "sgfp4.h"
#include "format/bits.h"

float sgfp4_half_to_float(uint16_t half)
{
    const uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
    uint32_t exponent = (half >> 10) & 0x1Fu;
    uint32_t mantissa = half & 0x3FFu;

    if (exponent == 0x1Fu) /* infinity or NaN: keep the payload */
        return sgfp4_bits_to_float(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {
        if (mantissa == 0)
            return sgfp4_bits_to_float(sign); /* +-0 */
        /* Subnormal: value = mantissa * 2^-24. Normalise the mantissa so that its leading
         * one reaches bit 10; each shift lowers the exponent by one. */
        exponent = 1;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            exponent--;
        }
        mantissa &= 0x3FFu;
        /* exponent is now 1 - shifts, in [-9, 0]: rebias from 15 to 127. */
        return sgfp4_bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    }
    return sgfp4_bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/* Rounds the low `shift` bits of `value` away, to nearest, ties to even. shift in [1, 31]. */
static uint32_t round_shift_rne(uint32_t value, unsigned shift)
{
    const uint32_t half_ulp = 1u << (shift - 1);
    const uint32_t rest = value & ((1u << shift) - 1u);
    uint32_t kept = value >> shift;
    if (rest > half_ulp || (rest == half_ulp && (kept & 1u)))
        kept++;
    return kept;
}

uint16_t sgfp4_float_to_half(float value)
{
    const uint32_t bits = sgfp4_float_to_bits(value);
    const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    const uint32_t exponent = (bits >> 23) & 0xFFu;
    const uint32_t mantissa = bits & 0x7FFFFFu;

    if (exponent == 0xFFu) /* Inf stays Inf; NaN stays a quiet NaN */
        return (uint16_t)(sign | 0x7C00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
    const int32_t e = (int32_t)exponent - 127; /* unbiased */
    if (e > 15)
        return (uint16_t)(sign | 0x7C00u);
    if (e >= -14) {
        /* Normal half: 10 mantissa bits kept from 23. A carry out of the mantissa correctly
         * bumps the exponent (and may reach infinity). */
        const uint32_t h = ((uint32_t)(e + 15) << 10) + round_shift_rne(mantissa, 13);
        return (uint16_t)(sign | (h > 0x7C00u ? 0x7C00u : h));
    }
    if (e < -25)
        return sign; /* below half the smallest subnormal: rounds to zero */
    /* Subnormal half: value = (1.mantissa) * 2^e = m24 * 2^(e-23), and a half subnormal
     * counts units of 2^-24, so shift m24 right by (-14 - e) + 13. */
    const uint32_t m24 = mantissa | 0x800000u;
    const unsigned shift = (unsigned)(-14 - e) + 13u;
    return (uint16_t)(sign | round_shift_rne(m24, shift));
}

uint16_t sgfp4_float_to_bf16(float value)
{
    const uint32_t bits = sgfp4_float_to_bits(value);
    if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu))
        return (uint16_t)((bits >> 16) | 0x40u); /* NaN: keep it a (quiet) NaN */
    return (uint16_t)(round_shift_rne(bits, 16)); /* carries into the exponent are right */
}
