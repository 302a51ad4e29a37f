/* Independent reference arithmetic for the tests (never the library's code):
 *   ref_half_value:   exact binary16 value by the textbook formula, via ldexp;
 *   ref_float_to_half / ref_float_to_bf16: round to nearest even by scaling the double value
 *   by the target's quantum, rint() (the default rounding mode is nearest-even), and scaling
 *   back; overflow to infinity at the midpoint beyond the largest finite value.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_REFERENCE_NUMBERS_H
#define SGFP4_TESTS_REFERENCE_NUMBERS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ref_bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float ref_float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* (-1)^s * m * 2^-24 for subnormals, (-1)^s * (1024 + m) * 2^(e - 25) for normals. */
static inline double ref_half_value(uint16_t h)
{
    const double sign = (h & 0x8000u) ? -1.0 : 1.0;
    const int e = (h >> 10) & 0x1F;
    const int m = h & 0x3FF;
    if (e == 0x1F)
        return m ? NAN : sign * INFINITY;
    if (e == 0)
        return sign * ldexp(m, -24);
    return sign * ldexp(1024 + m, e - 25);
}

/* Binary16 bits of an exact, finite half value v. */
static inline uint16_t ref_encode_exact_half(double v)
{
    const uint16_t sign = signbit(v) ? 0x8000u : 0;
    v = fabs(v);
    if (v < ldexp(1, -14)) /* subnormal: units of 2^-24 */
        return (uint16_t)(sign | (uint16_t)ldexp(v, 24));
    int e;
    const double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((2 * m - 1) * 1024));
}

/* float -> binary16, nearest even; NaN gives 0x7E00 with the input's sign. */
static inline uint16_t ref_float_to_half(float f)
{
    const double d = f;
    const uint16_t sign = signbit(d) ? 0x8000u : 0;
    if (isnan(d))
        return sign | 0x7E00u;
    const double a = fabs(d);
    if (a >= 65520.0) /* midpoint of 65504 and 65536; the tie goes to even = inf */
        return sign | 0x7C00u;
    if (a == 0)
        return sign;
    int e;
    (void)frexp(a, &e);
    const int quantum_exp = e - 1 < -14 ? -24 : e - 1 - 10;
    const double v = ldexp(rint(ldexp(a, -quantum_exp)), quantum_exp);
    return (uint16_t)(sign | ref_encode_exact_half(v));
}

/* float -> bfloat16, nearest even; NaN gives 0x7FC0 with the input's sign. */
static inline uint16_t ref_float_to_bf16(float f)
{
    const double d = f;
    const uint16_t sign = signbit(d) ? 0x8000u : 0;
    if (isnan(d))
        return sign | 0x7FC0u;
    const double a = fabs(d);
    if (a == 0 || isinf(a))
        return (uint16_t)(ref_bits_of(f) >> 16);
    int e;
    (void)frexp(a, &e);
    const int quantum_exp = e - 1 < -126 ? -133 : e - 1 - 7; /* 8 significant bits */
    const double v = ldexp(rint(ldexp(a, -quantum_exp)), quantum_exp);
    if (v >= 0x1p128)
        return sign | 0x7F80u;
    /* v is a bfloat16 value, so exactly a float whose low 16 bits are zero */
    return (uint16_t)(sign | (ref_bits_of((float)v) >> 16));
}

#endif
