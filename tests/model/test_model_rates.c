/* Rates by sensitivity in whole-model encodes (docs/model.md, "Rates by sensitivity"): the
 * tensors that have both Fisher factors share the bytes their own targets allow, more going
 * to the tensor whose factors say its errors cost more; the total stays within that budget;
 * the bytes do not depend on the thread count; uniform rates encode each tensor as a single
 * encode at its own target; the default (auto) is rates by sensitivity with an importance
 * file and uniform without one; tensors whose bpw a rule sets keep it; the sensitivity mode
 * needs an importance file; the policy file key and the setter refuse unknown values.
 * SPDX-License-Identifier: MIT */
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
    size_t rank;
    uint64_t shape[2];
    const float *values;
} entry;

/* A safetensors file of F32 entries. */
static buffer write_file(const entry *e, size_t count)
{
    buffer b = {NULL, 0, 0};
    sgfp4_st_entry entries[16];
    for (size_t i = 0; i < count; i++)
        entries[i] = (sgfp4_st_entry){e[i].name, SGFP4_ST_F32, e[i].rank, e[i].shape};
    sgfp4_sink sink = {buffer_write, &b};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(entries, count, NULL, NULL, 0, &sink, &w, NULL),
                     SGFP4_OK);
    for (size_t i = 0; i < count; i++) {
        const uint64_t n = e[i].rank == 2 ? e[i].shape[0] * e[i].shape[1] : e[i].shape[0];
        assert_int_equal(sgfp4_st_writer_write(w, e[i].values, n * sizeof(float)), SGFP4_OK);
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

/* Bell-shaped weights with a few larger ones, as trained matrices have. */
static float *weights(uint64_t rows, uint64_t cols, uint32_t seed)
{
    float *m = malloc(rows * cols * sizeof *m);
    uint32_t x = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < rows * cols; i++) {
        float s = 0;
        for (int k = 0; k < 4; k++)
            s += (float)(next(&x) >> 8) / 16777216.0f - 0.5f;
        m[i] = (next(&x) % 61 == 0 ? 0.2f : 0.05f) * s;
    }
    return m;
}

static float *filled(uint64_t n, float first, float step)
{
    float *v = malloc(n * sizeof *v);
    for (uint64_t i = 0; i < n; i++)
        v[i] = first + step * (float)(i % 7);
    return v;
}

#define ROWS 128
#define COLS 256

/* The model: a.w and b.w hold the same weights, c.w others; the importance file gives all
 * three the same column factor and b.w rows 16 times a.w's (its errors cost 16 times as
 * much). d.w has columns only: it does not take part. */
typedef struct fixture {
    float *w, *c, *d, *columns, *rows_a, *rows_b, *rows_c;
    buffer model, importance;
} fixture;

static fixture make_fixture(void)
{
    fixture f;
    f.w = weights(ROWS, COLS, 1);
    f.c = weights(ROWS, COLS, 2);
    f.d = weights(ROWS, COLS, 3);
    f.columns = filled(COLS, 1.0f, 0.5f);
    f.rows_a = filled(ROWS, 1.0f, 0.25f);
    f.rows_b = filled(ROWS, 16.0f, 4.0f);
    f.rows_c = filled(ROWS, 2.0f, 0.5f);
    const entry m[] = {{"a.w", 2, {ROWS, COLS}, f.w},
                       {"b.w", 2, {ROWS, COLS}, f.w},
                       {"c.w", 2, {ROWS, COLS}, f.c},
                       {"d.w", 2, {ROWS, COLS}, f.d}};
    f.model = write_file(m, 4);
    const entry i[] = {{"a.w", 1, {COLS, 0}, f.columns},    {"a.w:rows", 1, {ROWS, 0}, f.rows_a},
                       {"b.w", 1, {COLS, 0}, f.columns},    {"b.w:rows", 1, {ROWS, 0}, f.rows_b},
                       {"c.w", 1, {COLS, 0}, f.columns},    {"c.w:rows", 1, {ROWS, 0}, f.rows_c},
                       {"d.w", 1, {COLS, 0}, f.columns}};
    f.importance = write_file(i, 7);
    return f;
}

static void free_fixture(fixture *f)
{
    free(f->w), free(f->c), free(f->d), free(f->columns);
    free(f->rows_a), free(f->rows_b), free(f->rows_c);
    free(f->model.data), free(f->importance.data);
}

typedef struct reports {
    double bpw[4], target[4];
    int rated[4];
    size_t count;
} reports;

static void on_tensor(void *user, const sgfp4_model_tensor_report *r)
{
    reports *rs = user;
    if (rs->count < 4) {
        rs->bpw[rs->count] = r->bits_per_weight;
        rs->target[rs->count] = r->target_bpw;
        rs->rated[rs->count] = r->rated;
    }
    rs->count++;
}

/* Encodes the fixture's model under the policy (NULL: the default) with `threads` encoder
 * threads, the importance file if `with_importance`; the output (free its data). */
static sgfp4_status encode(const fixture *f, sgfp4_model_policy *given, unsigned threads,
                           int with_importance, buffer *out, sgfp4_model_summary *summary,
                           reports *rs, sgfp4_diag *diag)
{
    sgfp4_model *src = NULL, *imp = NULL;
    assert_int_equal(sgfp4_model_open_memory(f->model.data, f->model.size, &src, NULL, NULL),
                     SGFP4_OK);
    if (with_importance)
        assert_int_equal(sgfp4_model_open_memory(f->importance.data, f->importance.size, &imp,
                                                 NULL, NULL),
                         SGFP4_OK);
    sgfp4_model_policy *policy = given;
    if (!policy)
        assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    sgfp4_model_policy_defaults(policy)->threads = threads;
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.importance = imp;
    o.summary = summary;
    o.tensor_report = on_tensor;
    o.progress_user = rs;
    *rs = (reports){{0}, {0}, {0}, 0};
    *out = (buffer){NULL, 0, 0};
    sgfp4_sink sink = {buffer_write, out};
    const sgfp4_status s = sgfp4_model_encode(src, policy, &sink, &o, diag);
    if (!given)
        sgfp4_model_policy_free(policy);
    sgfp4_model_close(imp);
    sgfp4_model_close(src);
    return s;
}

static sgfp4_model_policy *policy_with(sgfp4_model_rates rates)
{
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_create(&p), SGFP4_OK);
    assert_int_equal(sgfp4_model_policy_set_rates(p, rates), SGFP4_OK);
    return p;
}

static sgfp4_model_policy *parsed(const char *json)
{
    sgfp4_model_policy *p = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_policy_parse(json, strlen(json), &p, &diag) != SGFP4_OK)
        fail_msg("policy %s: %s", json, diag.message);
    return p;
}

/* The container bytes of tensor `name` in a quantized model. */
static uint64_t container_bytes(const buffer *out, const char *name)
{
    sgfp4_model *q = NULL;
    assert_int_equal(sgfp4_model_open_memory(out->data, out->size, &q, NULL, NULL), SGFP4_OK);
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(q, name);
    assert_non_null(t);
    assert_non_null(t->quant);
    const uint64_t n = t->nbytes;
    sgfp4_model_close(q);
    return n;
}

/* Tensor `name`'s container equals a single encode of w with both importance vectors at
 * target bpw. */
static void assert_single_encode(const buffer *out, const char *name, const float *w,
                                 const float *rows, double bpw)
{
    sgfp4_model *q = NULL;
    assert_int_equal(sgfp4_model_open_memory(out->data, out->size, &q, NULL, NULL), SGFP4_OK);
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(q, name);
    assert_non_null(t);
    float *columns = filled(COLS, 1.0f, 0.5f);
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.target_bpw = bpw;
    o.column_importance = columns;
    o.row_importance = rows;
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(sgfp4_encode_alloc(w, ROWS, COLS, 0, &bytes, &size, &o, NULL), SGFP4_OK);
    if (size != t->nbytes || memcmp(bytes, t->data, size) != 0)
        fail_msg("tensor %s: the model's container is not the single encode's at %.4f bpw",
                 name, bpw);
    sgfp4_free(bytes);
    free(columns);
    sgfp4_model_close(q);
}

static void sensitive_tensors_get_more_bits_within_the_budget(void **state)
{
    (void)state;
    fixture f = make_fixture();
    sgfp4_model_policy *p = policy_with(SGFP4_RATES_SENSITIVITY);
    buffer out;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    reports rs;
    sgfp4_diag diag;
    if (encode(&f, p, 2, 1, &out, &summary, &rs, &diag) != SGFP4_OK)
        fail_msg("encode: %s", diag.message);
    assert_int_equal(summary.quantized, 4);
    assert_int_equal(summary.rated, 3);
    assert_int_equal(rs.count, 4);
    const int rated[] = {1, 1, 1, 0};
    for (unsigned k = 0; k < 4; k++)
        assert_int_equal(rs.rated[k], rated[k]);
    /* b.w's errors cost 16 times a.w's: it gets more bits, a.w fewer than the default */
    if (!(rs.bpw[1] > rs.bpw[0] + 0.25 && rs.bpw[0] < 4.5 && rs.bpw[1] > 4.5))
        fail_msg("a.w %.4f bpw, b.w %.4f bpw", rs.bpw[0], rs.bpw[1]);
    assert_true(rs.target[3] == 4.5); /* d.w keeps its own target */
    /* the three share what their own targets allow, and use nearly all of it */
    const uint64_t total = container_bytes(&out, "a.w") + container_bytes(&out, "b.w") +
                           container_bytes(&out, "c.w");
    const double budget = 3 * 4.5 * ROWS * COLS / 8;
    if (!((double)total <= budget && (double)total >= 0.98 * budget))
        fail_msg("%llu bytes for a budget of %.0f", (unsigned long long)total, budget);
    /* each rated container is the single encode at the target it was given */
    assert_single_encode(&out, "a.w", f.w, f.rows_a, rs.target[0]);
    assert_single_encode(&out, "b.w", f.w, f.rows_b, rs.target[1]);
    free(out.data);
    sgfp4_model_policy_free(p);
    free_fixture(&f);
}

static void bytes_do_not_depend_on_threads(void **state)
{
    (void)state;
    fixture f = make_fixture();
    sgfp4_model_policy *p = policy_with(SGFP4_RATES_SENSITIVITY);
    buffer one, three;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    reports rs;
    sgfp4_diag diag;
    assert_int_equal(encode(&f, p, 1, 1, &one, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(encode(&f, p, 3, 1, &three, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(one.size, three.size);
    assert_memory_equal(one.data, three.data, one.size);
    free(one.data), free(three.data);
    sgfp4_model_policy_free(p);
    free_fixture(&f);
}

/* Uniform rates, set or the policy file's key: each tensor at its own target. */
static void uniform_rates_and_rule_rates_keep_each_target(void **state)
{
    (void)state;
    fixture f = make_fixture();
    sgfp4_model_policy *uniform = policy_with(SGFP4_RATES_UNIFORM);
    buffer out, by_file;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    reports rs;
    sgfp4_diag diag;
    assert_int_equal(encode(&f, uniform, 2, 1, &out, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(summary.rated, 0);
    assert_single_encode(&out, "a.w", f.w, f.rows_a, 4.5);
    assert_single_encode(&out, "b.w", f.w, f.rows_b, 4.5);
    assert_single_encode(&out, "c.w", f.c, f.rows_c, 4.5);
    sgfp4_model_policy *uniform_file = parsed("{\"rates\": \"uniform\"}");
    assert_int_equal(encode(&f, uniform_file, 2, 1, &by_file, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(summary.rated, 0);
    assert_int_equal(out.size, by_file.size);
    assert_memory_equal(out.data, by_file.data, out.size);
    free(by_file.data);
    sgfp4_model_policy_free(uniform_file);
    /* a rule's bpw is kept under sensitivity rates (the file's key): the others share */
    sgfp4_model_policy *rule = parsed("{\"rates\": \"sensitivity\", \"rules\": [{\"match\": "
                                      "\"b.w\", \"bpw\": 4.5}]}");
    buffer ruled;
    assert_int_equal(encode(&f, rule, 2, 1, &ruled, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(summary.rated, 2);
    assert_int_equal(rs.rated[1], 0);
    assert_single_encode(&ruled, "b.w", f.w, f.rows_b, 4.5);
    free(out.data), free(ruled.data);
    sgfp4_model_policy_free(uniform);
    sgfp4_model_policy_free(rule);
    free_fixture(&f);
}

/* The default policy (auto, and "auto" set or parsed) spreads the bits by sensitivity when
 * the encode has an importance file, and keeps every target without one. */
static void auto_rates_follow_the_importance_file(void **state)
{
    (void)state;
    fixture f = make_fixture();
    sgfp4_model_policy *sensitivity = policy_with(SGFP4_RATES_SENSITIVITY);
    sgfp4_model_policy *uniform = policy_with(SGFP4_RATES_UNIFORM);
    sgfp4_model_policy *set = policy_with(SGFP4_RATES_AUTO);
    sgfp4_model_policy *file = parsed("{\"rates\": \"auto\"}");
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    reports rs;
    sgfp4_diag diag;
    buffer rated, plain;
    assert_int_equal(encode(&f, sensitivity, 1, 1, &rated, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(summary.rated, 3);
    assert_int_equal(encode(&f, uniform, 1, 0, &plain, &summary, &rs, &diag), SGFP4_OK);
    sgfp4_model_policy *autos[3] = {NULL, set, file}; /* NULL: the default policy */
    for (unsigned k = 0; k < 3; k++) {
        buffer out;
        assert_int_equal(encode(&f, autos[k], 1, 1, &out, &summary, &rs, &diag), SGFP4_OK);
        assert_int_equal(summary.rated, 3);
        assert_int_equal(out.size, rated.size);
        assert_memory_equal(out.data, rated.data, out.size);
        free(out.data);
        assert_int_equal(encode(&f, autos[k], 1, 0, &out, &summary, &rs, &diag), SGFP4_OK);
        assert_int_equal(summary.rated, 0);
        assert_int_equal(out.size, plain.size);
        assert_memory_equal(out.data, plain.data, out.size);
        free(out.data);
    }
    free(rated.data), free(plain.data);
    sgfp4_model_policy_free(sensitivity);
    sgfp4_model_policy_free(uniform);
    sgfp4_model_policy_free(set);
    sgfp4_model_policy_free(file);
    free_fixture(&f);
}

static void sensitivity_needs_an_importance_file(void **state)
{
    (void)state;
    fixture f = make_fixture();
    sgfp4_model_policy *p = parsed("{\"rates\": \"sensitivity\"}");
    buffer out;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    reports rs;
    sgfp4_diag diag;
    assert_int_equal(encode(&f, p, 1, 0, &out, &summary, &rs, &diag), SGFP4_ERR_ARGUMENT);
    assert_non_null(strstr(diag.message, "rates by sensitivity need an importance file"));
    assert_int_equal(out.size, 0);
    free(out.data);
    /* the default (auto) needs none */
    assert_int_equal(encode(&f, NULL, 1, 0, &out, &summary, &rs, &diag), SGFP4_OK);
    assert_int_equal(summary.rated, 0);
    free(out.data);
    sgfp4_model_policy_free(p);
    free_fixture(&f);
}

static void unknown_rates_are_refused(void **state)
{
    (void)state;
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_create(&p), SGFP4_OK);
    assert_int_equal(sgfp4_model_policy_set_rates(p, (sgfp4_model_rates)7), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_policy_set_rates(p, SGFP4_RATES_SENSITIVITY), SGFP4_OK);
    assert_int_equal(sgfp4_model_policy_set_rates(NULL, SGFP4_RATES_UNIFORM),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_model_policy_free(p);
    static const char *const bad[] = {"{\"rates\": \"fast\"}", "{\"rates\": 1}"};
    for (unsigned k = 0; k < 2; k++) {
        sgfp4_model_policy *q = NULL;
        sgfp4_diag diag;
        assert_int_equal(sgfp4_model_policy_parse(bad[k], strlen(bad[k]), &q, &diag),
                         SGFP4_ERR_ARGUMENT);
        assert_null(q);
        if (!strstr(diag.message, "rates must be \"auto\", \"uniform\" or \"sensitivity\""))
            fail_msg("%s: %s", bad[k], diag.message);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sensitive_tensors_get_more_bits_within_the_budget),
        cmocka_unit_test(bytes_do_not_depend_on_threads),
        cmocka_unit_test(uniform_rates_and_rule_rates_keep_each_target),
        cmocka_unit_test(auto_rates_follow_the_importance_file),
        cmocka_unit_test(sensitivity_needs_an_importance_file),
        cmocka_unit_test(unknown_rates_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
