/* The library calls that check decoded output: the execution-contract hashes, the error
 * statistics against reference weights (checked against sums computed here from a whole
 * decode), the D6 2-D view of a model tensor, and whole-model verification.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "sgfp4.h"
#include "sgfp4_model.h"
#include "support/buffer_sink.h"

static void sha256_hex(const void *data, size_t size, char hex[65])
{
    unsigned char d[32];
    unsigned int n = 0;
    EVP_Digest(data, size, d, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* Deterministic weights with a row-dependent scale. */
static float *weights(uint64_t rows, uint64_t cols)
{
    float *w = malloc((size_t)(rows * cols) * sizeof *w);
    assert_non_null(w);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++)
            w[r * cols + c] = (float)((int)((r * 131 + c * 71) % 97) - 48) *
                              (0.001f + 0.0001f * (float)(r % 13));
    return w;
}

typedef struct encoded {
    void *bytes;
    size_t size;
    sgfp4_tensor *t;
} encoded;

static encoded encode(const float *w, uint64_t rows, uint64_t cols, double bpw)
{
    encoded e = {NULL, 0, NULL};
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.target_bpw = bpw;
    o.threads = 2;
    assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &e.bytes, &e.size, &o, NULL), SGFP4_OK);
    assert_int_equal(sgfp4_tensor_open(e.bytes, e.size, SGFP4_PROFILE_V2, rows, cols, &e.t, NULL,
                                       NULL),
                     SGFP4_OK);
    return e;
}

static void release(encoded *e)
{
    sgfp4_tensor_close(e->t);
    sgfp4_free(e->bytes);
}

/* 300 x 20000: several 16 MiB bands, the last one short. */
static void hashes_and_statistics_match_a_whole_decode(void **state)
{
    (void)state;
    const uint64_t shapes[2][2] = {{300, 20000}, {5, 7}};
    for (int k = 0; k < 2; k++) {
        const uint64_t rows = shapes[k][0], cols = shapes[k][1];
        float *w = weights(rows, cols);
        encoded e = encode(w, rows, cols, 3.5);
        const size_t n = (size_t)(rows * cols);
        float *dec = malloc(n * sizeof *dec);
        assert_non_null(dec);
        assert_int_equal(sgfp4_decode(e.t, SGFP4_DTYPE_F32, dec, 0, n * 4, NULL), SGFP4_OK);

        char want[65], got[65];
        sha256_hex(e.bytes, e.size, want);
        sgfp4_tensor_container_sha256(e.t, got);
        assert_string_equal(got, want);
        sha256_hex(dec, n * 4, want);
        sgfp4_decode_options d;
        sgfp4_decode_options_init(&d);
        d.threads = 3;
        assert_int_equal(sgfp4_tensor_decoded_sha256(e.t, got, &d), SGFP4_OK);
        assert_string_equal(got, want);

        double sse = 0, ref = 0, max_abs = 0;
        for (size_t i = 0; i < n; i++) {
            const double diff = (double)w[i] - dec[i];
            sse += diff * diff;
            ref += (double)w[i] * w[i];
            max_abs = fabs(diff) > max_abs ? fabs(diff) : max_abs;
        }
        sgfp4_quality q;
        sgfp4_quality_init(&q);
        assert_int_equal(sgfp4_tensor_compare(e.t, w, 0, &q, NULL), SGFP4_OK);
        assert_int_equal(q.count, n);
        assert_true(q.sse == sse && q.reference_sq == ref && q.max_abs == max_abs);
        assert_true(q.rmse == sqrt(sse / (double)n));
        assert_true(q.rel_l2 == sqrt(sse / ref));
        assert_true(q.snr_db == 10.0 * log10(ref / sse));
        assert_int_equal(q.nonfinite, 0);

        /* a strided reference gives the same figures */
        float *wide = calloc(n + rows * 3, sizeof *wide);
        assert_non_null(wide);
        for (uint64_t r = 0; r < rows; r++)
            memcpy(wide + r * (cols + 3), w + r * cols, cols * sizeof *w);
        sgfp4_quality q2;
        sgfp4_quality_init(&q2);
        assert_int_equal(sgfp4_tensor_compare(e.t, wide, cols + 3, &q2, NULL), SGFP4_OK);
        assert_true(q2.sse == q.sse && q2.reference_sq == q.reference_sq);
        assert_int_equal(sgfp4_tensor_compare(e.t, wide, cols - 1, &q2, NULL),
                         SGFP4_ERR_ARGUMENT);
        free(wide);

        /* the decoded tensor against itself: exact */
        assert_int_equal(sgfp4_tensor_compare(e.t, dec, 0, &q, NULL), SGFP4_OK);
        assert_true(q.sse == 0 && q.rel_l2 == 0 && isinf(q.snr_db) && q.snr_db > 0);
        free(dec);
        release(&e);
        free(w);
    }
}

static void bad_arguments(void **state)
{
    (void)state;
    char hex[65] = "x";
    sgfp4_tensor_container_sha256(NULL, hex);
    assert_string_equal(hex, "");
    sgfp4_tensor_container_sha256(NULL, NULL);
    assert_int_equal(sgfp4_tensor_decoded_sha256(NULL, hex, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_quality q;
    sgfp4_quality_init(&q);
    const float w[1] = {0};
    assert_int_equal(sgfp4_tensor_compare(NULL, w, 0, &q, NULL), SGFP4_ERR_ARGUMENT);
    float *m = weights(8, 8);
    encoded e = encode(m, 8, 8, 4.5);
    assert_int_equal(sgfp4_tensor_compare(e.t, NULL, 0, &q, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_tensor_compare(e.t, m, 0, NULL, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_tensor_decoded_sha256(e.t, NULL, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_decode_options d;
    sgfp4_decode_options_init(&d);
    d.threads = SGFP4_MAX_THREADS + 1;
    assert_int_equal(sgfp4_tensor_decoded_sha256(e.t, hex, &d), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_tensor_compare(e.t, m, 0, &q, &d), SGFP4_ERR_ARGUMENT);
    /* an all-zero reference: rel-L2 is infinite when the decode is not zero */
    const float zeros[64] = {0};
    assert_int_equal(sgfp4_tensor_compare(e.t, zeros, 0, &q, NULL), SGFP4_OK);
    assert_true(isinf(q.rel_l2) && isinf(q.snr_db) && q.snr_db < 0);
    release(&e);
    free(m);
}

static void matrix_view_of_model_tensors(void **state)
{
    (void)state;
    const uint64_t s3[3] = {2, 3, 5}, s1[1] = {7}, s0[1] = {0};
    sgfp4_model_tensor t = {"t", SGFP4_ST_F32, 3, s3, 30, 0, 120, NULL, NULL, 0};
    uint64_t rows, cols;
    assert_int_equal(sgfp4_model_tensor_matrix(&t, &rows, &cols), SGFP4_OK);
    assert_true(rows == 6 && cols == 5);
    t.rank = 1, t.shape = s1, t.elements = 7;
    assert_int_equal(sgfp4_model_tensor_matrix(&t, &rows, &cols), SGFP4_OK);
    assert_true(rows == 1 && cols == 7);
    t.rank = 0, t.elements = 1;
    assert_int_equal(sgfp4_model_tensor_matrix(&t, &rows, &cols), SGFP4_OK);
    assert_true(rows == 1 && cols == 1);
    t.rank = 1, t.shape = s0, t.elements = 0;
    assert_int_equal(sgfp4_model_tensor_matrix(&t, &rows, &cols), SGFP4_ERR_SHAPE);
    assert_int_equal(sgfp4_model_tensor_matrix(NULL, &rows, &cols), SGFP4_ERR_ARGUMENT);
}

/* A source model with a v2 matrix, a v1 matrix and a norm; quantized in memory; verified;
 * then one container byte flipped. */
static void whole_model_verify(void **state)
{
    (void)state;
    const uint64_t shape[2] = {64, 64}, norm_shape[1] = {64};
    const sgfp4_st_entry e[3] = {{"a.weight", SGFP4_ST_F32, 2, shape},
                                 {"b.weight", SGFP4_ST_F32, 2, shape},
                                 {"ln.weight", SGFP4_ST_F32, 1, norm_shape}};
    buffer src = {0};
    const sgfp4_sink sink = {buffer_write, &src};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(e, 3, NULL, NULL, 0, &sink, &w, NULL), SGFP4_OK);
    float *m = weights(64, 64);
    assert_int_equal(sgfp4_st_writer_write(w, m, 64 * 64 * 4), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_write(w, m, 64 * 64 * 4), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_write(w, m, 64 * 4), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    free(m);

    sgfp4_model *source = NULL;
    assert_int_equal(sgfp4_model_open_memory(src.data, src.size, &source, NULL, NULL), SGFP4_OK);
    sgfp4_model_verify_result r;
    sgfp4_model_verify_result_init(&r);
    assert_int_equal(sgfp4_model_verify(source, &r, NULL), SGFP4_OK);
    assert_true(r.tensors == 3 && r.quantized_v1 == 0 && r.quantized_v2 == 0);

    const char *rules = "{\"version\": 1, \"rules\": "
                        "[{\"match\": \"b.*\", \"profile\": \"v1\"}]}";
    sgfp4_model_policy *policy = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_policy_parse(rules, strlen(rules), &policy, &diag), SGFP4_OK);
    buffer q = {0};
    const sgfp4_sink qsink = {buffer_write, &q};
    assert_int_equal(sgfp4_model_encode(source, policy, &qsink, NULL, &diag), SGFP4_OK);
    sgfp4_model_policy_free(policy);
    sgfp4_model *quantized = NULL;
    assert_int_equal(sgfp4_model_open_memory(q.data, q.size, &quantized, NULL, NULL), SGFP4_OK);
    assert_int_equal(sgfp4_model_verify(quantized, &r, &diag), SGFP4_OK);
    assert_true(r.tensors == 3 && r.quantized_v1 == 1 && r.quantized_v2 == 1 && r.d6_aligned);
    const sgfp4_model_tensor *a = sgfp4_model_tensor_find(quantized, "a.weight");
    assert_non_null(a);
    assert_non_null(a->quant);
    q.data[a->offset + a->nbytes - 1] ^= 1; /* a payload byte: the hash no longer matches */
    assert_int_equal(sgfp4_model_verify(quantized, &r, &diag), SGFP4_ERR_HASH_MISMATCH);
    assert_non_null(strstr(diag.message, "a.weight"));
    assert_int_equal(sgfp4_model_verify(NULL, &r, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_model_close(quantized);
    sgfp4_model_close(source);
    free(q.data);
    free(src.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hashes_and_statistics_match_a_whole_decode),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(matrix_view_of_model_tensors),
        cmocka_unit_test(whole_model_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
