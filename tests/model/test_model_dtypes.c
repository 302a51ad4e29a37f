/* Every safetensors dtype: names, sizes (sub-byte dtypes included) and the header rules for
 * them; the 8-bit float conversions against an independent oracle; and a model holding every
 * dtype through encode -> verify -> decode: FP8 matrices quantized and restored to FP8, the
 * rest passed through byte for byte; the job's per-tensor reports and summary.
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
#include "support/buffer_sink.h"

/* ---- names and sizes ----------------------------------------------------------------- */

static void test_names_and_sizes(void **state)
{
    (void)state;
    /* The safetensors specification's list (its Rust Dtype) with bits per element. */
    static const struct {
        const char *name;
        unsigned bits;
    } spec[] = {{"BOOL", 8},    {"F4", 4},          {"F6_E2M3", 6},     {"F6_E3M2", 6},
                {"U8", 8},      {"I8", 8},          {"F8_E5M2", 8},     {"F8_E4M3", 8},
                {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
                {"U16", 16},    {"F16", 16},        {"BF16", 16},       {"I32", 32},
                {"U32", 32},    {"F32", 32},        {"C64", 64},        {"F64", 64},
                {"I64", 64},    {"U64", 64}};
    assert_int_equal(sizeof spec / sizeof spec[0], SGFP4_ST_DTYPE_COUNT);
    for (size_t k = 0; k < sizeof spec / sizeof spec[0]; k++) {
        sgfp4_st_dtype d;
        assert_int_equal(sgfp4_st_dtype_parse(spec[k].name, &d), SGFP4_OK);
        assert_string_equal(sgfp4_st_dtype_name(d), spec[k].name);
        assert_int_equal(sgfp4_st_dtype_bits(d), spec[k].bits);
        assert_int_equal(sgfp4_st_dtype_size(d), spec[k].bits % 8 ? 0 : spec[k].bits / 8);
    }
    sgfp4_st_dtype d;
    assert_int_equal(sgfp4_st_dtype_parse("F8_E4M3FN", &d), SGFP4_ERR_MODEL_DTYPE);
    assert_int_equal(sgfp4_st_dtype_parse("f32", &d), SGFP4_ERR_MODEL_DTYPE);
    assert_int_equal(sgfp4_st_dtype_parse(NULL, &d), SGFP4_ERR_ARGUMENT);
    assert_null(sgfp4_st_dtype_name(SGFP4_ST_DTYPE_COUNT));
    assert_int_equal(sgfp4_st_dtype_bits(SGFP4_ST_DTYPE_COUNT), 0);

    uint64_t bytes = 0;
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F4, 6, &bytes), 0);
    assert_int_equal(bytes, 3);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F4, 7, &bytes), SGFP4_ERR_SHAPE);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F6_E2M3, 4, &bytes), 0);
    assert_int_equal(bytes, 3);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F6_E3M2, 6, &bytes),
                     SGFP4_ERR_SHAPE); /* 36 bits */
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F6_E3M2, 8, &bytes), 0);
    assert_int_equal(bytes, 6);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_C64, 3, &bytes), 0);
    assert_int_equal(bytes, 24);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F4, UINT64_MAX - 1, &bytes), 0);
    assert_int_equal(bytes, (UINT64_MAX - 1) / 2);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_U16, UINT64_MAX / 2 + 1, &bytes),
                     SGFP4_ERR_LIMIT);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F64, UINT64_MAX / 8, &bytes), 0);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_F64, UINT64_MAX / 8 + 1, &bytes),
                     SGFP4_ERR_LIMIT);
    assert_int_equal(sgfp4_st_dtype_bytes(SGFP4_ST_DTYPE_COUNT, 1, &bytes), SGFP4_ERR_ARGUMENT);

    const sgfp4_st_dtype quantizable[] = {SGFP4_ST_F32, SGFP4_ST_F16, SGFP4_ST_BF16,
                                          SGFP4_ST_F8_E4M3, SGFP4_ST_F8_E5M2};
    size_t count = 0;
    for (unsigned k = 0; k < SGFP4_ST_DTYPE_COUNT; k++)
        count += (size_t)sgfp4_st_dtype_is_quantizable((sgfp4_st_dtype)k);
    assert_int_equal(count, 5);
    for (size_t k = 0; k < 5; k++)
        assert_true(sgfp4_st_dtype_is_quantizable(quantizable[k]));
}

/* ---- the header rules for sub-byte dtypes --------------------------------------------- */

static sgfp4_status open_header(const char *header, size_t data, sgfp4_diag *diag)
{
    const size_t n = strlen(header);
    uint8_t *b = calloc(1, 8 + n + data);
    for (int k = 0; k < 8; k++)
        b[k] = (uint8_t)((uint64_t)n >> (8 * k));
    memcpy(b + 8, header, n);
    sgfp4_model *m = NULL;
    const sgfp4_status s = sgfp4_model_open_memory(b, 8 + n + data, &m, NULL, diag);
    sgfp4_model_close(m);
    free(b);
    return s;
}

static void test_header_sub_byte(void **state)
{
    (void)state;
    sgfp4_diag diag;
    assert_int_equal(open_header("{\"a\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[0,3]},"
                                 "\"b\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[3,6]},"
                                 "\"c\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[6,14]},"
                                 "\"d\":{\"dtype\":\"F8_E8M0\",\"shape\":[2],\"data_offsets\":[14,16]}}",
                                 16, &diag),
                     SGFP4_OK);
    assert_int_equal(open_header("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2,
                                 &diag),
                     SGFP4_ERR_MODEL_OFFSETS);
    assert_non_null(strstr(diag.message, "not a whole number of bytes"));
    assert_non_null(strstr(diag.message, "'a'"));
    /* A whole number of bytes, but the wrong number. */
    assert_int_equal(open_header("{\"a\":{\"dtype\":\"F6_E3M2\",\"shape\":[8],\"data_offsets\":[0,8]}}",
                                 8, &diag),
                     SGFP4_ERR_MODEL_OFFSETS);
    assert_non_null(strstr(diag.message, "shape x dtype is 6"));
}

/* ---- 8-bit floats against an oracle written from the formats' definitions ------------- */

/* Value of a code, from the definition (NaN for NaN codes, +-inf for E5M2's infinities). */
static double oracle_value(uint8_t code, int e5m2)
{
    const int sign = code >> 7;
    const int ebits = e5m2 ? 5 : 4, mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    const int e = (code & 0x7F) >> mbits, m = code & ((1 << mbits) - 1);
    double v;
    if (e5m2 && e == (1 << ebits) - 1)
        v = m ? NAN : INFINITY;
    else if (!e5m2 && e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, 1 - bias - mbits);
    else
        v = ldexp((1 << mbits) + m, e - bias - mbits);
    return sign ? -v : v;
}

/* The nearest finite code of x's sign (saturating), ties to the even code. */
static uint8_t oracle_round(float x, int e5m2)
{
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    const double ax = fabs((double)x);
    int best = -1;
    double best_d = 0;
    /* At or above the largest finite value that one is nearest (checked apart: far above
     * it the double differences below would round to ties). */
    const int largest = e5m2 ? 0x7B : 0x7E;
    if (ax >= oracle_value((uint8_t)largest, e5m2))
        return sign | (uint8_t)largest;
    for (int c = 0; c < 128; c++) {
        const double v = oracle_value((uint8_t)c, e5m2);
        if (!isfinite(v))
            continue;
        const double d = fabs(ax - v);
        if (best < 0 || d < best_d || (d == best_d && (c & 1) == 0)) {
            best = c;
            best_d = d;
        }
    }
    return sign | (uint8_t)best;
}

static uint32_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

static void check_round(float x)
{
    const uint8_t a = sgfp4_float_to_f8e4m3(x), b = sgfp4_float_to_f8e5m2(x);
    const uint8_t wa = oracle_round(x, 0), wb = oracle_round(x, 1);
    if (a != wa || b != wb)
        fail_msg("x = %a: e4m3 0x%02x (want 0x%02x), e5m2 0x%02x (want 0x%02x)", (double)x, a, wa,
                 b, wb);
}

static void test_f8_conversions(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++) {
        for (int f = 0; f < 2; f++) {
            const double want = oracle_value((uint8_t)c, f);
            const float got = f ? sgfp4_f8e5m2_to_float((uint8_t)c) : sgfp4_f8e4m3_to_float((uint8_t)c);
            if (isnan(want)) {
                assert_true(isnan(got));
                continue;
            }
            if (!((double)got == want && !signbit(got) == !signbit(want)))
                fail_msg("code 0x%02x (%s): %a, want %a", c, f ? "e5m2" : "e4m3", (double)got, want);
            /* every finite code round-trips, and so do the edges around it */
            if (isfinite(want)) {
                const uint8_t back = f ? sgfp4_float_to_f8e5m2(got) : sgfp4_float_to_f8e4m3(got);
                assert_int_equal(back, c);
                check_round(nextafterf(got, INFINITY));
                check_round(nextafterf(got, -INFINITY));
            }
        }
    }
    /* midpoints between neighbours (ties to even) and one ulp either side */
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 127; c++) {
            const double lo = oracle_value((uint8_t)c, f), hi = oracle_value((uint8_t)(c + 1), f);
            if (!isfinite(lo) || !isfinite(hi))
                continue;
            const float mid = (float)((lo + hi) / 2); /* one bit more: exact in float32 */
            assert_true((double)mid == (lo + hi) / 2);
            for (int sgn = 0; sgn < 2; sgn++) {
                const float m = sgn ? -mid : mid;
                check_round(m);
                check_round(nextafterf(m, INFINITY));
                check_round(nextafterf(m, -INFINITY));
            }
        }
    /* saturation, infinities, NaN, zeros */
    assert_int_equal(sgfp4_float_to_f8e4m3(448.0f), 0x7E);
    assert_int_equal(sgfp4_float_to_f8e4m3(464.0f), 0x7E);
    assert_int_equal(sgfp4_float_to_f8e4m3(1e30f), 0x7E);
    assert_int_equal(sgfp4_float_to_f8e4m3(-INFINITY), 0xFE);
    assert_int_equal(sgfp4_float_to_f8e5m2(61440.0f), 0x7B);
    assert_int_equal(sgfp4_float_to_f8e5m2(INFINITY), 0x7B);
    assert_int_equal(sgfp4_float_to_f8e5m2(-1e38f), 0xFB);
    assert_true(isnan(sgfp4_f8e4m3_to_float(sgfp4_float_to_f8e4m3(NAN))));
    assert_true(isnan(sgfp4_f8e5m2_to_float(sgfp4_float_to_f8e5m2(NAN))));
    assert_int_equal(sgfp4_float_to_f8e4m3(-0.0f), 0x80);
    assert_int_equal(sgfp4_float_to_f8e5m2(-1e-30f), 0x80);
    /* random floats: any bits, then values in the formats' ranges */
    uint64_t seed = 12345;
    for (int k = 0; k < 20000; k++) {
        uint32_t bits = rng_next(&seed);
        float x;
        memcpy(&x, &bits, 4);
        if (isfinite(x))
            check_round(x);
        const float y = ldexpf((float)rng_next(&seed) / 4294967296.0f, (int)(rng_next(&seed) % 40) - 22);
        check_round(k & 1 ? -y : y);
    }
    /* In place narrowing packs the bytes at the start. */
    float buf[4] = {1.0f, -2.0f, 0.5f, 448.0f};
    assert_int_equal(sgfp4_st_narrow_f32(SGFP4_ST_F8_E4M3, buf, 4), 4);
    const uint8_t *b = (const uint8_t *)buf;
    assert_int_equal(b[0], 0x38);
    assert_int_equal(b[1], 0xC0);
    assert_int_equal(b[2], 0x30);
    assert_int_equal(b[3], 0x7E);
}

/* ---- a model holding every dtype ----------------------------------------------------- */

#define NT 20
typedef struct spec_tensor {
    const char *name;
    sgfp4_st_dtype dtype;
    uint64_t shape[2];
    int quantized; /* what the default policy must do */
} spec_tensor;

static const spec_tensor model_spec[NT] = {
    {"layers.0.q.weight", SGFP4_ST_F8_E4M3, {128, 128}, 1},
    {"layers.0.k.weight", SGFP4_ST_F8_E5M2, {128, 192}, 1},
    {"layers.0.v.weight", SGFP4_ST_BF16, {128, 128}, 1},
    {"layers.0.q.weight_scale_inv", SGFP4_ST_F32, {128, 128}, 0},
    {"layers.0.mx.scales", SGFP4_ST_F8_E8M0, {128, 128}, 0},
    {"layers.0.mx.f4", SGFP4_ST_F4, {128, 128}, 0},
    {"layers.0.mx.f6a", SGFP4_ST_F6_E2M3, {128, 128}, 0},
    {"layers.0.mx.f6b", SGFP4_ST_F6_E3M2, {128, 128}, 0},
    {"fnuz.a", SGFP4_ST_F8_E4M3FNUZ, {128, 128}, 0},
    {"fnuz.b", SGFP4_ST_F8_E5M2FNUZ, {128, 128}, 0},
    {"complex", SGFP4_ST_C64, {64, 64}, 0},
    {"double", SGFP4_ST_F64, {64, 64}, 0},
    {"mask", SGFP4_ST_BOOL, {64, 64}, 0},
    {"u16", SGFP4_ST_U16, {64, 64}, 0},
    {"u32", SGFP4_ST_U32, {64, 64}, 0},
    {"u64", SGFP4_ST_U64, {64, 64}, 0},
    {"i8", SGFP4_ST_I8, {64, 64}, 0},
    {"i16", SGFP4_ST_I16, {64, 64}, 0},
    {"i64", SGFP4_ST_I64, {64, 64}, 0},
    {"u8", SGFP4_ST_U8, {64, 64}, 0},
};

static float gauss(uint64_t *s)
{
    float v = 0;
    for (int k = 0; k < 4; k++)
        v += (float)rng_next(s) / 4294967296.0f - 0.5f;
    return v;
}

/* Tensor bytes: valid floats for the quantizable ones, random bytes for the rest. */
static uint8_t *tensor_data(const spec_tensor *t, uint64_t *nbytes, uint64_t *seed)
{
    const uint64_t n = t->shape[0] * t->shape[1];
    assert_int_equal(sgfp4_st_dtype_bytes(t->dtype, n, nbytes), 0);
    uint8_t *p = malloc(*nbytes);
    for (uint64_t k = 0; k < n && sgfp4_st_dtype_is_quantizable(t->dtype); k++) {
        const float v = gauss(seed) * (t->dtype == SGFP4_ST_F8_E5M2 ? 1000.0f : 1.0f);
        if (t->dtype == SGFP4_ST_F8_E4M3)
            p[k] = sgfp4_float_to_f8e4m3(v);
        else if (t->dtype == SGFP4_ST_F8_E5M2)
            p[k] = sgfp4_float_to_f8e5m2(v);
        else if (t->dtype == SGFP4_ST_BF16) {
            const uint16_t h = sgfp4_float_to_bf16(v);
            memcpy(p + 2 * k, &h, 2);
        } else
            memcpy(p + 4 * k, &v, 4);
    }
    for (uint64_t k = 0; k < *nbytes && !sgfp4_st_dtype_is_quantizable(t->dtype); k++)
        p[k] = (uint8_t)rng_next(seed);
    return p;
}

static buffer make_model(void)
{
    sgfp4_st_entry entries[NT];
    uint8_t *data[NT];
    uint64_t sizes[NT], seed = 7;
    for (int k = 0; k < NT; k++) {
        entries[k] = (sgfp4_st_entry){model_spec[k].name, model_spec[k].dtype, 2,
                                      model_spec[k].shape};
        data[k] = tensor_data(&model_spec[k], &sizes[k], &seed);
    }
    buffer out = {0};
    const sgfp4_sink sink = {buffer_write, &out};
    const char *keys[] = {"format"}, *values[] = {"pt"};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(entries, NT, keys, values, 1, &sink, &w, NULL), SGFP4_OK);
    for (int k = 0; k < NT; k++) {
        assert_int_equal(sgfp4_st_writer_write(w, data[k], sizes[k]), SGFP4_OK);
        free(data[k]);
    }
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    return out;
}

typedef struct reports {
    size_t count, quantized, above, below;
    uint64_t bytes_in, bytes_out;
    int order_ok;
} reports;

static void on_tensor(void *user, const sgfp4_model_tensor_report *r)
{
    reports *rep = user;
    rep->order_ok = rep->order_ok && r->index == rep->count && r->tensor && r->count == NT &&
                    r->bytes_in == r->tensor->nbytes && r->reason && r->seconds >= 0;
    rep->count++;
    rep->quantized += (size_t)r->quantized;
    rep->above += r->target_miss > 0;
    rep->below += r->target_miss < 0;
    rep->bytes_in += r->bytes_in;
    rep->bytes_out += r->bytes_out;
    if (r->quantized) {
        const double bpw = 8.0 * (double)r->bytes_out / (double)r->tensor->elements;
        rep->order_ok = rep->order_ok && fabs(bpw - r->bits_per_weight) < 1e-9 &&
                        r->target_bpw > 0 &&
                        (r->target_miss > 0) == (r->bits_per_weight > r->target_bpw);
    }
}

static double rel_l2(const sgfp4_model_tensor *a, const sgfp4_model_tensor *b)
{
    const size_t n = (size_t)a->elements;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    assert_int_equal(sgfp4_model_tensor_to_f32(a, 1, x, n * 4, NULL), SGFP4_OK);
    assert_int_equal(sgfp4_model_tensor_to_f32(b, 1, y, n * 4, NULL), SGFP4_OK);
    double e = 0, s = 0;
    for (size_t k = 0; k < n; k++) {
        e += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
        s += (double)x[k] * x[k];
    }
    free(x);
    free(y);
    return sqrt(e / s);
}

/* Encodes the every-dtype model at `bpw` and checks what the reports and the summary say;
 * returns the quantized bytes. */
static buffer encode_model(const sgfp4_model *src, double bpw, reports *rep,
                           sgfp4_model_summary *sum)
{
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    sgfp4_model_policy_defaults(policy)->target_bpw = bpw;
    sgfp4_model_policy_defaults(policy)->threads = 1;
    buffer q = {0};
    const sgfp4_sink sink = {buffer_write, &q};
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    *rep = (reports){.order_ok = 1};
    wo.tensor_report = on_tensor;
    wo.progress_user = rep;
    wo.summary = sum;
    sgfp4_diag diag;
    if (sgfp4_model_encode(src, policy, &sink, &wo, &diag) != SGFP4_OK)
        fail_msg("encode: %s", diag.message);
    sgfp4_model_policy_free(policy);
    assert_true(rep->order_ok);
    assert_int_equal(rep->count, NT);
    assert_int_equal(sum->tensors, NT);
    assert_int_equal(sum->quantized, rep->quantized);
    assert_int_equal(sum->bytes_in, rep->bytes_in);
    assert_int_equal(sum->bytes_out, rep->bytes_out);
    assert_int_equal(sum->file_bytes_out, q.size);
    assert_int_equal(sum->above_target, rep->above);
    assert_int_equal(sum->below_target, rep->below);
    assert_int_equal(sum->files, 1);
    assert_true(sum->seconds >= 0);
    return q;
}

static void test_every_dtype_round_trip(void **state)
{
    (void)state;
    buffer src_bytes = make_model();
    sgfp4_model *src = NULL, *q = NULL, *d = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory(src_bytes.data, src_bytes.size, &src, NULL, &diag),
                     SGFP4_OK);
    reports rep;
    sgfp4_model_summary sum;
    sgfp4_model_summary_init(&sum);
    buffer qb = encode_model(src, 4.5, &rep, &sum);
    if (sgfp4_model_open_memory(qb.data, qb.size, &q, NULL, &diag) != SGFP4_OK)
        fail_msg("open quantized: %s", diag.message);
    assert_true(sgfp4_model_is_quantized(q));
    uint64_t container_bytes = 0, weights = 0, data_bytes = 0;
    for (int k = 0; k < NT; k++) {
        const spec_tensor *spec = &model_spec[k];
        const sgfp4_model_tensor *s = sgfp4_model_tensor_find(src, spec->name);
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(q, spec->name);
        assert_non_null(t);
        data_bytes += t->nbytes;
        if ((t->quant != NULL) != spec->quantized)
            fail_msg("%s: quantized %d, want %d", spec->name, t->quant != NULL, spec->quantized);
        if (t->quant) {
            assert_int_equal(t->quant->source_dtype, spec->dtype); /* the manifest's dtype */
            assert_int_equal(sgfp4_model_tensor_verify(q, t, NULL), SGFP4_OK);
            container_bytes += t->nbytes;
            weights += s->elements;
        } else {
            assert_int_equal(t->dtype, spec->dtype);
            assert_int_equal(t->nbytes, s->nbytes);
            assert_memory_equal(t->data, s->data, s->nbytes);
        }
    }
    assert_int_equal(sum.quantized, 3);
    assert_int_equal(sum.bytes_out, data_bytes);
    assert_int_equal(sum.quantized_bytes, container_bytes);
    assert_int_equal(sum.quantized_weights, weights);
    assert_true(fabs(sum.bits_per_weight - 8.0 * (double)container_bytes / (double)weights) < 1e-9);
    assert_int_equal(sum.above_target, 0); /* 128-wide matrices reach 4.5 bpw */
    assert_int_equal(sum.below_target, 0);

    /* decode: FP8 sources come back as FP8, close to the source; the rest byte for byte */
    buffer db = {0};
    const sgfp4_sink dsink = {buffer_write, &db};
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    sgfp4_model_summary dsum;
    sgfp4_model_summary_init(&dsum);
    wo.summary = &dsum;
    if (sgfp4_model_decode(q, &dsink, &wo, &diag) != SGFP4_OK)
        fail_msg("decode: %s", diag.message);
    assert_int_equal(dsum.tensors, NT);
    assert_int_equal(dsum.quantized, 3);
    assert_int_equal(dsum.quantized_bytes, container_bytes);
    assert_int_equal(dsum.bytes_out, src_bytes.size - sgfp4_model_data_offset(src));
    assert_int_equal(dsum.file_bytes_out, db.size);
    assert_int_equal(sgfp4_model_open_memory(db.data, db.size, &d, NULL, &diag), SGFP4_OK);
    for (int k = 0; k < NT; k++) {
        const sgfp4_model_tensor *s = sgfp4_model_tensor_find(src, model_spec[k].name);
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(d, model_spec[k].name);
        assert_non_null(t);
        assert_int_equal(t->dtype, s->dtype);
        assert_int_equal(t->rank, 2);
        assert_memory_equal(t->shape, s->shape, 2 * sizeof(uint64_t));
        if (!model_spec[k].quantized) {
            assert_memory_equal(t->data, s->data, s->nbytes);
            continue;
        }
        const double e = rel_l2(s, t);
        if (!(e < 0.15))
            fail_msg("%s: rel-L2 %.3f after the round trip", s->name, e);
    }
    sgfp4_model_close(d);
    free(db.data);

    /* --bpw 1 cannot be met: every quantized tensor says so; 40 is above the finest trees */
    buffer low = encode_model(src, 1.0, &rep, &sum);
    assert_int_equal(sum.above_target, 3);
    assert_true(sum.bits_per_weight > 1.0);
    free(low.data);
    buffer high = encode_model(src, 40.0, &rep, &sum);
    assert_int_equal(sum.below_target, 3);
    free(high.data);

    sgfp4_model_close(q);
    sgfp4_model_close(src);
    free(qb.data);
    free(src_bytes.data);
}

/* A rule may force an F8 matrix to v1 or skip it; a rule cannot quantize an F4 matrix. */
static void test_policy_dtypes(void **state)
{
    (void)state;
    uint64_t mat[2] = {256, 256};
    sgfp4_model_tensor f8 = {"w", SGFP4_ST_F8_E4M3, 2, mat, 65536, 0, 0, NULL, NULL, 0};
    sgfp4_model_tensor f4 = {"w", SGFP4_ST_F4, 2, mat, 65536, 0, 0, NULL, NULL, 0};
    sgfp4_model_tensor e8 = {"w", SGFP4_ST_F8_E8M0, 2, mat, 65536, 0, 0, NULL, NULL, 0};
    sgfp4_model_tensor sc = {"x.weight_scale", SGFP4_ST_BF16, 2, mat, 65536, 0, 0, NULL, NULL, 0};
    const char *json = "{\"rules\":[{\"match\":\"*\",\"action\":\"quantize\"}]}";
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_parse(json, strlen(json), &p, NULL), SGFP4_OK);
    sgfp4_model_decision d;
    sgfp4_model_decision_init(&d);
    sgfp4_model_policy_decide(p, &f8, &d);
    assert_true(d.quantize);
    sgfp4_model_policy_decide(p, &f4, &d);
    assert_false(d.quantize);
    assert_non_null(strstr(d.reason, "F4 cannot be quantized"));
    sgfp4_model_policy_decide(p, &sc, &d); /* a forcing rule wins over the default */
    assert_true(d.quantize);
    sgfp4_model_policy_free(p);
    assert_int_equal(sgfp4_model_policy_create(&p), SGFP4_OK);
    sgfp4_model_policy_decide(p, &e8, &d);
    assert_false(d.quantize);
    sgfp4_model_policy_decide(p, &sc, &d);
    assert_false(d.quantize);
    assert_non_null(strstr(d.reason, "quantization scale"));
    sgfp4_model_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_sizes),
        cmocka_unit_test(test_header_sub_byte),
        cmocka_unit_test(test_f8_conversions),
        cmocka_unit_test(test_every_dtype_round_trip),
        cmocka_unit_test(test_policy_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
