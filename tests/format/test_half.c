/* Exact conversions (src/format/half.c) against independent references written here:
 *   - half -> float over all 65536 bit patterns, against the formula
 *     (-1)^s * m * 2^-24 (subnormal) or (-1)^s * (1024 + m) * 2^(e - 25) evaluated with ldexp;
 *   - float -> half and float -> bf16 round-to-nearest-even, against a double-based reference
 *     (scale by the target's quantum, rint() in the default nearest-even mode, scale back),
 *     on every half midpoint and its float neighbours, subnormals, overflow, specials and
 *     a million pseudo-random floats of every exponent.
 * SPDX-License-Identifier: MIT */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "datagen/reference_numbers.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint32_t next_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* ---- half -> float ---- */

static void half_to_float_all_65536(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        const float got = sgfp4_half_to_float((uint16_t)h);
        const double want = ref_half_value((uint16_t)h);
        if (isnan(want)) {
            if (!isnan(got) || (ref_bits_of(got) >> 31) != (h >> 15))
                fail_msg("half 0x%04x: got 0x%08x, want a NaN of the same sign", h,
                         ref_bits_of(got));
            continue;
        }
        /* every half is exactly a float, so (float)want is exact; compare bits (+-0) */
        if (ref_bits_of(got) != ref_bits_of((float)want))
            fail_msg("half 0x%04x: got 0x%08x (%.10g), want 0x%08x (%.10g)", h, ref_bits_of(got),
                     (double)got, ref_bits_of((float)want), want);
    }
}

/* ---- float -> half ---- */

static void check_half(float f)
{
    const uint16_t got = sgfp4_float_to_half(f);
    const uint16_t want = ref_float_to_half(f);
    if (isnan(f)) {
        if ((got & 0x7C00u) != 0x7C00u || (got & 0x3FFu) == 0 ||
            (got >> 15) != (ref_bits_of(f) >> 31))
            fail_msg("float 0x%08x (NaN): got half 0x%04x, want a NaN", ref_bits_of(f), got);
        return;
    }
    if (got != want)
        fail_msg("float 0x%08x (%.10g): got half 0x%04x, want 0x%04x", ref_bits_of(f), (double)f,
                 got, want);
}

static void float_to_half_rne(void **state)
{
    (void)state;
    assert_int_equal(fegetround(), FE_TONEAREST);
    /* every half, the exact midpoint to its successor, and the floats next to both */
    for (uint32_t h = 0; h < 0x7C00; h++) {
        for (int s = 0; s < 2; s++) {
            const double sign = s ? -1.0 : 1.0;
            const double lo = ref_half_value((uint16_t)h);
            const double hi = h + 1 == 0x7C00 ? 65536.0 : ref_half_value((uint16_t)(h + 1));
            const float exact = (float)(sign * lo);
            const float mid = (float)(sign * (lo + hi) / 2); /* exact: 12 significant bits */
            check_half(exact);
            check_half(mid);
            check_half(nextafterf(mid, 0.0f));
            check_half(nextafterf(mid, sign * INFINITY));
            check_half(nextafterf(exact, 0.0f));
            check_half(nextafterf(exact, sign * INFINITY));
        }
    }
    /* specials, overflow edge, underflow edge */
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f,
                              65519.99f, 65520.0f, -65520.0f, 65535.0f, 1e10f, -3e38f,
                              0x1p-24f, 0x1p-25f, 0x1.000002p-25f, -0x1p-25f, 0x1.8p-25f,
                              0x1p-26f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1.ffcp-15f,
                              0x1.ffep-15f, 0x1p-14f, FLT_MAX};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        check_half(specials[i]);
    /* a million random bit patterns: every exponent, sign, NaN payloads */
    for (int i = 0; i < 1000000; i++)
        check_half(ref_float_of(next_u32()));
    /* and a million concentrated in the half range (exponents -30..16) */
    for (int i = 0; i < 1000000; i++) {
        const uint32_t u = next_u32();
        const uint32_t exp = 97 + (u >> 8) % 47;
        check_half(ref_float_of((u & 0x80000000u) | exp << 23 | (next_u32() & 0x7FFFFFu)));
    }
}

/* ---- float -> bf16 ---- */

static void check_bf16(float f)
{
    const uint16_t got = sgfp4_float_to_bf16(f);
    if (isnan(f)) {
        if ((got & 0x7F80u) != 0x7F80u || (got & 0x7Fu) == 0 ||
            (got >> 15) != (ref_bits_of(f) >> 31))
            fail_msg("float 0x%08x (NaN): got bf16 0x%04x, want a NaN", ref_bits_of(f), got);
        return;
    }
    const uint16_t want = ref_float_to_bf16(f);
    if (got != want)
        fail_msg("float 0x%08x (%.10g): got bf16 0x%04x, want 0x%04x", ref_bits_of(f), (double)f,
                 got, want);
}

static void float_to_bf16_rne(void **state)
{
    (void)state;
    /* every bf16 value, midpoints (ties: low 16 bits 0x8000) and their neighbours */
    for (uint32_t b = 0; b < 0x7F80; b++) {
        for (uint32_t s = 0; s < 2; s++) {
            const uint32_t base = (s << 31) | b << 16;
            const uint32_t cases[] = {base, base | 0x8000u, base | 0x7FFFu, base | 0x8001u,
                                      base | 0x0001u, base | 0xFFFFu};
            for (size_t i = 0; i < 6; i++)
                check_bf16(ref_float_of(cases[i]));
        }
    }
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN,
                              ref_float_of(0x7F7FFFFFu), ref_float_of(0x7F7F8000u),
                              ref_float_of(0x7F7F7FFFu), ref_float_of(0xFF7F8000u),
                              ref_float_of(0x00000001u), ref_float_of(0x00008000u),
                              ref_float_of(0x00018000u), ref_float_of(0x7F800001u)};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        check_bf16(specials[i]);
    for (int i = 0; i < 1000000; i++)
        check_bf16(ref_float_of(next_u32()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(half_to_float_all_65536),
        cmocka_unit_test(float_to_half_rne),
        cmocka_unit_test(float_to_bf16_rne),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
