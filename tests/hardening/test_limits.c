/* Resource limits and size arithmetic on hostile shapes and containers:
 * sgfp4_limits fields refuse with SGFP4_ERR_LIMIT exactly past their value; 0 means the
 * documented default; shapes whose sizes overflow are refused without wrapping; opening
 * allocates only the view and its copy of the places (sized by the blocks the bytes really
 * hold), whatever the container or the shape claims; decode arguments whose byte counts
 * overflow are refused.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"

static void put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* A valid v1 container of `blocks` FP4 blocks: scale 1.0, bias 0, offsets b * 2048. Written
 * from the framing of DECISIONS D3, not with the library. */
static uint8_t *v1_container(uint64_t blocks, size_t *size)
{
    *size = (size_t)blocks * 2056;
    uint8_t *c = calloc(1, *size);
    assert_non_null(c);
    for (uint64_t b = 0; b < blocks; b++) {
        put_u32le(c + 4 * b, 0x3C000000u);
        put_u32le(c + 4 * blocks + 4 * b, (uint32_t)(b * 2048));
    }
    return c;
}

static sgfp4_status open_with(const void *data, size_t size, sgfp4_profile profile,
                              uint64_t rows, uint64_t cols, const sgfp4_limits *limits)
{
    sgfp4_open_options options;
    sgfp4_open_options_init(&options);
    if (limits)
        options.limits = *limits;
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_tensor_open(data, size, profile, rows, cols, &t, &options,
                                             &diag);
    if (s != SGFP4_OK) {
        assert_null(t);
        assert_int_equal(diag.status, s);
    }
    sgfp4_tensor_close(t);
    return s;
}

static void max_elements_is_exact(void **state)
{
    (void)state;
    size_t size;
    uint8_t *c = v1_container(2, &size); /* 64 x 128 = 8192 elements */
    sgfp4_limits limits = {8191, 0, 0};
    assert_int_equal(open_with(c, size, SGFP4_PROFILE_V1, 64, 128, &limits), SGFP4_ERR_LIMIT);
    limits.max_elements = 8192;
    assert_int_equal(open_with(c, size, SGFP4_PROFILE_V1, 64, 128, &limits), SGFP4_OK);
    limits.max_elements = 0; /* the default */
    assert_int_equal(open_with(c, size, SGFP4_PROFILE_V1, 64, 128, &limits), SGFP4_OK);
    /* the cropped shape counts, not the padded grid: 63 x 128 = 8064 */
    limits.max_elements = 8064;
    assert_int_equal(open_with(c, size, SGFP4_PROFILE_V1, 63, 128, &limits), SGFP4_OK);
    free(c);
}

static void max_container_bytes_is_exact(void **state)
{
    (void)state;
    size_t size;
    uint8_t *c = v1_container(1, &size);
    sgfp4_limits limits = {0, size - 1, 0};
    assert_int_equal(open_with(c, size, SGFP4_PROFILE_V1, 64, 64, &limits), SGFP4_ERR_LIMIT);
    limits.max_container_bytes = size;
    assert_int_equal(open_with(c, size, SGFP4_PROFILE_V1, 64, 64, &limits), SGFP4_OK);
    free(c);
}

static void default_element_limit_refuses_before_reading(void **state)
{
    (void)state;
    /* 2^17 x 2^18 = 2^35 elements > the 2^34 default: refused from the shape alone, so an
     * 8-byte buffer is never read past. */
    const uint8_t tiny[8] = {0};
    assert_int_equal(open_with(tiny, sizeof tiny, SGFP4_PROFILE_V1, UINT64_C(1) << 17,
                               UINT64_C(1) << 18, NULL),
                     SGFP4_ERR_LIMIT);
    /* Raised explicitly, the same shape reaches the length check. */
    sgfp4_limits limits = {UINT64_C(1) << 35, 0, 0};
    assert_int_equal(open_with(tiny, sizeof tiny, SGFP4_PROFILE_V1, UINT64_C(1) << 17,
                               UINT64_C(1) << 18, &limits),
                     SGFP4_ERR_V1_LENGTH);
}

static void overflowing_shapes_are_refused(void **state)
{
    (void)state;
    const uint8_t tiny[16] = {'S', 'G', 'F', '4', 2};
    const uint64_t big[][2] = {
        {UINT64_MAX, 1},
        {1, UINT64_MAX},
        {UINT64_MAX, UINT64_MAX},
        {UINT64_C(1) << 32, UINT64_C(1) << 32}, /* the product wraps to 0 in 64 bits */
        {(UINT64_C(1) << 32) + 1, (UINT64_C(1) << 32) - 1},
        {UINT64_C(1) << 40, 64},
        {64, UINT64_C(1) << 40},
        {UINT64_MAX - 62, 64}};
    const sgfp4_limits unlimited = {UINT64_MAX, UINT64_MAX, 0};
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
        for (int p = SGFP4_PROFILE_V1; p <= SGFP4_PROFILE_V2; p++) {
            /* Even with no element limit the padded size does not fit: a shape error. */
            assert_int_equal(open_with(tiny, sizeof tiny, (sgfp4_profile)p, big[k][0],
                                       big[k][1], &unlimited),
                             SGFP4_ERR_SHAPE);
            assert_int_equal(open_with(tiny, sizeof tiny, (sgfp4_profile)p, big[k][0],
                                       big[k][1], NULL),
                             SGFP4_ERR_SHAPE);
        }
    }
    assert_int_equal(open_with(tiny, sizeof tiny, SGFP4_PROFILE_V2, 0, 64, NULL),
                     SGFP4_ERR_SHAPE);
    assert_int_equal(open_with(tiny, sizeof tiny, SGFP4_PROFILE_V2, 64, 0, NULL),
                     SGFP4_ERR_SHAPE);
}

/* Counts what the library allocates through the caller's allocator. */
typedef struct counting {
    size_t calls, bytes, live;
} counting;
static void *count_alloc(void *user, size_t size)
{
    counting *c = user;
    c->calls++;
    c->bytes += size;
    c->live++;
    return malloc(size);
}
static void count_free(void *user, void *ptr)
{
    counting *c = user;
    if (ptr)
        c->live--;
    free(ptr);
}

static void open_allocates_the_view_and_its_places(void **state)
{
    (void)state;
    /* A v2 stream whose shape needs 2^20 blocks (and whose header says so) but whose bytes
     * end after the header, and one whose header claims 2^32 - 1 blocks for a one-block
     * shape: nothing is sized from either number. */
    uint8_t stream[32] = {'S', 'G', 'F', '4', 2, 0, 0, 0x10, 0};
    uint8_t claims[32] = {'S', 'G', 'F', '4', 2, 0xFF, 0xFF, 0xFF, 0xFF};
    counting c = {0, 0, 0};
    sgfp4_open_options options;
    sgfp4_open_options_init(&options);
    options.allocator = (sgfp4_allocator){count_alloc, count_free, &c};
    options.limits.max_elements = UINT64_MAX;
    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(stream, sizeof stream, SGFP4_PROFILE_V2, 1 << 16,
                                       1 << 16, &t, &options, NULL),
                     SGFP4_ERR_TRUNCATED);
    assert_int_equal(sgfp4_tensor_open(claims, sizeof claims, SGFP4_PROFILE_V2, 64, 64,
                                       &t, &options, NULL),
                     SGFP4_ERR_V2_BLOCK_COUNT);
    assert_int_equal(c.calls, 0);

    /* A successful open allocates one small view and its copy of the places (4 bytes per
     * v1 block), released by close; with the copy option also the container's copy. */
    size_t size;
    uint8_t *v1 = v1_container(3, &size);
    assert_int_equal(sgfp4_tensor_open(v1, size, SGFP4_PROFILE_V1, 60, 190, &t, &options,
                                       NULL),
                     SGFP4_OK);
    assert_int_equal(c.calls, 2);
    assert_true(c.bytes < 4096);
    sgfp4_tensor_close(t);
    assert_int_equal(c.live, 0);
    options.copy = 1;
    c = (counting){0, 0, 0};
    assert_int_equal(sgfp4_tensor_open(v1, size, SGFP4_PROFILE_V1, 60, 190, &t, &options,
                                       NULL),
                     SGFP4_OK);
    assert_int_equal(c.calls, 3);
    assert_true(c.bytes >= size && c.bytes < size + 4096);
    sgfp4_tensor_close(t);
    assert_int_equal(c.live, 0);
    free(v1);
}

static void decode_refuses_overflowing_buffers(void **state)
{
    (void)state;
    size_t size;
    uint8_t *c = v1_container(4, &size); /* 128 x 128 */
    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(c, size, SGFP4_PROFILE_V1, 128, 128, &t, NULL, NULL),
                     SGFP4_OK);
    float row[128];
    /* strides whose byte size wraps, with a capacity that claims everything */
    const size_t strides[] = {SIZE_MAX, SIZE_MAX / 4 + 1, SIZE_MAX / 2, SIZE_MAX / 127 + 1};
    for (size_t k = 0; k < sizeof strides / sizeof strides[0]; k++)
        assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, row, strides[k], SIZE_MAX, NULL),
                         SGFP4_ERR_ARGUMENT);
    /* a buffer one byte short, then exactly right */
    assert_int_equal(sgfp4_decode_rows(t, 0, 1, SGFP4_DTYPE_F32, row, 0, sizeof row - 1, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode_rows(t, 0, 1, SGFP4_DTYPE_F32, row, 0, sizeof row, NULL),
                     SGFP4_OK);
    /* gather: an out-of-range row */
    const uint64_t rows[2] = {5, 128};
    assert_int_equal(sgfp4_decode_gather(t, rows, 2, SGFP4_DTYPE_F32, row, 0, SIZE_MAX, NULL),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_tensor_close(t);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_elements_is_exact),
        cmocka_unit_test(max_container_bytes_is_exact),
        cmocka_unit_test(default_element_limit_refuses_before_reading),
        cmocka_unit_test(overflowing_shapes_are_refused),
        cmocka_unit_test(open_allocates_the_view_and_its_places),
        cmocka_unit_test(decode_refuses_overflowing_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
