/* Every public call of sgfp4.h and sgfp4_model.h (and the Vulkan calls that need no device)
 * against NULL pointers, zero sizes, too-small buffers, out-of-range rows, blocks and
 * indices, unknown enum values and absurd thread counts: each returns its status (or, for a
 * query, 0 / NULL / nothing) and never crashes, and a valid call afterwards still works.
 * The conventions themselves (options, threads, DST_TOO_SMALL) are tests/api/test_options.c.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "sgfp4_experimental.h"
#include "sgfp4_model.h"
#include "sgfp4_vulkan.h"
#include "support/buffer_sink.h"

/* A valid v1 container of one block (64 x 64): scale 1.0, bias 0, codes 0..7 repeating. */
static uint8_t v1[2056];
static sgfp4_tensor *tensor;

static int setup(void **state)
{
    (void)state;
    const uint32_t header = 0x3C00u << 16;
    memcpy(v1, &header, 4);
    for (size_t k = 8; k < sizeof v1; k++)
        v1[k] = (uint8_t)(0x10 * (k % 8) + (k % 8));
    return sgfp4_tensor_open(v1, sizeof v1, SGFP4_PROFILE_V1, 64, 64, &tensor, NULL, NULL) ==
                   SGFP4_OK
               ? 0
               : -1;
}

static int teardown(void **state)
{
    (void)state;
    sgfp4_tensor_close(tensor);
    return 0;
}

static void status_and_version(void **state)
{
    (void)state;
    assert_non_null(sgfp4_status_str((sgfp4_status)-1));
    assert_non_null(sgfp4_status_name((sgfp4_status)1000000));
    assert_non_null(sgfp4_version_string());
    assert_int_equal(sgfp4_dtype_size((sgfp4_dtype)99), 0);
    assert_null(sgfp4_decode_backend_name((sgfp4_backend)99));
    assert_int_equal(sgfp4_encode_bound((sgfp4_profile)99, 64, 64), 0);
    assert_int_equal(sgfp4_encode_bound(SGFP4_PROFILE_V2, 0, 64), 0);
    assert_int_equal(sgfp4_encode_bound(SGFP4_PROFILE_V2, UINT64_MAX, UINT64_MAX), 0);
    (void)sgfp4_decode_stream_bytes(UINT32_MAX);
    (void)sgfp4_decode_stream_bytes(0);
}

static void tensor_open_and_queries(void **state)
{
    (void)state;
    sgfp4_tensor *t = (sgfp4_tensor *)v1;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_tensor_open(NULL, 8, SGFP4_PROFILE_V1, 1, 1, &t, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_null(t);
    assert_int_equal(sgfp4_tensor_open(v1, sizeof v1, SGFP4_PROFILE_V1, 1, 1, NULL, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_not_equal(sgfp4_tensor_open(v1, 0, SGFP4_PROFILE_V1, 64, 64, &t, NULL, NULL),
                         SGFP4_OK); /* zero size */
    assert_int_not_equal(sgfp4_tensor_open(NULL, 0, SGFP4_PROFILE_V2, 64, 64, &t, NULL, NULL),
                         SGFP4_OK);
    assert_int_equal(sgfp4_tensor_open(v1, sizeof v1, (sgfp4_profile)7, 64, 64, &t, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_tensor_open(v1, sizeof v1, SGFP4_PROFILE_V1, 0, 64, &t, NULL, NULL),
                     SGFP4_ERR_SHAPE);
    sgfp4_tensor_close(NULL);

    sgfp4_tensor_info info;
    memset(&info, 0x5A, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sgfp4_tensor_get_info(NULL, &info), SGFP4_ERR_ARGUMENT); /* nothing */
    assert_int_equal(info.rows, 0x5A5A5A5A5A5A5A5Au);
    assert_int_equal(sgfp4_tensor_get_info(tensor, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_tensor_reserved_symbols(NULL), 0);

    sgfp4_leaf leaves[4];
    assert_int_equal(sgfp4_tensor_block_leaves(NULL, 0, leaves, 4), 0);
    assert_int_equal(sgfp4_tensor_block_leaves(tensor, 1, leaves, 4), 0); /* past the end */
    assert_int_equal(sgfp4_tensor_block_leaves(tensor, UINT64_MAX, leaves, 4), 0);
    /* no array: the count, nothing written (whatever the capacity says) */
    assert_int_equal(sgfp4_tensor_block_leaves(tensor, 0, NULL, 4), 1);
    assert_int_equal(sgfp4_tensor_block_leaves(tensor, 0, NULL, 0), 1);
    assert_int_equal(sgfp4_tensor_block_leaves(tensor, 0, leaves, 0), 1);
    assert_int_equal(sgfp4_tensor_block_leaves(tensor, 0, leaves, 4), 1);
    assert_int_equal(leaves[0].size, 64);
}

static void decode_arguments(void **state)
{
    (void)state;
    float out[64 * 64];
    const size_t cap = sizeof out;
    sgfp4_decode_options o;
    sgfp4_decode_options_init(&o);
    /* pointers */
    assert_int_equal(sgfp4_decode(NULL, SGFP4_DTYPE_F32, out, 0, cap, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, NULL, 0, cap, NULL),
                     SGFP4_ERR_ARGUMENT);
    /* zero and too-small capacities */
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 0, 0, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 0, cap - 1, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F16, out, 0, 64 * 64 * 2 - 1, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    /* row ranges: empty, reversed, past the end, wrapping */
    const uint64_t ranges[][2] = {{0, 0},   {5, 5},   {6, 5},         {0, 65},
                                  {64, 65}, {63, 65}, {UINT64_MAX, 0}, {0, UINT64_MAX},
                                  {UINT64_MAX - 1, UINT64_MAX}};
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++)
        assert_int_equal(sgfp4_decode_rows(tensor, ranges[k][0], ranges[k][1], SGFP4_DTYPE_F32,
                                           out, 0, cap, NULL),
                         SGFP4_ERR_ARGUMENT);
    /* strides: below cols, and whose byte size wraps */
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 63, cap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, SIZE_MAX, SIZE_MAX, NULL),
                     SGFP4_ERR_ARGUMENT);
    /* enums */
    assert_int_equal(sgfp4_decode(tensor, (sgfp4_dtype)3, out, 0, cap, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_decode(tensor, (sgfp4_dtype)-1, out, 0, cap, NULL), SGFP4_ERR_ARGUMENT);
    o.backend = (sgfp4_backend)99;
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 0, cap, &o), SGFP4_ERR_ARGUMENT);
    sgfp4_decode_options_init(&o);
    o.store = (sgfp4_store)99;
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 0, cap, &o), SGFP4_ERR_ARGUMENT);
    /* thread counts */
    sgfp4_decode_options_init(&o);
    const unsigned absurd[] = {SGFP4_MAX_THREADS + 1, 100000, UINT32_MAX};
    for (size_t k = 0; k < 3; k++) {
        o.threads = absurd[k];
        assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 0, cap, &o),
                         SGFP4_ERR_ARGUMENT);
        assert_int_equal(sgfp4_decode_gather(tensor, (const uint64_t[]){0}, 1, SGFP4_DTYPE_F32,
                                             out, 0, cap, &o),
                         SGFP4_ERR_ARGUMENT);
    }
    /* gathers: no rows array, a row past the end, counts whose size wraps */
    const uint64_t rows[3] = {0, 63, 64};
    assert_int_equal(sgfp4_decode_gather(tensor, NULL, 1, SGFP4_DTYPE_F32, out, 0, cap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_decode_gather(tensor, rows, 3, SGFP4_DTYPE_F32, out, 0, cap, NULL),
                     SGFP4_ERR_ARGUMENT);
    const uint64_t max_row[1] = {UINT64_MAX};
    assert_int_equal(sgfp4_decode_gather(tensor, max_row, 1, SGFP4_DTYPE_F32, out, 0, cap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_not_equal(sgfp4_decode_gather(tensor, rows, SIZE_MAX, SGFP4_DTYPE_F32, out, 0,
                                             cap, NULL),
                         SGFP4_OK);
    assert_int_not_equal(sgfp4_decode_gather(tensor, rows, 0, SGFP4_DTYPE_F32, out, 0, cap, NULL),
                         SGFP4_OK);
    /* still works */
    assert_int_equal(sgfp4_decode(tensor, SGFP4_DTYPE_F32, out, 0, cap, NULL), SGFP4_OK);
    assert_int_equal(sgfp4_decode_gather(tensor, rows, 2, SGFP4_DTYPE_F32, out, 0, cap, NULL),
                     SGFP4_OK);
}

static void encode_arguments(void **state)
{
    (void)state;
    float w[64 * 64];
    for (size_t k = 0; k < 64 * 64; k++)
        w[k] = (float)(k % 13) / 13.0f - 0.5f;
    uint8_t dst[8192];
    size_t written = 0;
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    assert_int_equal(sgfp4_encode(NULL, 64, 64, 0, dst, sizeof dst, &written, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, NULL, sizeof dst, &written, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, sizeof dst, NULL, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode(w, 0, 64, 0, dst, sizeof dst, &written, NULL, NULL),
                     SGFP4_ERR_SHAPE);
    assert_int_equal(sgfp4_encode(w, 64, 0, 0, dst, sizeof dst, &written, NULL, NULL),
                     SGFP4_ERR_SHAPE);
    assert_int_equal(sgfp4_encode(w, 64, 64, 63, dst, sizeof dst, &written, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, 0, &written, NULL, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, 16, &written, NULL, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    const unsigned absurd[] = {SGFP4_MAX_THREADS + 1, UINT32_MAX};
    for (size_t k = 0; k < 2; k++) {
        o.threads = absurd[k];
        assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, sizeof dst, &written, &o, NULL),
                         SGFP4_ERR_ARGUMENT);
    }
    sgfp4_encode_options_init(&o);
    o.profile = (sgfp4_profile)9;
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, sizeof dst, &written, &o, NULL),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_encode_options_init(&o);
    o.target_bpw = -1;
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, sizeof dst, &written, &o, NULL),
                     SGFP4_ERR_ARGUMENT);
    void *alloc = NULL;
    size_t alloc_size = 0;
    assert_int_equal(sgfp4_encode_alloc(w, 64, 64, 0, NULL, &alloc_size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode_alloc(w, 64, 64, 0, &alloc, NULL, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode_alloc(NULL, 64, 64, 0, &alloc, &alloc_size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_null(alloc);
    sgfp4_free(NULL);
    assert_int_equal(sgfp4_encode(w, 64, 64, 0, dst, sizeof dst, &written, NULL, NULL), SGFP4_OK);
}

/* ---- models ------------------------------------------------------------------------------ */

/* A plain model of one F32 [64, 64] matrix "w" and one I8 [3] tensor "ids". */
static buffer plain_model(void)
{
    const uint64_t shape_w[2] = {64, 64}, shape_ids[1] = {3};
    const sgfp4_st_entry e[2] = {{"w", SGFP4_ST_F32, 2, shape_w},
                                 {"ids", SGFP4_ST_I8, 1, shape_ids}};
    buffer b = {0};
    const sgfp4_sink sink = {buffer_write, &b};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(e, 2, NULL, NULL, 0, &sink, &w, NULL), SGFP4_OK);
    for (int k = 0; k < 64 * 64; k++) {
        const float v = (float)(k % 29) / 29.0f - 0.5f;
        assert_int_equal(sgfp4_st_writer_write(w, &v, 4), SGFP4_OK);
    }
    assert_int_equal(sgfp4_st_writer_write(w, "\x01\x02\x03", 3), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    return b;
}

static void model_queries(void **state)
{
    (void)state;
    sgfp4_model *m = (sgfp4_model *)v1;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open(NULL, &m, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_open("/nonexistent/x.safetensors", NULL, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_open("/nonexistent/x.safetensors", &m, NULL, &diag),
                     SGFP4_ERR_IO);
    assert_null(m);
    assert_int_equal(sgfp4_model_open_memory(NULL, 10, &m, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_open_memory("x", 1, NULL, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_open_memory(NULL, 0, &m, NULL, &diag), SGFP4_ERR_TRUNCATED);
    sgfp4_model_close(NULL);
    /* every query on no model */
    assert_int_equal(sgfp4_model_tensor_count(NULL), 0);
    assert_null(sgfp4_model_tensor_at(NULL, 0));
    assert_null(sgfp4_model_tensor_find(NULL, "w"));
    assert_int_equal(sgfp4_model_metadata_count(NULL), 0);
    assert_int_equal(sgfp4_model_metadata_at(NULL, 0, NULL, NULL), SGFP4_ERR_ARGUMENT);
    assert_null(sgfp4_model_metadata_get(NULL, "k"));
    assert_false(sgfp4_model_is_quantized(NULL));
    assert_int_equal(sgfp4_model_data_offset(NULL), 0);
    assert_int_equal(sgfp4_model_file_bytes(NULL), 0);
    assert_false(sgfp4_model_was_compressed(NULL));
    sgfp4_model_tensor_evict(NULL, NULL);

    buffer b = plain_model();
    assert_int_equal(sgfp4_model_open_memory(b.data, b.size, &m, NULL, &diag), SGFP4_OK);
    assert_null(sgfp4_model_tensor_at(m, 2));
    assert_null(sgfp4_model_tensor_at(m, SIZE_MAX));
    assert_null(sgfp4_model_tensor_find(m, NULL));
    assert_null(sgfp4_model_metadata_get(m, NULL));
    assert_int_equal(sgfp4_model_metadata_at(m, 0, NULL, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_model_tensor_evict(m, NULL);
    const sgfp4_model_tensor *w = sgfp4_model_tensor_find(m, "w");
    const sgfp4_model_tensor *ids = sgfp4_model_tensor_find(m, "ids");
    assert_non_null(w);
    assert_non_null(ids);
    sgfp4_tensor *t = (sgfp4_tensor *)v1;
    assert_int_equal(sgfp4_model_tensor_open(NULL, w, &t, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_open(m, NULL, &t, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_open(m, w, NULL, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_open(m, w, &t, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_verify(NULL, NULL, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_verify(m, w, &diag), SGFP4_ERR_ARGUMENT); /* plain */
    float f[64 * 64];
    assert_int_equal(sgfp4_model_tensor_to_f32(NULL, 0, f, sizeof f, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_to_f32(w, 0, NULL, sizeof f, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_tensor_to_f32(w, 0, f, 0, &diag), SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_model_tensor_to_f32(w, 0, f, sizeof f - 1, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_model_tensor_to_f32(ids, 0, f, sizeof f, &diag),
                     SGFP4_ERR_MODEL_DTYPE);
    assert_int_equal(sgfp4_model_tensor_to_f32(w, 1, f, sizeof f, &diag), SGFP4_OK);
    sgfp4_model_close(m);
    free(b.data);

    /* dtype helpers */
    assert_null(sgfp4_st_dtype_name((sgfp4_st_dtype)-1));
    assert_null(sgfp4_st_dtype_name((sgfp4_st_dtype)1000));
    assert_int_equal(sgfp4_st_dtype_size((sgfp4_st_dtype)1000), 0);
    sgfp4_st_dtype d;
    assert_int_equal(sgfp4_st_dtype_parse(NULL, &d), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_dtype_parse("F32", NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_dtype_parse("", &d), SGFP4_ERR_MODEL_DTYPE);
    assert_int_equal(sgfp4_st_dtype_parse("f32", &d), SGFP4_ERR_MODEL_DTYPE);
}

static sgfp4_status discard(void *user, const void *data, size_t size)
{
    (void)user;
    (void)data;
    (void)size;
    return SGFP4_OK;
}

static void sinks_and_writers(void **state)
{
    (void)state;
    const sgfp4_sink inner = {discard, NULL}, no_write = {NULL, NULL};
    sgfp4_zstd_sink *zs = (sgfp4_zstd_sink *)v1;
    assert_int_equal(sgfp4_zstd_sink_begin(NULL, 3, 1, &zs), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&no_write, 3, 1, &zs), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, 1, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, -1, 1, &zs), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 1000, 1, &zs), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, UINT32_MAX, &zs), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_finish(NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_zstd_sink_free(NULL);
    const sgfp4_sink none = sgfp4_zstd_sink_get(NULL); /* a sink that refuses every write */
    if (none.write)
        assert_int_equal(none.write(none.user, "x", 1), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, 0, &zs), SGFP4_OK);
    const sgfp4_sink s = sgfp4_zstd_sink_get(zs);
    assert_int_equal(s.write(s.user, "abc", 3), SGFP4_OK);
    assert_int_equal(s.write(s.user, NULL, 0), SGFP4_OK);
    assert_int_equal(s.write(s.user, NULL, 5), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_finish(zs), SGFP4_OK);
    sgfp4_zstd_sink_free(zs);

    const uint64_t shape[2] = {2, 2};
    const sgfp4_st_entry good[1] = {{"t", SGFP4_ST_U8, 2, shape}};
    const sgfp4_st_entry bad[][1] = {{{NULL, SGFP4_ST_U8, 2, shape}},
                                     {{"t", (sgfp4_st_dtype)99, 2, shape}},
                                     {{"t", SGFP4_ST_U8, 2, NULL}},
                                     {{"t", SGFP4_ST_U8, 100, shape}},
                                     {{"__metadata__", SGFP4_ST_U8, 2, shape}}};
    sgfp4_st_writer *w = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_st_writer_begin(NULL, 1, NULL, NULL, 0, &inner, &w, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_writer_begin(good, 1, NULL, NULL, 0, NULL, &w, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_writer_begin(good, 1, NULL, NULL, 0, &no_write, &w, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_writer_begin(good, 1, NULL, NULL, 0, &inner, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_writer_begin(good, 1, NULL, NULL, 2, &inner, &w, &diag),
                     SGFP4_ERR_ARGUMENT);
    const char *keys[1] = {NULL}, *values[1] = {"v"};
    assert_int_equal(sgfp4_st_writer_begin(good, 1, keys, values, 1, &inner, &w, &diag),
                     SGFP4_ERR_ARGUMENT);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        assert_int_not_equal(sgfp4_st_writer_begin(bad[k], 1, NULL, NULL, 0, &inner, &w, &diag),
                             SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_write(NULL, "x", 1), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_st_writer_finish(NULL, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_st_writer_free(NULL);
    assert_int_equal(sgfp4_st_writer_begin(good, 1, NULL, NULL, 0, &inner, &w, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_write(w, NULL, 4), SGFP4_ERR_ARGUMENT);
    sgfp4_st_writer_free(w);
    assert_int_equal(sgfp4_st_writer_begin(good, 1, NULL, NULL, 0, &inner, &w, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_write(w, NULL, 0), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_write(w, "abcd", 4), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_finish(w, &diag), SGFP4_OK);
    sgfp4_st_writer_free(w);
}

static void policies(void **state)
{
    (void)state;
    sgfp4_model_policy *p = (sgfp4_model_policy *)v1;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_policy_create(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_policy_parse(NULL, 5, &p, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_policy_parse("{}", 2, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_policy_parse("{}", 0, &p, &diag), SGFP4_ERR_ARGUMENT);
    assert_null(p);
    assert_int_equal(sgfp4_model_policy_parse(NULL, 0, &p, &diag), SGFP4_ERR_ARGUMENT);
    assert_null(sgfp4_model_policy_defaults(NULL));
    sgfp4_model_policy_set_embeddings(NULL, 0);
    sgfp4_model_policy_free(NULL);
    sgfp4_model_decision d;
    memset(&d, 0x5A, sizeof d);
    d.struct_size = sizeof d;
    assert_int_equal(sgfp4_model_policy_decide(NULL, NULL, &d), SGFP4_ERR_ARGUMENT);
    assert_false(d.quantize);
    assert_string_equal(d.reason, "no policy or no tensor");
    assert_int_equal(sgfp4_model_policy_decide(NULL, NULL, NULL), SGFP4_ERR_ARGUMENT);
}

static void model_jobs(void **state)
{
    (void)state;
    buffer b = plain_model();
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory(b.data, b.size, &m, NULL, &diag), SGFP4_OK);
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_create(&p), SGFP4_OK);
    const sgfp4_sink inner = {discard, NULL}, no_write = {NULL, NULL};
    assert_int_equal(sgfp4_model_encode(NULL, p, &inner, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_encode(m, NULL, &inner, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_encode(m, p, NULL, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_encode(m, p, &no_write, NULL, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.temp_dir = "/nonexistent/folder";
    assert_int_equal(sgfp4_model_encode(m, p, &inner, &o, &diag), SGFP4_ERR_IO);
    /* absurd encoder thread counts in the policy: refused, not started */
    sgfp4_model_policy_defaults(p)->threads = UINT32_MAX;
    assert_int_not_equal(sgfp4_model_encode(m, p, &inner, NULL, &diag), SGFP4_OK);
    sgfp4_model_policy_defaults(p)->threads = 0;
    buffer q = {0};
    const sgfp4_sink qsink = {buffer_write, &q};
    assert_int_equal(sgfp4_model_encode(m, p, &qsink, NULL, &diag), SGFP4_OK);
    /* decode: not quantized, NULLs, bad dtype, bad decode options before a byte is written */
    assert_int_equal(sgfp4_model_decode(m, &inner, NULL, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_model *qm = NULL;
    assert_int_equal(sgfp4_model_open_memory(q.data, q.size, &qm, NULL, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_model_decode(NULL, &inner, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_decode(qm, NULL, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_decode(qm, &no_write, NULL, &diag), SGFP4_ERR_ARGUMENT);
    const sgfp4_dtype bad_dtype = (sgfp4_dtype)7;
    sgfp4_model_write_options_init(&o);
    o.decode_dtype = &bad_dtype;
    assert_int_equal(sgfp4_model_decode(qm, &inner, &o, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_decode_options dec;
    sgfp4_decode_options_init(&dec);
    dec.threads = SGFP4_MAX_THREADS + 1;
    sgfp4_model_write_options_init(&o);
    o.decode = &dec;
    buffer r = {0};
    const sgfp4_sink rsink = {buffer_write, &r};
    assert_int_equal(sgfp4_model_decode(qm, &rsink, &o, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(r.size, 0);
    dec.threads = 0;
    dec.backend = (sgfp4_backend)99;
    assert_int_equal(sgfp4_model_decode(qm, &rsink, &o, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(r.size, 0);
    dec.backend = SGFP4_BACKEND_AUTO;
    assert_int_equal(sgfp4_model_decode(qm, &rsink, &o, &diag), SGFP4_OK);
    assert_true(r.size > 64 * 64 * 4);
    free(r.data);
    sgfp4_model_close(qm);
    free(q.data);
    sgfp4_model_policy_free(p);
    sgfp4_model_close(m);
    free(b.data);
}

static void vulkan_without_a_context(void **state)
{
    (void)state;
    sgfp4_diag diag;
    size_t count = 0;
    assert_int_not_equal(sgfp4_vk_list_devices(NULL, 4, &count, &diag), SGFP4_OK);
    sgfp4_vk_context *ctx = (sgfp4_vk_context *)v1;
    assert_int_not_equal(sgfp4_vk_context_create(NULL, NULL, &diag), SGFP4_OK);
    assert_int_not_equal(sgfp4_vk_context_import(NULL, &ctx, NULL, &diag), SGFP4_OK);
    sgfp4_vk_context_free(NULL);
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    assert_int_equal(sgfp4_vk_context_get_info(NULL, &info), SGFP4_ERR_ARGUMENT);
    sgfp4_vk_handles handles;
    sgfp4_vk_context_get_handles(NULL, &handles);
    assert_int_equal(sgfp4_vk_decode_reads_layout(NULL, NULL, SGFP4_DTYPE_F16), 0);
    assert_int_equal(sgfp4_vk_tensor_device_bytes(NULL), 0);
    sgfp4_vk_buffer *vk_buf = NULL;
    assert_int_not_equal(sgfp4_vk_buffer_create(NULL, 64, &vk_buf, &diag), SGFP4_OK);
    (void)sgfp4_vk_buffer_handle(NULL);
    sgfp4_vk_buffer_free(NULL, NULL);
    sgfp4_vk_tensor *vt = NULL;
    assert_int_not_equal(sgfp4_vk_tensor_create(NULL, tensor, &vt, &diag), SGFP4_OK);
    sgfp4_vk_tensor_free(NULL, NULL);
    float out[64 * 64];
    assert_int_not_equal(sgfp4_vk_decode_to_host(NULL, NULL, SGFP4_DTYPE_F32, out, 0,
                                                 sizeof out, &diag),
                         SGFP4_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_and_version),    cmocka_unit_test(tensor_open_and_queries),
        cmocka_unit_test(decode_arguments),      cmocka_unit_test(encode_arguments),
        cmocka_unit_test(model_queries),         cmocka_unit_test(sinks_and_writers),
        cmocka_unit_test(policies),              cmocka_unit_test(model_jobs),
        cmocka_unit_test(vulkan_without_a_context),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
