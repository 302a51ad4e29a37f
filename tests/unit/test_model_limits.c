/* The safetensors header limit (sgfp4_limits.max_header_bytes) and hostile header lengths
 * (issue 7, item 3): refused exactly past the limit, 0 means the 100 MB default, and a length
 * field that claims more than the file holds is refused without reading or allocating it.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4_model.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_limit_is_exact),
        cmocka_unit_test(header_length_past_the_file_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
