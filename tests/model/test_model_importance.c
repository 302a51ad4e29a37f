/* Whole-model encoding with an importance file (docs/encoder.md, "Error metrics"): the
 * vectors NAME (columns) and NAME:rows of a safetensors file reach the encoder for tensor
 * NAME, the manifest records their use, a vector of the wrong length is refused; policy
 * files set the metric and the fast preset; a rate below 4.125 bits per weight draws a
 * warning. Errors are measured here on the decoded model.
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
#include "sgfp4_model.h"
#include "support/buffer_sink.h"

#define ROWS 256u
#define COLS 128u

/* A safetensors file of F32 tensors (names, element counts, rank 1 or 2 shapes). */
static buffer write_file(size_t count, const char *const *names, const uint64_t (*shapes)[2],
                         const size_t *ranks, const float *const *values)
{
    buffer b = {NULL, 0, 0};
    sgfp4_st_entry entries[8];
    for (size_t i = 0; i < count; i++)
        entries[i] = (sgfp4_st_entry){names[i], SGFP4_ST_F32, ranks[i], shapes[i]};
    sgfp4_sink sink = {buffer_write, &b};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(entries, count, NULL, NULL, 0, &sink, &w, NULL),
                     SGFP4_OK);
    for (size_t i = 0; i < count; i++) {
        const uint64_t n = ranks[i] == 2 ? shapes[i][0] * shapes[i][1] : shapes[i][0];
        assert_int_equal(sgfp4_st_writer_write(w, values[i], n * sizeof(float)), SGFP4_OK);
    }
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    return b;
}

static float *matrix(void)
{
    float *m = malloc(ROWS * COLS * sizeof *m);
    uint32_t x = 12345;
    for (size_t i = 0; i < ROWS * COLS; i++) {
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

/* Encodes the model (at 3.5 bits per weight) with the importance file (or none) and
 * returns the squared error on the important columns (c % 64 < 32); *json gets the
 * tensor's encoder record (free it). */
static double encode_model(const buffer *model, const buffer *importance, const float *w,
                           sgfp4_status *status, char **json)
{
    sgfp4_model *src = NULL, *imp = NULL, *q = NULL;
    assert_int_equal(sgfp4_model_open_memory(model->data, model->size, &src, NULL, NULL),
                     SGFP4_OK);
    if (importance)
        assert_int_equal(sgfp4_model_open_memory(importance->data, importance->size, &imp,
                                                 NULL, NULL),
                         SGFP4_OK);
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    sgfp4_model_policy_defaults(policy)->target_bpw = 3.5;
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.importance = imp;
    buffer out = {NULL, 0, 0};
    sgfp4_sink sink = {buffer_write, &out};
    sgfp4_diag diag;
    *status = sgfp4_model_encode(src, policy, &sink, &o, &diag);
    double sse = -1;
    if (*status == SGFP4_OK) {
        assert_int_equal(sgfp4_model_open_memory(out.data, out.size, &q, NULL, NULL), SGFP4_OK);
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(q, "w");
        assert_non_null(t);
        assert_non_null(t->quant);
        *json = strdup(t->quant->encoder_json);
        sgfp4_tensor *view = NULL;
        assert_int_equal(sgfp4_model_tensor_open(q, t, &view, NULL, NULL), SGFP4_OK);
        float *d = malloc(ROWS * COLS * sizeof *d);
        assert_int_equal(sgfp4_decode(view, SGFP4_DTYPE_F32, d, 0, ROWS * COLS * 4, NULL),
                         SGFP4_OK);
        sse = 0;
        for (size_t i = 0; i < ROWS * COLS; i++)
            if (i % COLS % 64 < 32)
                sse += ((double)w[i] - d[i]) * ((double)w[i] - d[i]);
        free(d);
        sgfp4_tensor_close(view);
        sgfp4_model_close(q);
    } else {
        print_message("encode: %s\n", diag.message);
    }
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(imp);
    sgfp4_model_close(src);
    free(out.data);
    return sse;
}

static void importance_file_reaches_the_encoder(void **state)
{
    (void)state;
    float *w = matrix(), cols[COLS], rows[ROWS];
    for (size_t c = 0; c < COLS; c++)
        cols[c] = c % 64 < 32 ? 100.0f : 1.0f;
    for (size_t r = 0; r < ROWS; r++)
        rows[r] = 1.0f + (float)(r % 3);
    const char *names[] = {"w"};
    const uint64_t shape[][2] = {{ROWS, COLS}};
    const size_t rank[] = {2};
    const float *values[] = {w};
    buffer model = write_file(1, names, shape, rank, values);
    const char *inames[] = {"w", "w:rows", "unrelated"};
    const uint64_t ishapes[][2] = {{COLS, 0}, {ROWS, 0}, {7, 0}};
    const size_t iranks[] = {1, 1, 1};
    const float *ivalues[] = {cols, rows, cols};
    buffer importance = write_file(3, inames, ishapes, iranks, ivalues);
    sgfp4_status s;
    char *plain_json = NULL, *weighted_json = NULL;
    const double plain = encode_model(&model, NULL, w, &s, &plain_json);
    assert_int_equal(s, SGFP4_OK);
    const double weighted = encode_model(&model, &importance, w, &s, &weighted_json);
    assert_int_equal(s, SGFP4_OK);
    assert_true(weighted < 0.8 * plain);
    assert_null(strstr(plain_json, "\"importance\""));
    assert_non_null(strstr(weighted_json, "\"importance\":\"both\""));
    assert_non_null(strstr(weighted_json, "\"metric\":\"sse\""));
    /* a column vector of the wrong length is refused, naming it */
    const uint64_t bad[][2] = {{COLS - 1, 0}, {ROWS, 0}};
    const float *bvalues[] = {cols, rows};
    buffer wrong = write_file(2, inames, bad, iranks, bvalues);
    char *unused = NULL;
    encode_model(&model, &wrong, w, &s, &unused);
    assert_int_equal(s, SGFP4_ERR_ARGUMENT);
    free(plain_json);
    free(weighted_json);
    free(model.data);
    free(importance.data);
    free(wrong.data);
    free(w);
}

static void policy_metric_fit_and_low_rate_warning(void **state)
{
    (void)state;
    float *w = matrix();
    const char *names[] = {"w"};
    const uint64_t shape[][2] = {{ROWS, COLS}};
    const size_t rank[] = {2};
    const float *values[] = {w};
    buffer model = write_file(1, names, shape, rank, values);
    sgfp4_model *m = NULL;
    assert_int_equal(sgfp4_model_open_memory(model.data, model.size, &m, NULL, NULL), SGFP4_OK);
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(m, "w");
    static const char doc[] = "{\"defaults\": {\"fit\": \"fast\", \"metric\": \"row\"},"
                              " \"rules\": [{\"match\": \"x*\", \"bpw\": 3.0}]}";
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_parse(doc, strlen(doc), &p, NULL), SGFP4_OK);
    sgfp4_model_decision d;
    sgfp4_model_decision_init(&d);
    sgfp4_model_policy_decide(p, t, &d);
    assert_int_equal(d.quantize, 1);
    assert_int_equal(d.fit, SGFP4_FIT_FAST);
    assert_int_equal(d.metric, SGFP4_METRIC_ROW_RELATIVE);
    assert_string_equal(d.warning, "");
    sgfp4_model_policy_free(p);
    static const char low[] = "{\"defaults\": {\"bpw\": 3.5}}";
    assert_int_equal(sgfp4_model_policy_parse(low, strlen(low), &p, NULL), SGFP4_OK);
    sgfp4_model_policy_decide(p, t, &d);
    assert_non_null(strstr(d.warning, "ternary"));
    sgfp4_model_policy_free(p);
    static const char bad[] = "{\"defaults\": {\"metric\": \"l1\"}}";
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_policy_parse(bad, strlen(bad), &p, &diag), SGFP4_ERR_ARGUMENT);
    assert_non_null(strstr(diag.message, "metric"));
    sgfp4_model_close(m);
    free(model.data);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(importance_file_reaches_the_encoder),
        cmocka_unit_test(policy_metric_fit_and_low_rate_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
