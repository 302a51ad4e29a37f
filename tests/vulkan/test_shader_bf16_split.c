/* The bf16 rounding of the Vulkan decode's RTE pipeline (shaders/decode_body.glsl,
 * f32_to_bf16_split), evaluated here in binary32 with round to nearest even: Veltkamp's split
 * c = x * 65537, h = c - (c - x), whose high part h is x rounded to 8 significant bits, ties
 * to even. Checked against sgfp4_float_to_bf16 (itself checked against an independent
 * reference in test_half.c) on the domain the shader relies on, every normal binary32 below
 * 2^104 in magnitude (weights are 0 or between 2^-24 and 2^20): every value at and next to
 * each bf16 rounding boundary (the kept part's last bit either way, the dropped half at,
 * just below and just above one half, and at 0), signed zeros, and four million
 * pseudo-random values of every exponent.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The shader's three operations; volatile keeps each a separate binary32 operation (no
 * contraction of c - x into an fma, no reassociation). */
static uint32_t bf16_split(uint32_t x_bits)
{
    const float x = float_of(x_bits);
    volatile float c = x * 65537.0f;
    volatile float d = c - x;
    volatile float h = c - d;
    return bits_of(h);
}

static int check(uint32_t x_bits)
{
    const uint32_t want = (uint32_t)sgfp4_float_to_bf16(float_of(x_bits)) << 16;
    const uint32_t got = bf16_split(x_bits);
    if (got != want)
        print_error("x = 0x%08x: split 0x%08x, sgfp4_float_to_bf16 0x%08x\n", x_bits, got, want);
    return got == want;
}

/* Biased exponent fields 1..230: the normal values below 2^104. */
enum { EXP_FIRST = 1, EXP_LAST = 230 };

static void boundaries(void **state)
{
    (void)state;
    static const uint32_t low[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    unsigned bad = 0, checked = 0;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t e = EXP_FIRST; e <= EXP_LAST; e++)
            for (uint32_t kept = 0; kept < 128; kept++) /* the 7 stored bf16 mantissa bits */
                for (size_t i = 0; i < sizeof low / sizeof low[0]; i++) {
                    const uint32_t x = sign << 31 | e << 23 | kept << 16 | low[i];
                    bad += !check(x);
                    checked++;
                }
    bad += !check(0x00000000u) + !check(0x80000000u);
    assert_int_equal(checked, 2 * 230 * 128 * 6);
    assert_int_equal(bad, 0);
}

static void random_values(void **state)
{
    (void)state;
    uint64_t s = 0x9E3779B97F4A7C15u;
    unsigned bad = 0;
    for (unsigned i = 0; i < 4000000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const uint32_t r = (uint32_t)(s >> 16);
        const uint32_t e = EXP_FIRST + (uint32_t)(s >> 48) % (EXP_LAST - EXP_FIRST + 1);
        bad += !check((r & 0x807FFFFFu) | e << 23);
    }
    assert_int_equal(bad, 0);
}

/* The domain's edge is real: subnormals round differently (the split rounds relative to the
 * value, bf16 at the fixed quantum of the smallest binade), which is why the shader's domain
 * excludes them. */
static void subnormals_differ(void **state)
{
    (void)state;
    unsigned differ = 0;
    for (uint32_t m = 1; m < 0x800000u; m += 97)
        differ += bf16_split(m) != (uint32_t)sgfp4_float_to_bf16(float_of(m)) << 16;
    assert_true(differ > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(boundaries),
        cmocka_unit_test(random_values),
        cmocka_unit_test(subnormals_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
