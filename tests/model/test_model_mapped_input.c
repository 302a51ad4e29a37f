/* A quantized model file that changes after sgfp4_model_open(), as when another program
 * rewrites or truncates it (`cp new old` truncates first) while a runtime holds it open.
 *   - mapped (the default): tensor views opened before the change keep decoding exactly as
 *     before when payload offsets (v1), record offsets (v2) and header bytes are rewritten
 *     (every place a read depends on was copied at open); a decode that opens the changed
 *     containers refuses them cleanly;
 *   - with the copy option: the file truncated to nothing, the model (its views, a view
 *     opened afterwards, the whole-model decode) gives the bytes it gave before.
 * The file is rewritten through its own descriptor; Linux shows such writes through the
 * model's private read-only mapping (no page of it is ever written by the process).
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sgfp4_model.h"
#include "support/buffer_sink.h"

/* A float32 model of two matrices (the policy makes "a.weight" v1, "b.weight" v2) and a norm,
 * quantized. */
static buffer quantized_model(void)
{
    static const uint64_t a_shape[2] = {200, 330}, b_shape[2] = {130, 256}, n_shape[1] = {64};
    const sgfp4_st_entry entries[3] = {{"a.weight", SGFP4_ST_F32, 2, a_shape},
                                       {"b.weight", SGFP4_ST_F32, 2, b_shape},
                                       {"norm", SGFP4_ST_F32, 1, n_shape}};
    buffer plain = {0};
    sgfp4_sink sink = {buffer_write, &plain};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(entries, 3, NULL, NULL, 0, &sink, &w, NULL), SGFP4_OK);
    uint64_t seed = 1;
    const uint64_t count = 200 * 330 + 130 * 256 + 64;
    for (uint64_t k = 0; k < count; k++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        const float v = (float)((int64_t)(seed >> 40) - (1 << 23)) / (float)(1 << 26);
        assert_int_equal(sgfp4_st_writer_write(w, &v, sizeof v), SGFP4_OK);
    }
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);

    sgfp4_model *source = NULL;
    assert_int_equal(sgfp4_model_open_memory(plain.data, plain.size, &source, NULL, NULL),
                     SGFP4_OK);
    static const char policy_json[] = "{\"rules\": [{\"match\": \"a.*\", \"profile\": \"v1\"}]}";
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_parse(policy_json, sizeof policy_json - 1, &policy, NULL),
                     SGFP4_OK);
    buffer q = {0};
    sink.user = &q;
    sgfp4_diag diag;
    if (sgfp4_model_encode(source, policy, &sink, NULL, &diag) != SGFP4_OK)
        fail_msg("encode: %s", diag.message);
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(source);
    free(plain.data);
    return q;
}

/* The model bytes in a new file: its path in `path`, a descriptor to rewrite it. */
static int model_file(const buffer *q, char path[64])
{
    strcpy(path, "/tmp/sgfp4-model-mapped-XXXXXX");
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, q->data, q->size, 0), (ssize_t)q->size);
    return fd;
}

static void rewrite_u32(int fd, uint64_t at, uint32_t value)
{
    const uint8_t le[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                           (uint8_t)(value >> 24)};
    assert_int_equal(pwrite(fd, le, 4, (off_t)at), 4);
}

/* The quantized tensors' views, and their decodes. */
typedef struct views {
    const sgfp4_model_tensor *tensor[2];
    sgfp4_tensor *view[2];
    float *decoded[2];
} views;

static void views_open(const sgfp4_model *m, views *v)
{
    const char *names[2] = {"a.weight", "b.weight"};
    for (int k = 0; k < 2; k++) {
        v->decoded[k] = NULL;
        v->tensor[k] = sgfp4_model_tensor_find(m, names[k]);
        assert_non_null(v->tensor[k]);
        assert_non_null(v->tensor[k]->quant);
        sgfp4_diag diag;
        if (sgfp4_model_tensor_open(m, v->tensor[k], &v->view[k], NULL, &diag) != SGFP4_OK)
            fail_msg("open %s: %s", names[k], diag.message);
    }
    assert_int_equal(v->tensor[0]->quant->profile, SGFP4_PROFILE_V1);
    assert_int_equal(v->tensor[1]->quant->profile, SGFP4_PROFILE_V2);
}

static float *decode(const sgfp4_tensor *t)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    const size_t bytes = (size_t)(info.rows * info.cols * 4);
    float *out = malloc(bytes);
    assert_non_null(out);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, bytes, NULL), SGFP4_OK);
    return out;
}

static void assert_decodes_as(const views *v, float *const want[2])
{
    for (int k = 0; k < 2; k++) {
        sgfp4_tensor_info info;
        sgfp4_tensor_info_init(&info);
        sgfp4_tensor_get_info(v->view[k], &info);
        float *got = decode(v->view[k]);
        assert_memory_equal(got, want[k], (size_t)(info.rows * info.cols * 4));
        free(got);
    }
}

static void views_close(views *v)
{
    for (int k = 0; k < 2; k++) {
        sgfp4_tensor_close(v->view[k]);
        free(v->decoded[k]);
    }
}

static buffer model_decode(const sgfp4_model *m, sgfp4_status *status)
{
    buffer out = {0};
    const sgfp4_sink sink = {buffer_write, &out};
    *status = sgfp4_model_decode(m, &sink, NULL, NULL);
    return out;
}

/* Mapped: views opened before the rewrite decode as before. */
static void mapped_views_survive_rewrites(void **state)
{
    (void)state;
    buffer q = quantized_model();
    char path[64];
    const int fd = model_file(&q, path);
    sgfp4_model *m = NULL;
    assert_int_equal(sgfp4_model_open(path, &m, NULL, NULL), SGFP4_OK);
    views v;
    views_open(m, &v);
    for (int k = 0; k < 2; k++)
        v.decoded[k] = decode(v.view[k]);

    /* v1 "a.weight": every payload offset 4 GiB away; v2 "b.weight": every record offset */
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(v.view[0], &info);
    for (uint64_t b = 0; b < info.blocks; b++)
        rewrite_u32(fd, v.tensor[0]->offset + 4 * info.blocks + 4 * b, 0xFFFFFFF0u);
    sgfp4_tensor_get_info(v.view[1], &info);
    for (uint64_t b = 0; b < info.blocks; b++)
        rewrite_u32(fd, v.tensor[1]->offset + 16 + 4 * b, 0xFFFFFFF0u - 16 * (uint32_t)b);
    /* and the header's JSON (its first bytes after the '{') */
    const uint8_t junk[16] = "}}}}}}}}}}}}}}}}";
    assert_int_equal(pwrite(fd, junk, sizeof junk, 9), (ssize_t)sizeof junk);

    assert_decodes_as(&v, v.decoded);
    assert_ptr_equal(sgfp4_model_tensor_find(m, "a.weight"), v.tensor[0]);
    /* a decode that opens the changed containers refuses them */
    sgfp4_status s;
    buffer out = model_decode(m, &s);
    assert_int_not_equal(s, SGFP4_OK);
    free(out.data);

    views_close(&v);
    sgfp4_model_close(m);
    close(fd);
    unlink(path);
    free(q.data);
}

/* The copy option: the file truncated to nothing changes nothing. */
static void copy_survives_truncation(void **state)
{
    (void)state;
    buffer q = quantized_model();
    char path[64];
    const int fd = model_file(&q, path);
    sgfp4_model *mapped = NULL;
    assert_int_equal(sgfp4_model_open(path, &mapped, NULL, NULL), SGFP4_OK);
    sgfp4_status s;
    buffer want = model_decode(mapped, &s);
    assert_int_equal(s, SGFP4_OK);
    views before;
    views_open(mapped, &before);
    float *want_decoded[2];
    for (int k = 0; k < 2; k++)
        want_decoded[k] = decode(before.view[k]);
    views_close(&before);
    sgfp4_model_close(mapped);

    sgfp4_model_open_options o;
    sgfp4_model_open_options_init(&o);
    o.copy = 1;
    sgfp4_model *m = NULL;
    assert_int_equal(sgfp4_model_open(path, &m, &o, NULL), SGFP4_OK);
    views v;
    views_open(m, &v);
    assert_decodes_as(&v, want_decoded);
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_decodes_as(&v, want_decoded);
    views again;
    views_open(m, &again);
    assert_decodes_as(&again, want_decoded);
    views_close(&again);
    buffer got = model_decode(m, &s);
    assert_int_equal(s, SGFP4_OK);
    assert_int_equal(got.size, want.size);
    assert_memory_equal(got.data, want.data, want.size);
    free(got.data);
    free(want.data);
    views_close(&v);
    sgfp4_model_close(m);

    /* the copy of caller bytes: the caller's buffer may be cleared afterwards */
    assert_int_equal(sgfp4_model_open_memory(q.data, q.size, &m, &o, NULL), SGFP4_OK);
    memset(q.data, 0, q.size);
    views_open(m, &v);
    assert_decodes_as(&v, want_decoded);
    views_close(&v);
    sgfp4_model_close(m);
    for (int k = 0; k < 2; k++)
        free(want_decoded[k]);
    close(fd);
    unlink(path);
    free(q.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mapped_views_survive_rewrites),
        cmocka_unit_test(copy_survives_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
