/* Whole-model encoding with input Hessians in the importance file (docs/encoder.md, "The
 * importance file"): NAME:hessian, or the tensor its metadata alias names, calibrates tensor
 * NAME exactly as a single encode with that Hessian does (F32 read in place, F16 converted);
 * matrices that share an input share one prepared Hessian, even with another between them;
 * the summary, the tensor reports and the manifest say which tensors were calibrated; a
 * Hessian of the wrong shape, a dangling alias and a matrix that is no Hessian are refused,
 * naming the entry.
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

#include "model/model_internal.h"
#include "sgfp4.h"
#include "sgfp4_model.h"
#include "support/buffer_sink.h"

typedef struct entry {
    const char *name;
    sgfp4_st_dtype dtype; /* F32 or F16 */
    size_t rank;
    uint64_t shape[2];
    const float *values;
} entry;

/* A safetensors file of the entries (F16 ones converted from their float values), with
 * metadata pairs. */
static buffer write_file(const entry *e, size_t count, const char *const *keys,
                         const char *const *values, size_t meta)
{
    buffer b = {NULL, 0, 0};
    sgfp4_st_entry entries[16];
    for (size_t i = 0; i < count; i++)
        entries[i] = (sgfp4_st_entry){e[i].name, e[i].dtype, e[i].rank, e[i].shape};
    sgfp4_sink sink = {buffer_write, &b};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(entries, count, keys, values, meta, &sink, &w, NULL),
                     SGFP4_OK);
    for (size_t i = 0; i < count; i++) {
        const uint64_t n = e[i].rank == 2 ? e[i].shape[0] * e[i].shape[1] : e[i].shape[0];
        if (e[i].dtype == SGFP4_ST_F32) {
            assert_int_equal(sgfp4_st_writer_write(w, e[i].values, n * sizeof(float)), SGFP4_OK);
            continue;
        }
        uint16_t *half = malloc(n * sizeof *half);
        for (uint64_t k = 0; k < n; k++)
            half[k] = sgfp4_float_to_half(e[i].values[k]);
        assert_int_equal(sgfp4_st_writer_write(w, half, n * sizeof *half), SGFP4_OK);
        free(half);
    }
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    return b;
}

static uint32_t next(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static float *weights(uint64_t rows, uint64_t cols, uint32_t seed)
{
    float *m = malloc(rows * cols * sizeof *m);
    uint32_t x = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < rows * cols; i++) {
        float s = 0;
        for (int k = 0; k < 4; k++)
            s += (float)(next(&x) >> 8) / 16777216.0f - 0.5f;
        m[i] = 0.05f * s;
    }
    return m;
}

/* E[x x^T] of correlated activations (a few shared factors and noise), values exactly
 * representable in fp16 (so an F16 copy is the same matrix). */
static float *hessian(unsigned n, uint32_t seed)
{
    const unsigned tokens = 4 * n, factors = 4;
    uint32_t x = seed * 747796405u + 3;
    double *sum = calloc((size_t)n * n, sizeof *sum), *v = malloc(n * sizeof *v);
    double mix[4][256];
    for (unsigned f = 0; f < factors; f++)
        for (unsigned j = 0; j < n; j++)
            mix[f][j] = (double)(next(&x) >> 8) / 16777216.0 - 0.5;
    for (unsigned t = 0; t < tokens; t++) {
        double z[4];
        for (unsigned f = 0; f < factors; f++)
            z[f] = (double)(next(&x) >> 8) / 8388608.0 - 1.0;
        for (unsigned j = 0; j < n; j++) {
            v[j] = 0.3 * ((double)(next(&x) >> 8) / 8388608.0 - 1.0);
            for (unsigned f = 0; f < factors; f++)
                v[j] += z[f] * mix[f][j];
        }
        for (unsigned a = 0; a < n; a++)
            for (unsigned b = 0; b < n; b++)
                sum[(size_t)a * n + b] += v[a] * v[b];
    }
    float *h = malloc((size_t)n * n * sizeof *h);
    for (size_t i = 0; i < (size_t)n * n; i++)
        h[i] = sgfp4_half_to_float(sgfp4_float_to_half((float)(sum[i] / tokens)));
    free(sum);
    free(v);
    return h;
}

/* The model: a.wq [96, 128] and a.wk [64, 128] read one input, a.wo [128, 96] another; b.w
 * [64, 96] has no Hessian. */
typedef struct fixture {
    float *wq, *wk, *wo, *bw, *h128, *h96, *cols96;
    buffer model;
} fixture;

static fixture make_fixture(void)
{
    fixture f;
    f.wq = weights(96, 128, 1);
    f.wk = weights(64, 128, 2);
    f.wo = weights(128, 96, 3);
    f.bw = weights(64, 96, 4);
    f.h128 = hessian(128, 5);
    f.h96 = hessian(96, 6);
    f.cols96 = malloc(96 * sizeof *f.cols96);
    for (unsigned j = 0; j < 96; j++)
        f.cols96[j] = 1.0f + (float)(j % 5);
    /* wo comes between the two readers of the first input */
    const entry e[] = {{"a.wq", SGFP4_ST_F32, 2, {96, 128}, f.wq},
                       {"a.wo", SGFP4_ST_F32, 2, {128, 96}, f.wo},
                       {"a.wk", SGFP4_ST_F32, 2, {64, 128}, f.wk},
                       {"b.w", SGFP4_ST_F32, 2, {64, 96}, f.bw}};
    f.model = write_file(e, 4, NULL, NULL, 0);
    return f;
}

static void free_fixture(fixture *f)
{
    free(f->wq), free(f->wk), free(f->wo), free(f->bw), free(f->h128), free(f->h96);
    free(f->cols96);
    free(f->model.data);
}

typedef struct reports {
    int calibrated[4];
    size_t count;
} reports;

static void on_tensor(void *user, const sgfp4_model_tensor_report *r)
{
    reports *rs = user;
    if (rs->count < 4)
        rs->calibrated[rs->count] = r->calibrated;
    rs->count++;
}

/* Encodes the fixture's model with the importance file; the output (free its data). */
static sgfp4_status encode(const fixture *f, const buffer *importance, buffer *out,
                           sgfp4_model_summary *summary, reports *rs, sgfp4_diag *diag)
{
    sgfp4_model *src = NULL, *imp = NULL;
    assert_int_equal(sgfp4_model_open_memory(f->model.data, f->model.size, &src, NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_model_open_memory(importance->data, importance->size, &imp, NULL,
                                             NULL),
                     SGFP4_OK);
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    sgfp4_model_policy_defaults(policy)->threads = 2;
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.importance = imp;
    o.summary = summary;
    o.tensor_report = on_tensor;
    o.progress_user = rs;
    *out = (buffer){NULL, 0, 0};
    sgfp4_sink sink = {buffer_write, out};
    const sgfp4_status s = sgfp4_model_encode(src, policy, &sink, &o, diag);
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(imp);
    sgfp4_model_close(src);
    return s;
}

/* The container of tensor `name` in a quantized model equals a single encode of w with the
 * Hessian h (or none) and the column importance cols; its manifest says so. */
static void assert_container(const buffer *out, const char *name, const float *w, uint64_t rows,
                             uint64_t cols, const float *h, const float *columns)
{
    sgfp4_model *q = NULL;
    assert_int_equal(sgfp4_model_open_memory(out->data, out->size, &q, NULL, NULL), SGFP4_OK);
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(q, name);
    assert_non_null(t);
    assert_non_null(t->quant);
    sgfp4_hessian *hs = NULL;
    if (h)
        assert_int_equal(sgfp4_hessian_create(h, cols, 0, NULL, &hs, NULL), SGFP4_OK);
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.hessian = hs;
    o.column_importance = columns;
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
    if (size != t->nbytes || memcmp(bytes, t->data, size) != 0)
        fail_msg("tensor %s: the model's container is not the single encode's", name);
    const int says = strstr(t->quant->encoder_json, "\"calibration\":\"hessian\"") != NULL;
    if (says != (h != NULL))
        fail_msg("tensor %s: manifest %s", name, t->quant->encoder_json);
    sgfp4_free(bytes);
    sgfp4_hessian_free(hs);
    sgfp4_model_close(q);
}

static void hessians_reach_their_tensors(void **state)
{
    (void)state;
    fixture f = make_fixture();
    /* a.wq's Hessian in F32, a.wk's an alias of it, a.wo's in F16; b.w only columns */
    const entry e[] = {{"a.wq:hessian", SGFP4_ST_F32, 2, {128, 128}, f.h128},
                       {"a.wo:hessian", SGFP4_ST_F16, 2, {96, 96}, f.h96},
                       {"b.w", SGFP4_ST_F32, 1, {96, 0}, f.cols96}};
    const char *keys[] = {"a.wk:hessian", "tokens"}, *values[] = {"a.wq:hessian", "512"};
    buffer importance = write_file(e, 3, keys, values, 2);
    buffer out;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    reports rs = {{0}, 0};
    sgfp4_diag diag;
    if (encode(&f, &importance, &out, &summary, &rs, &diag) != SGFP4_OK)
        fail_msg("encode: %s", diag.message);
    assert_int_equal(summary.quantized, 4);
    assert_int_equal(summary.calibrated, 3);
    assert_int_equal(rs.count, 4);
    const int expect[] = {1, 1, 1, 0}; /* file order: wq, wo, wk, b.w */
    for (unsigned k = 0; k < 4; k++)
        assert_int_equal(rs.calibrated[k], expect[k]);
    assert_container(&out, "a.wq", f.wq, 96, 128, f.h128, NULL);
    assert_container(&out, "a.wk", f.wk, 64, 128, f.h128, NULL);
    assert_container(&out, "a.wo", f.wo, 128, 96, f.h96, NULL);
    assert_container(&out, "b.w", f.bw, 64, 96, NULL, f.cols96);
    free(out.data);
    free(importance.data);
    free_fixture(&f);
}

/* Matrices that read one input get one prepared Hessian, with another one between them. */
static void a_shared_input_is_prepared_once(void **state)
{
    (void)state;
    fixture f = make_fixture();
    const entry e[] = {{"a.wq:hessian", SGFP4_ST_F32, 2, {128, 128}, f.h128},
                       {"a.wo:hessian", SGFP4_ST_F16, 2, {96, 96}, f.h96}};
    const char *keys[] = {"a.wk:hessian"}, *values[] = {"a.wq:hessian"};
    buffer importance = write_file(e, 2, keys, values, 1);
    sgfp4_model *src = NULL, *imp = NULL;
    assert_int_equal(sgfp4_model_open_memory(f.model.data, f.model.size, &src, NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_model_open_memory(importance.data, importance.size, &imp, NULL, NULL),
                     SGFP4_OK);
    hessian_cache cache = {{NULL, NULL}, {NULL, NULL}, 0};
    const sgfp4_hessian *wq = NULL, *wo = NULL, *wk = NULL, *bw = NULL;
    assert_int_equal(sgfp4_importance_hessian(imp, sgfp4_model_tensor_find(src, "a.wq"), 128, 1,
                                              &cache, &wq, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_importance_hessian(imp, sgfp4_model_tensor_find(src, "a.wo"), 96, 1,
                                              &cache, &wo, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_importance_hessian(imp, sgfp4_model_tensor_find(src, "a.wk"), 128, 1,
                                              &cache, &wk, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_importance_hessian(imp, sgfp4_model_tensor_find(src, "b.w"), 96, 1,
                                              &cache, &bw, NULL),
                     SGFP4_OK);
    assert_non_null(wq);
    assert_non_null(wo);
    assert_ptr_equal(wk, wq);
    assert_null(bw);
    assert_int_equal(sgfp4_hessian_dim(wo), 96);
    sgfp4_hessian_cache_free(&cache);
    sgfp4_model_close(imp);
    sgfp4_model_close(src);
    free(importance.data);
    free_fixture(&f);
}

static void bad_hessian_entries_are_refused(void **state)
{
    (void)state;
    fixture f = make_fixture();
    float *asymmetric = malloc(96 * 96 * sizeof *asymmetric);
    memcpy(asymmetric, f.h96, 96 * 96 * sizeof *asymmetric);
    asymmetric[3 * 96 + 50] += 1.0f;
    const struct {
        entry e;
        const char *alias_key, *alias_value, *expect;
    } cases[] = {
        /* the wrong shape */
        {{"a.wq:hessian", SGFP4_ST_F32, 2, {96, 96}, f.h96}, NULL, NULL,
         "importance 'a.wq:hessian': a Hessian of 9216 elements for tensor 'a.wq' of 128 "
         "columns"},
        /* an alias to no tensor */
        {{"x", SGFP4_ST_F32, 2, {96, 96}, f.h96}, "a.wk:hessian", "a.wq:hessian",
         "the metadata alias 'a.wk:hessian' names 'a.wq:hessian', which is not a tensor"},
        /* not a Hessian */
        {{"a.wo:hessian", SGFP4_ST_F32, 2, {96, 96}, asymmetric}, NULL, NULL,
         "importance 'a.wo:hessian': hessian: not symmetric: [3][50]"},
    };
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *keys[] = {cases[k].alias_key}, *values[] = {cases[k].alias_value};
        buffer importance = write_file(&cases[k].e, 1, keys, values, cases[k].alias_key ? 1 : 0);
        buffer out;
        sgfp4_model_summary summary;
        sgfp4_model_summary_init(&summary);
        reports rs = {{0}, 0};
        sgfp4_diag diag;
        assert_int_equal(encode(&f, &importance, &out, &summary, &rs, &diag), SGFP4_ERR_ARGUMENT);
        if (!strstr(diag.message, cases[k].expect))
            fail_msg("case %u: '%s' does not say '%s'", k, diag.message, cases[k].expect);
        free(out.data);
        free(importance.data);
    }
    free(asymmetric);
    free_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hessians_reach_their_tensors),
        cmocka_unit_test(a_shared_input_is_prepared_once),
        cmocka_unit_test(bad_hessian_entries_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
