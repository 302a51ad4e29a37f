/* Edge padding is "don't care" (docs/encoder.md, "Edge padding"): the zeros that fill edge
 * macroblocks up to the 64-multiple grid are cropped by the decoder, so they must not pull
 * any fit. The data here sit far from zero (around 100, spread about 1): a fit that counted
 * the padding zeros would stretch its grid from 0 to 100 and lose the real weights.
 * Goldens, independent of the encoder's numbers:
 * - a 32x64 tensor A is as good as the 64x64 tensor [A; A] (the same rows twice), whose
 *   best fits are those of A (duplicating every weight does not move a least-squares or
 *   nearest-level optimum);
 * - a tensor of any shape is as good on its weights as the same weights embedded in a full
 *   64-multiple tensor (the rest filled with more of the same distribution), given the same
 *   container bytes (rate policy) or per leaf (threshold policy, v1).
 * Every container opens strictly (round_trip) and the bytes do not depend on threads.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "support/options.h"

#define OFFSET 100.0f

/* Deterministic values around OFFSET with a spread of about 1 (sum of uniforms). */
static void fill(float *m, uint64_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 7u;
    for (uint64_t i = 0; i < n; i++) {
        float s = 0;
        for (int k = 0; k < 4; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            s += (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        m[i] = OFFSET + 1.7f * s;
    }
}

static sgfp4_encode_options opts(sgfp4_profile profile, sgfp4_policy policy, double bpw,
                                 unsigned threads)
{
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.profile = profile;
    o.policy = policy;
    o.target_bpw = bpw;
    o.threads = threads;
    return o;
}

/* Encodes (rows x cols, row stride `stride`), opens strictly, decodes with the scalar
 * oracle; returns the RMSE over the top-left region_rows x region_cols. *bytes gets the
 * container (the caller frees it with sgfp4_free) and *size its size. */
static double region_rmse(const float *src, uint64_t rows, uint64_t cols,
                          const sgfp4_encode_options *o, uint64_t region_rows,
                          uint64_t region_cols, void **bytes, size_t *size)
{
    assert_int_equal(sgfp4_encode_alloc(src, rows, cols, 0, bytes, size, o, NULL), SGFP4_OK);
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(*bytes, *size, o->profile, rows, cols, &t, NULL, &diag) != SGFP4_OK)
        fail_msg("strict open failed: %s", diag.message);
    float *out = malloc(rows * cols * sizeof *out);
    const sgfp4_decode_options d = decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, rows * cols * 4, &d), SGFP4_OK);
    sgfp4_tensor_close(t);
    double sse = 0;
    for (uint64_t r = 0; r < region_rows; r++)
        for (uint64_t c = 0; c < region_cols; c++) {
            const double e = (double)src[r * cols + c] - out[r * cols + c];
            sse += e * e;
        }
    free(out);
    return sqrt(sse / (double)(region_rows * region_cols));
}

static double rmse_of(const float *src, uint64_t rows, uint64_t cols,
                      const sgfp4_encode_options *o, uint64_t region_rows, uint64_t region_cols,
                      size_t *size)
{
    void *bytes = NULL;
    size_t got = 0;
    const double e = region_rmse(src, rows, cols, o, region_rows, region_cols, &bytes, &got);
    sgfp4_free(bytes);
    if (size)
        *size = got;
    return e;
}

/* A 32x64 tensor (stories260K's attention k/v shape: half its block is padding) against
 * [A; A]: the same error per weight with v1, the threshold policy, and the rate policy when
 * both get their finest trees. */
static void half_block_is_as_good_as_its_duplicate(void **state)
{
    (void)state;
    float a[32 * 64], aa[64 * 64];
    fill(a, 32 * 64, 1);
    memcpy(aa, a, sizeof a);
    memcpy(aa + 32 * 64, a, sizeof a);
    const sgfp4_encode_options cases[] = {
        opts(SGFP4_PROFILE_V1, SGFP4_POLICY_RATE, 4.5, 1),
        opts(SGFP4_PROFILE_V2, SGFP4_POLICY_THRESHOLD, 0, 1),
        opts(SGFP4_PROFILE_V2, SGFP4_POLICY_RATE, 16.0, 1), /* finest trees for both */
    };
    for (unsigned k = 0; k < 3; k++) {
        const double alone = rmse_of(a, 32, 64, &cases[k], 32, 64, NULL);
        const double doubled = rmse_of(aa, 64, 64, &cases[k], 64, 64, NULL);
        print_message("32x64 case %u: RMSE alone %.5f, as [A; A] %.5f\n", k, alone, doubled);
        assert_true(alone <= 1.01 * doubled && alone >= 0.99 * doubled);
        assert_true(alone < 0.2); /* a fit pulled toward the zeros would be near 1 */
    }
    /* At 4.25 bits per weight the whole tensor gets at most 1088 bytes: every record then
     * is T158 (see docs/encoder.md), yet the real weights still get the ternary optimum of
     * their own distribution (about 0.44 of the spread), not a grid reaching zero. */
    const sgfp4_encode_options low = opts(SGFP4_PROFILE_V2, SGFP4_POLICY_RATE, 4.25, 1);
    size_t size = 0;
    const double e = rmse_of(a, 32, 64, &low, 32, 64, &size);
    print_message("32x64 at 4.25: RMSE %.5f, %zu bytes\n", e, size);
    assert_true(size * 8.0 <= 4.25 * 32 * 64);
    assert_true(e < 0.6 * 0.85); /* spread (std) of the data: 1.7 / sqrt(3) = 0.98 */
}

/* Shapes with padding below, to the right, or both: as good on the real weights as the same
 * weights inside a full 64-multiple tensor. */
static void edge_shapes_are_as_good_as_embedded(void **state)
{
    (void)state;
    const uint64_t shapes[][2] = {{32, 64}, {3, 130}, {65, 64}, {130, 200}};
    for (unsigned k = 0; k < 4; k++) {
        const uint64_t rows = shapes[k][0], cols = shapes[k][1];
        const uint64_t full_rows = (rows + 63) / 64 * 64, full_cols = (cols + 63) / 64 * 64;
        float *a = malloc(rows * cols * sizeof *a);
        float *b = malloc(full_rows * full_cols * sizeof *b);
        fill(b, full_rows * full_cols, 20 + k); /* the embedding's own weights */
        fill(a, rows * cols, 40 + k);
        for (uint64_t r = 0; r < rows; r++)
            memcpy(b + r * full_cols, a + r * cols, cols * sizeof *a);
        const double grid_share = (double)(full_rows * full_cols) / (double)(rows * cols);
        /* v1 and the threshold policy decide per leaf; the rate policy gets the same
         * container bytes as the embedding at 4.5 bits per weight (or, where that is above
         * the 64 bits per weight the API takes, the embedding gets the bytes of 64). */
        const double bpw_alone = fmin(64.0, 4.5 * grid_share);
        sgfp4_encode_options alone[3] = {
            opts(SGFP4_PROFILE_V1, SGFP4_POLICY_RATE, 4.5, 1),
            opts(SGFP4_PROFILE_V2, SGFP4_POLICY_THRESHOLD, 0, 1),
            opts(SGFP4_PROFILE_V2, SGFP4_POLICY_RATE, bpw_alone, 1),
        };
        const sgfp4_encode_options embedded[3] = {
            alone[0], alone[1],
            opts(SGFP4_PROFILE_V2, SGFP4_POLICY_RATE, bpw_alone / grid_share, 1)};
        for (unsigned c = 0; c < 3; c++) {
            size_t size_alone = 0, size_embedded = 0;
            const double ea = rmse_of(a, rows, cols, &alone[c], rows, cols, &size_alone);
            const double eb =
                rmse_of(b, full_rows, full_cols, &embedded[c], rows, cols, &size_embedded);
            print_message("%llux%llu case %u: RMSE alone %.5f (%zu B), embedded %.5f (%zu B)\n",
                          (unsigned long long)rows, (unsigned long long)cols, c, ea, size_alone,
                          eb, size_embedded);
            assert_true(ea <= 1.05 * eb);
            if (c == 2) { /* within the same byte budget (3x130: both at their cheapest) */
                const double budget = bpw_alone * (double)(rows * cols) / 8.0 + 1e-6;
                assert_true((double)size_alone <= fmax(budget, (double)size_embedded));
            }
            /* The same bytes for any thread count. */
            sgfp4_encode_options threaded = alone[c];
            threaded.threads = 3;
            void *one = NULL, *three = NULL;
            size_t n1 = 0, n3 = 0;
            assert_int_equal(sgfp4_encode_alloc(a, rows, cols, 0, &one, &n1, &alone[c], NULL),
                             SGFP4_OK);
            assert_int_equal(sgfp4_encode_alloc(a, rows, cols, 0, &three, &n3, &threaded, NULL),
                             SGFP4_OK);
            assert_int_equal(n1, n3);
            assert_memory_equal(one, three, n1);
            sgfp4_free(one);
            sgfp4_free(three);
        }
        free(a);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(half_block_is_as_good_as_its_duplicate),
        cmocka_unit_test(edge_shapes_are_as_good_as_embedded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
