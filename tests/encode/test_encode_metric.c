/* The encoder's error metrics and presets (docs/encoder.md, "Error metrics", "Speed"):
 * importance weights move the error away from the weights that matter, the per-row relative
 * metric protects small rows that share leaves with large ones, the bytes do not depend on
 * the thread count with any of them, bad importance vectors are refused, the fast preset
 * stays close to the best fit, and a leaf fitted in a batch of 16 does not depend on the
 * other leaves of its batch. Every expectation is measured here from the decoded weights.
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

#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "encode/quantize.h"
#include "sgfp4.h"

static float *make_matrix(uint64_t rows, uint64_t cols, uint32_t seed)
{
    float *m = malloc(rows * cols * sizeof *m);
    uint32_t x = seed * 2654435761u + 1u;
    for (uint64_t i = 0; i < rows * cols; i++) {
        float s = 0;
        for (int k = 0; k < 4; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            s += (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        m[i] = 0.05f * s;
    }
    return m;
}

/* Encodes and decodes (the library's decoder); returns the container (sgfp4_free). */
static void *encode_decode(const float *src, uint64_t rows, uint64_t cols,
                           const sgfp4_encode_options *o, float *decoded, size_t *size)
{
    void *bytes = NULL;
    assert_int_equal(sgfp4_encode_alloc(src, rows, cols, 0, &bytes, size, o, NULL), SGFP4_OK);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, *size, SGFP4_PROFILE_V2, rows, cols, &t, NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, decoded, 0, rows * cols * 4, NULL),
                     SGFP4_OK);
    sgfp4_tensor_close(t);
    return bytes;
}

/* Squared error over the columns [c0, c1) (all rows). */
static double column_sse(const float *a, const float *b, uint64_t rows, uint64_t cols,
                         uint64_t c0, uint64_t c1)
{
    double sum = 0;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = c0; c < c1; c++) {
            const double e = (double)a[r * cols + c] - b[r * cols + c];
            sum += e * e;
        }
    return sum;
}

static double row_relative_error(const float *a, const float *b, uint64_t cols, uint64_t r)
{
    double sse = 0, norm = 0;
    for (uint64_t c = 0; c < cols; c++) {
        const double e = (double)a[r * cols + c] - b[r * cols + c];
        sse += e * e;
        norm += (double)a[r * cols + c] * a[r * cols + c];
    }
    return sqrt(sse / norm);
}

static void column_importance_moves_the_error(void **state)
{
    (void)state;
    const uint64_t rows = 512, cols = 256;
    float *m = make_matrix(rows, cols, 3), *plain = malloc(rows * cols * 4),
          *weighted = malloc(rows * cols * 4), importance[256];
    for (uint64_t c = 0; c < cols; c++)
        importance[c] = c % 64 < 32 ? 100.0f : 1.0f; /* half of every block matters */
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.target_bpw = 3.5;
    size_t size_plain, size_weighted;
    void *a = encode_decode(m, rows, cols, &o, plain, &size_plain);
    o.column_importance = importance;
    void *b = encode_decode(m, rows, cols, &o, weighted, &size_weighted);
    double important_plain = 0, important_weighted = 0, total_plain = 0, total_weighted = 0;
    for (uint64_t c0 = 0; c0 < cols; c0 += 64) {
        important_plain += column_sse(m, plain, rows, cols, c0, c0 + 32);
        important_weighted += column_sse(m, weighted, rows, cols, c0, c0 + 32);
    }
    total_plain = column_sse(m, plain, rows, cols, 0, cols);
    total_weighted = column_sse(m, weighted, rows, cols, 0, cols);
    /* the weighted objective: 100 x the important error plus the rest */
    const double j_plain = 100 * important_plain + (total_plain - important_plain);
    const double j_weighted = 100 * important_weighted + (total_weighted - important_weighted);
    assert_true(important_weighted < 0.8 * important_plain);
    assert_true(j_weighted < j_plain);
    assert_true(total_weighted > total_plain); /* the price, paid where it matters less */
    const size_t target = (size_t)(3.5 * rows * cols / 8); /* same rate control, same budget */
    assert_true(size_plain <= target && size_plain >= target * 0.99);
    assert_true(size_weighted <= target && size_weighted >= target * 0.99);
    sgfp4_free(a);
    sgfp4_free(b);
    free(m);
    free(plain);
    free(weighted);
}

/* The mean relative error of the small rows (r % 8 != 7) of the test below. */
static double small_rows_error(const float *m, const float *d, uint64_t rows, uint64_t cols)
{
    double sum = 0;
    for (uint64_t r = 0; r < rows; r++)
        if (r % 8 != 7)
            sum += row_relative_error(m, d, cols, r);
    return sum / (rows * 7 / 8);
}

static void row_importance_and_row_relative_protect_rows(void **state)
{
    (void)state;
    const uint64_t rows = 128, cols = 128;
    float *m = make_matrix(rows, cols, 5), *d = malloc(rows * cols * 4), rimp[128];
    for (uint64_t r = 0; r < rows; r++)
        if (r % 8 != 7) /* every 8th row ten times larger, as attention heads can be */
            for (uint64_t c = 0; c < cols; c++)
                m[r * cols + c] *= 0.1f;
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    size_t size;
    void *a = encode_decode(m, rows, cols, &o, d, &size);
    const double plain = small_rows_error(m, d, rows, cols);
    o.metric = SGFP4_METRIC_ROW_RELATIVE;
    void *b = encode_decode(m, rows, cols, &o, d, &size);
    const double relative = small_rows_error(m, d, rows, cols);
    /* the same through row importance: the small rows 100 times as important */
    o.metric = SGFP4_METRIC_SSE;
    for (uint64_t r = 0; r < rows; r++)
        rimp[r] = r % 8 != 7 ? 100.0f : 1.0f;
    o.row_importance = rimp;
    void *c = encode_decode(m, rows, cols, &o, d, &size);
    const double important = small_rows_error(m, d, rows, cols);
    print_message("small rows' mean relative error: sse %.4f, row-relative %.4f, row importance "
                  "%.4f\n", plain, relative, important);
    assert_true(relative < 0.8 * plain);
    assert_true(important < 0.8 * plain);
    sgfp4_free(a);
    sgfp4_free(b);
    sgfp4_free(c);
    free(m);
    free(d);
}

static void same_bytes_for_any_thread_count(void **state)
{
    (void)state;
    const uint64_t rows = 300, cols = 200; /* edge blocks on both sides */
    float *m = make_matrix(rows, cols, 7), cimp[200], rimp[300];
    for (uint64_t c = 0; c < cols; c++)
        cimp[c] = (float)(1 + c % 7);
    for (uint64_t r = 0; r < rows; r++)
        rimp[r] = (float)(1 + r % 5);
    for (int variant = 0; variant < 4; variant++) {
        sgfp4_encode_options o;
        sgfp4_encode_options_init(&o);
        o.target_bpw = variant == 3 ? 2.5 : 4.5;
        o.metric = variant & 1 ? SGFP4_METRIC_ROW_RELATIVE : SGFP4_METRIC_SSE;
        o.column_importance = variant >= 2 ? cimp : NULL;
        o.row_importance = variant >= 2 ? rimp : NULL;
        o.fit = variant == 2 ? SGFP4_FIT_FAST : SGFP4_FIT_BEST;
        void *first = NULL;
        size_t first_size = 0;
        for (unsigned threads = 1; threads <= 4; threads++) {
            o.threads = threads;
            void *bytes = NULL;
            size_t size = 0;
            assert_int_equal(sgfp4_encode_alloc(m, rows, cols, 0, &bytes, &size, &o, NULL),
                             SGFP4_OK);
            if (!first) {
                first = bytes;
                first_size = size;
                continue;
            }
            assert_int_equal(size, first_size);
            assert_memory_equal(bytes, first, size);
            sgfp4_free(bytes);
        }
        sgfp4_free(first);
    }
    free(m);
}

static void bad_importance_and_options_are_refused(void **state)
{
    (void)state;
    float *m = make_matrix(64, 64, 9), imp[64];
    void *out = NULL;
    size_t size = 0;
    sgfp4_encode_options o;
    for (int c = 0; c < 64; c++)
        imp[c] = 1.0f;
    const float bad_values[] = {NAN, INFINITY, -1.0f};
    for (size_t k = 0; k < sizeof bad_values / sizeof bad_values[0]; k++) {
        imp[5] = bad_values[k];
        sgfp4_encode_options_init(&o);
        o.column_importance = imp;
        assert_int_equal(sgfp4_encode_alloc(m, 64, 64, 0, &out, &size, &o, NULL),
                         SGFP4_ERR_ARGUMENT);
        sgfp4_encode_options_init(&o);
        o.row_importance = imp;
        assert_int_equal(sgfp4_encode_alloc(m, 64, 64, 0, &out, &size, &o, NULL),
                         SGFP4_ERR_ARGUMENT);
    }
    for (int c = 0; c < 64; c++)
        imp[c] = 0.0f; /* nothing matters: no weighting to go by */
    sgfp4_encode_options_init(&o);
    o.column_importance = imp;
    assert_int_equal(sgfp4_encode_alloc(m, 64, 64, 0, &out, &size, &o, NULL), SGFP4_ERR_ARGUMENT);
    imp[0] = 1.0f; /* zeros beside a positive value are fine (floored, docs/encoder.md) */
    assert_int_equal(sgfp4_encode_alloc(m, 64, 64, 0, &out, &size, &o, NULL), SGFP4_OK);
    sgfp4_free(out);
    sgfp4_encode_options_init(&o);
    o.metric = (sgfp4_error_metric)2;
    assert_int_equal(sgfp4_encode_alloc(m, 64, 64, 0, &out, &size, &o, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_encode_options_init(&o);
    o.fit = (sgfp4_fit)3;
    assert_int_equal(sgfp4_encode_alloc(m, 64, 64, 0, &out, &size, &o, NULL), SGFP4_ERR_ARGUMENT);
    free(m);
}

static void fast_preset_stays_close(void **state)
{
    (void)state;
    const uint64_t rows = 256, cols = 256;
    float *m = make_matrix(rows, cols, 11), *d = malloc(rows * cols * 4);
    const double rates[] = {2.5, 3.5, 4.5};
    for (size_t k = 0; k < 3; k++) {
        double err[2];
        for (int fast = 0; fast < 2; fast++) {
            sgfp4_encode_options o;
            sgfp4_encode_options_init(&o);
            o.target_bpw = rates[k];
            o.fit = fast ? SGFP4_FIT_FAST : SGFP4_FIT_BEST;
            size_t size;
            void *bytes = encode_decode(m, rows, cols, &o, d, &size);
            assert_true(size <= (size_t)(rates[k] * rows * cols / 8));
            err[fast] = column_sse(m, d, rows, cols, 0, cols);
            sgfp4_free(bytes);
        }
        assert_true(err[1] >= err[0] * 0.98); /* fewer starts: rarely better */
        assert_true(err[1] <= err[0] * 1.10);
    }
    free(m);
    free(d);
}

/* The stored parameters and the error of two fits agree (field by field: the struct has
 * padding). */
static void assert_same_params(const sgfp4_leaf_params *a, const sgfp4_leaf_params *b)
{
    assert_int_equal(a->scale, b->scale);
    assert_int_equal(a->bias, b->bias);
    assert_int_equal(a->mode, b->mode);
    assert_memory_equal(&a->sse, &b->sse, sizeof a->sse);
}

/* A leaf's fit in a batch of 16 depends on that leaf alone: changing every other 8x8 leaf
 * of the block leaves its parameters (and those of its 4x4 children) exactly as they were. */
static void batch_lanes_are_independent(void **state)
{
    (void)state;
    float *a = make_matrix(64, 64, 13), *b = make_matrix(64, 64, 17);
    float *scratch = malloc(SGFP4_ENCODE_SCRATCH * sizeof(float));
    sgfp4_leaf_params pa[SGFP4_NODES * 2], pb[SGFP4_NODES * 2];
    const unsigned y = 16, x = 24; /* the 8x8 leaf at (2, 3) */
    for (unsigned r = 0; r < 8; r++)
        memcpy(b + (y + r) * 64 + x, a + (y + r) * 64 + x, 8 * sizeof(float));
    sgfp4_analyze_block(a, 64, 64, NULL, NULL, SGFP4_FIT_BEST, SGFP4_PROFILE_V2, scratch, pa);
    sgfp4_analyze_block(b, 64, 64, NULL, NULL, SGFP4_FIT_BEST, SGFP4_PROFILE_V2, scratch, pb);
    const unsigned node8 = sgfp4_node_base[3] + 2 * 8 + 3;
    assert_same_params(&pa[node8 * 2], &pb[node8 * 2]);
    assert_same_params(&pa[node8 * 2 + 1], &pb[node8 * 2 + 1]);
    for (unsigned q = 0; q < 4; q++) {
        const unsigned node4 = sgfp4_node_base[4] + (4 + q / 2) * 16 + 6 + q % 2;
        assert_same_params(&pa[node4 * 2], &pb[node4 * 2]);
    }
    /* and the fit is a real one: the leaf's own error, not a copy of the other's */
    const unsigned other = sgfp4_node_base[3];
    assert_true(pa[other * 2].sse != pb[other * 2].sse);
    free(a);
    free(b);
    free(scratch);
}

/* A caller built before the metric fields (struct_size of that layout) gets their defaults:
 * whatever lies past its struct_size is not read. */
static void older_options_layout_gets_the_defaults(void **state)
{
    (void)state;
    float *m = make_matrix(128, 128, 21);
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    void *a = NULL, *b = NULL;
    size_t sa = 0, sb = 0;
    assert_int_equal(sgfp4_encode_alloc(m, 128, 128, 0, &a, &sa, &o, NULL), SGFP4_OK);
    o.struct_size = offsetof(sgfp4_encode_options, metric);
    o.metric = (sgfp4_error_metric)99;           /* past the old struct: never read */
    o.column_importance = (const float *)(uintptr_t)1;
    assert_int_equal(sgfp4_encode_alloc(m, 128, 128, 0, &b, &sb, &o, NULL), SGFP4_OK);
    assert_int_equal(sa, sb);
    assert_memory_equal(a, b, sa);
    o.struct_size = offsetof(sgfp4_encode_options, metric) + 1; /* no such layout */
    void *c = NULL;
    size_t sc = 0;
    assert_int_equal(sgfp4_encode_alloc(m, 128, 128, 0, &c, &sc, &o, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_free(a);
    sgfp4_free(b);
    free(m);
}

/* sgfp4_bias_candidates gives what two calls of sgfp4_bias_to_half give (v2). */
static void bias_candidates_match_bias_to_half(void **state)
{
    (void)state;
    uint32_t x = 99;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        float v;
        if (i < 65536) { /* every half, and a nudge off it */
            v = sgfp4_half_to_float((uint16_t)i);
            if (!isfinite(v))
                continue;
            v = nextafterf(v, (i & 1) ? INFINITY : -INFINITY);
        } else {
            uint32_t bits = x;
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v))
                continue;
        }
        uint16_t a, b;
        float av, bv;
        sgfp4_bias_candidates(v, &a, &b, &av, &bv);
        assert_int_equal(a, sgfp4_bias_to_half(v, SGFP4_PROFILE_V2, 0));
        assert_int_equal(b, sgfp4_bias_to_half(v, SGFP4_PROFILE_V2, 1));
        assert_true(av == sgfp4_half_to_float(a) && bv == sgfp4_half_to_float(b));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(column_importance_moves_the_error),
        cmocka_unit_test(row_importance_and_row_relative_protect_rows),
        cmocka_unit_test(same_bytes_for_any_thread_count),
        cmocka_unit_test(bad_importance_and_options_are_refused),
        cmocka_unit_test(fast_preset_stays_close),
        cmocka_unit_test(batch_lanes_are_independent),
        cmocka_unit_test(bias_candidates_match_bias_to_half),
        cmocka_unit_test(older_options_layout_gets_the_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
