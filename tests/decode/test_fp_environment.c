/* The caller's floating-point environment is not an input (DECISIONS D1, D7): decode gives
 * the normative bits and encode the same bytes with flush-to-zero, denormals-are-zero and
 * round-toward-zero set on the calling thread, through every backend, dtype and store
 * kind, on one thread and several; and the caller's environment is as it was afterwards.
 * SPDX-License-Identifier: MIT */
#include <fenv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "sgfp4_experimental.h"
#include "support/options.h"
#include "datagen/generator.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define UNUSUAL_MODES "MXCSR flush-to-zero, denormals-are-zero, round toward zero"
static uint64_t fp_control(void) { return _mm_getcsr(); }
static void set_unusual(void) { _mm_setcsr(_mm_getcsr() | 0x8040u | (3u << 13)); }
#elif defined(__aarch64__)
#define UNUSUAL_MODES "FPCR flush-to-zero (FZ, FZ16), round toward zero"
static uint64_t fp_control(void)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
}
static void set_unusual(void)
{
    const uint64_t fpcr = fp_control() | UINT64_C(1) << 24 | UINT64_C(1) << 19 | UINT64_C(3) << 22;
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}
#else
#define UNUSUAL_MODES "round toward zero"
static uint64_t fp_control(void) { return (uint64_t)fegetround(); }
static void set_unusual(void) { fesetround(FE_TOWARDZERO); }
#endif

/* True if rounding is really toward zero now (1 + 1.5 * 2^-24 rounds up to nearest). */
static int rounds_toward_zero(void)
{
    volatile float one = 1.0f, bit = 0x1.8p-24f;
    return one + bit == 1.0f;
}

static const sgfp4_backend backends[] = {SGFP4_BACKEND_SCALAR,  SGFP4_BACKEND_AUTO,
                                         SGFP4_BACKEND_GENERIC, SGFP4_BACKEND_AVX2,
                                         SGFP4_BACKEND_AVX512,  SGFP4_BACKEND_NEON};

static void test_decode(void **state)
{
    (void)state;
    fenv_t caller;
    assert_int_equal(fegetenv(&caller), 0);
    for (unsigned i = 0; i < 12; i++) {
        /* scales and biases over every finite fp16 value: products and sums that round */
        gen_params p = gen_shape_params(i % 3 == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2,
                                        130 + 7 * i, 70 + 13 * i);
        p.halves = GEN_HALVES_ANY;
        size_t size;
        uint8_t *data = gen_container_bytes(&p, 4000 + i, &size);
        assert_non_null(data);
        sgfp4_tensor *t = NULL;
        assert_int_equal(sgfp4_tensor_open(data, size, p.profile, p.rows, p.cols, &t, NULL, NULL),
                         SGFP4_OK);
        const size_t n = (size_t)(p.rows * p.cols);
        uint8_t *want[3], *got = malloc(n * 4);
        assert_non_null(got);
        for (int d = 0; d < 3; d++) {
            const sgfp4_decode_options scalar =
                decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
            want[d] = malloc(n * 4);
            assert_non_null(want[d]);
            assert_int_equal(sgfp4_decode(t, (sgfp4_dtype)d, want[d], 0, n * 4, &scalar),
                             SGFP4_OK);
        }
        set_unusual();
        assert_true(rounds_toward_zero());
        const uint64_t unusual = fp_control();
        unsigned ran = 0;
        for (unsigned b = 0; b < sizeof backends / sizeof backends[0]; b++) {
            if (!sgfp4_decode_backend_name(backends[b]))
                continue;
            for (unsigned k = 0; k < 6; k++) {
                const sgfp4_dtype dtype = (sgfp4_dtype)(k % 3);
                const sgfp4_decode_options o = decode_options(
                    backends[b], k < 3 ? 1 : 3, k % 2 ? SGFP4_STORE_STREAMING : SGFP4_STORE_CACHED);
                const size_t bytes = n * sgfp4_dtype_size(dtype);
                memset(got, 0x5A, bytes);
                assert_int_equal(sgfp4_decode(t, dtype, got, 0, bytes, &o), SGFP4_OK);
                if (memcmp(got, want[dtype], bytes) != 0)
                    fail_msg("%s, dtype %d, %u threads, under %s: not the normative bits",
                             sgfp4_decode_backend_name(backends[b]), (int)dtype, o.threads,
                             UNUSUAL_MODES);
                const uint64_t rows[3] = {p.rows - 1, 0, p.rows / 2};
                assert_int_equal(sgfp4_decode_gather(t, rows, 3, dtype, got, 0, bytes, &o),
                                 SGFP4_OK);
                const size_t row_bytes = (size_t)p.cols * sgfp4_dtype_size(dtype);
                for (int r = 0; r < 3; r++)
                    assert_memory_equal(got + r * row_bytes, want[dtype] + rows[r] * row_bytes,
                                        row_bytes);
                /* the caller's modes are back */
                assert_int_equal(fp_control(), unusual);
                ran++;
            }
        }
        assert_int_equal(fesetenv(&caller), 0);
        assert_true(ran >= 3 * 6);
        for (int d = 0; d < 3; d++)
            free(want[d]);
        free(got);
        sgfp4_tensor_close(t);
        free(data);
    }
}

/* The encoder's output, both profiles and policies, is the same bytes under unusual modes. */
static void test_encode(void **state)
{
    (void)state;
    fenv_t caller;
    assert_int_equal(fegetenv(&caller), 0);
    const uint64_t rows = 96, cols = 160;
    float *w = gen_llm_weights(rows, cols, 7);
    assert_non_null(w);
    for (unsigned k = 0; k < 4; k++) {
        sgfp4_encode_options eo;
        sgfp4_encode_options_init(&eo);
        eo.profile = k == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
        eo.target_bpw = k == 1 ? 2.5 : 4.5;
        eo.policy = k == 3 ? SGFP4_POLICY_THRESHOLD : SGFP4_POLICY_RATE;
        eo.threads = k % 2 ? 3 : 1;
        void *want = NULL, *got = NULL;
        size_t want_size = 0, got_size = 0;
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &want, &want_size, &eo, NULL),
                         SGFP4_OK);
        set_unusual();
        const uint64_t unusual = fp_control();
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &got, &got_size, &eo, NULL),
                         SGFP4_OK);
        assert_int_equal(fp_control(), unusual);
        assert_int_equal(fesetenv(&caller), 0);
        assert_int_equal(got_size, want_size);
        if (memcmp(got, want, want_size) != 0)
            fail_msg("encode (profile %d, bpw %.1f) under %s: other bytes", (int)eo.profile,
                     eo.target_bpw, UNUSUAL_MODES);
        sgfp4_free(want);
        sgfp4_free(got);
    }
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_encode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
