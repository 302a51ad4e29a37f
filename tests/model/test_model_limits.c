/* The safetensors header limits: the header length (sgfp4_limits.max_header_bytes: refused
 * exactly past the limit, 0 means the 100 MB default, and a length field that claims more
 * than the file holds is refused without reading or allocating it); the tensor count
 * (sgfp4_model_open_options.max_tensors), refused before the JSON is parsed; the nesting and
 * array lengths no header has; and the cost of a header of n tensors, O(n log n).
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4_model.h"
#include "tool_clock.h"

/* A safetensors file holding one U8 [4] tensor, its header padded with `pad` spaces. */
static uint8_t *model_file(size_t pad, size_t *size, uint64_t *header_bytes)
{
    const char json[] = "{\"t\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}";
    const size_t n = sizeof json - 1 + pad;
    *size = 8 + n + 4;
    *header_bytes = n;
    uint8_t *f = malloc(*size);
    assert_non_null(f);
    for (int k = 0; k < 8; k++)
        f[k] = (uint8_t)((uint64_t)n >> (8 * k));
    memcpy(f + 8, json, sizeof json - 1);
    memset(f + 8 + sizeof json - 1, ' ', pad);
    memcpy(f + 8 + n, "\x01\x02\x03\x04", 4);
    return f;
}

static sgfp4_status open_with_header_limit(const uint8_t *f, size_t size, uint64_t limit)
{
    sgfp4_model_open_options options;
    sgfp4_model_open_options_init(&options);
    options.limits.max_header_bytes = limit;
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open_memory(f, size, &m, &options, &diag);
    if (s != SGFP4_OK)
        assert_null(m);
    sgfp4_model_close(m);
    return s;
}

static void header_limit_is_exact(void **state)
{
    (void)state;
    size_t size;
    uint64_t header;
    uint8_t *f = model_file(1000, &size, &header);
    assert_int_equal(open_with_header_limit(f, size, header - 1), SGFP4_ERR_LIMIT);
    assert_int_equal(open_with_header_limit(f, size, header), SGFP4_OK);
    assert_int_equal(open_with_header_limit(f, size, 0), SGFP4_OK); /* the default */
    free(f);
}

static void header_length_past_the_file_is_refused(void **state)
{
    (void)state;
    size_t size;
    uint64_t header;
    uint8_t *f = model_file(0, &size, &header);
    /* 2^63, 2^40 (over the default limit), and one byte more than the file holds */
    const uint64_t claims[] = {UINT64_C(1) << 63, UINT64_C(1) << 40, size - 8 + 1, UINT64_MAX};
    for (size_t k = 0; k < sizeof claims / sizeof claims[0]; k++) {
        for (int b = 0; b < 8; b++)
            f[b] = (uint8_t)(claims[k] >> (8 * b));
        const sgfp4_status s = open_with_header_limit(f, size, UINT64_MAX);
        assert_true(s == SGFP4_ERR_TRUNCATED || s == SGFP4_ERR_LIMIT);
        assert_int_equal(open_with_header_limit(f, size, 0),
                         claims[k] > 100000000 ? SGFP4_ERR_LIMIT : SGFP4_ERR_TRUNCATED);
    }
    free(f);
}

/* A file of `n` F32 [1] tensors named t0000000.., listed in reverse data order (so the sort
 * has work to do), with __metadata__ in the middle when `meta`. */
static uint8_t *many_tensors(size_t n, bool meta, size_t *size)
{
    const size_t cap = 64 + n * 72;
    char *h = malloc(cap), *p = h;
    assert_non_null(h);
    *p++ = '{';
    for (size_t k = 0; k < n; k++) {
        const size_t at = n - 1 - k; /* data position */
        if (k)
            *p++ = ',';
        if (meta && k == n / 2)
            p += sprintf(p, "\"__metadata__\":{\"k\":\"v\"},");
        p += sprintf(p, "\"t%07zu\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}",
                     k, 4 * at, 4 * at + 4);
    }
    *p++ = '}';
    const size_t len = (size_t)(p - h);
    *size = 8 + len + 4 * n;
    uint8_t *f = calloc(1, *size);
    assert_non_null(f);
    for (int k = 0; k < 8; k++)
        f[k] = (uint8_t)((uint64_t)len >> (8 * k));
    memcpy(f + 8, h, len);
    free(h);
    return f;
}

static sgfp4_status open_with_tensor_limit(const uint8_t *f, size_t size, uint64_t limit,
                                           sgfp4_diag *diag)
{
    sgfp4_model_open_options options;
    sgfp4_model_open_options_init(&options);
    options.max_tensors = limit;
    sgfp4_model *m = NULL;
    const sgfp4_status s = sgfp4_model_open_memory(f, size, &m, &options, diag);
    if (s != SGFP4_OK)
        assert_null(m);
    sgfp4_model_close(m);
    return s;
}

static void tensor_limit_is_exact(void **state)
{
    (void)state;
    for (int meta = 0; meta < 2; meta++) {
        size_t size;
        uint8_t *f = many_tensors(10, meta, &size);
        sgfp4_diag diag;
        /* __metadata__ is not a tensor */
        assert_int_equal(open_with_tensor_limit(f, size, 9, &diag), SGFP4_ERR_LIMIT);
        assert_non_null(strstr(diag.message, "more than 9 tensors"));
        assert_int_equal(open_with_tensor_limit(f, size, 10, &diag), SGFP4_OK);
        assert_int_equal(open_with_tensor_limit(f, size, 0, &diag), SGFP4_OK); /* default */
        free(f);
    }
    /* The default is 1,000,000: one key more is refused by the pre-scan, before jansson
     * parses anything (the keys need not even be tensors: "0000000":0,...). */
    const size_t keys = SGFP4_MODEL_DEFAULT_MAX_TENSORS + 2, len = 2 + keys * 12 - 1;
    uint8_t *f = malloc(8 + len);
    assert_non_null(f);
    for (int b = 0; b < 8; b++)
        f[b] = (uint8_t)((uint64_t)len >> (8 * b));
    char *p = (char *)f + 8;
    *p++ = '{';
    for (size_t k = 0; k < keys; k++) {
        memcpy(p, "\"0000000\":0,", 12);
        for (size_t v = k, d = 7; d > 0; v /= 10, d--)
            p[d] = (char)('0' + v % 10);
        p += 12;
    }
    p[-1] = '}';
    sgfp4_diag diag;
    assert_int_equal(open_with_tensor_limit(f, 8 + len, 0, &diag), SGFP4_ERR_LIMIT);
    assert_non_null(strstr(diag.message, "max_tensors"));
    assert_non_null(strstr(diag.message, "more than 1000000 tensors"));
    free(f);
}

static void headers_no_writer_makes_are_refused_early(void **state)
{
    (void)state;
    const char *bad[][2] = {
        /* nesting below a shape */
        {"{\"t\":{\"dtype\":\"U8\",\"shape\":[[4]],\"data_offsets\":[0,4]}}", "deeper"},
        /* an array far longer than a shape can be */
        {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
         "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,4],"
         "\"data_offsets\":[0,4]}}", "more than 64 elements"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const size_t n = strlen(bad[k][0]);
        uint8_t *f = calloc(1, 8 + n + 4);
        for (int b = 0; b < 8; b++)
            f[b] = (uint8_t)((uint64_t)n >> (8 * b));
        memcpy(f + 8, bad[k][0], n);
        sgfp4_model *m = NULL;
        sgfp4_diag diag;
        assert_int_not_equal(sgfp4_model_open_memory(f, 8 + n + 4, &m, NULL, &diag), SGFP4_OK);
        if (!strstr(diag.message, bad[k][1]))
            fail_msg("%s: %s", bad[k][0], diag.message);
        assert_true(diag.offset > 8 && diag.offset < (int64_t)(8 + n));
        free(f);
    }
}

/* The fastest of five opens (and closes) of the file. */
static double open_seconds(const uint8_t *f, size_t size, size_t n)
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        const double t0 = tool_cpu_now();
        sgfp4_model *m = NULL;
        assert_int_equal(sgfp4_model_open_memory(f, size, &m, NULL, NULL), SGFP4_OK);
        assert_int_equal(sgfp4_model_tensor_count(m), n);
        assert_string_equal(sgfp4_model_tensor_at(m, 0)->name, n == 10000 ? "t0009999" : "t0099999");
        sgfp4_model_close(m);
        const double t = tool_cpu_now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static void header_cost_is_not_quadratic(void **state)
{
    (void)state;
    /* 100,000 tensors against 10,000: n log n makes the ratio about 12 (13-15 measured: the
     * larger tree misses the caches more), a quadratic step 100 or more. The bound is
     * generous for a loaded machine; the absolute time is a benchmark (docs/benchmarks.md),
     * not asserted here. */
    size_t small_size, large_size;
    uint8_t *small = many_tensors(10000, true, &small_size);
    uint8_t *large = many_tensors(100000, true, &large_size);
    const double t_small = open_seconds(small, small_size, 10000);
    const double t_large = open_seconds(large, large_size, 100000);
    print_message("open: 10,000 tensors %.4f s, 100,000 tensors %.4f s (ratio %.1f)\n", t_small,
                  t_large, t_large / t_small);
    assert_true(t_large < 50 * t_small);
    free(small);
    free(large);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_limit_is_exact),
        cmocka_unit_test(header_length_past_the_file_is_refused),
        cmocka_unit_test(tensor_limit_is_exact),
        cmocka_unit_test(headers_no_writer_makes_are_refused_early),
        cmocka_unit_test(header_cost_is_not_quadratic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
