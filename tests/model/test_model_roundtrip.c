/* The whole-model round trip as an oracle: for safetensors files whose JSON key order differs
 * from their data order (the reader once gave each tensor the shape of the entry that moved
 * into its place when it sorted them), with zero-size tensors, every dtype and __metadata__
 * anywhere, the reader reports what the file says, and encode -> decode restores every name,
 * dtype, shape, metadata pair and pass-through byte. What the files say is known here
 * independently: the repro files' contents are written out below (their generator is
 * tests/data/model/make_reorder_repros.py), and the random files are written by this test.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
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
#include "support/buffer_sink.h"

/* ---- bytes in memory --------------------------------------------------------------------- */

static buffer read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    buffer b = {0};
    uint8_t chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        assert_int_equal(buffer_write(&b, chunk, got), SGFP4_OK);
    fclose(f);
    return b;
}

/* ---- what a file holds, known independently of the reader -------------------------------- */

/* The safetensors dtypes this test writes, with their sizes (the format's own table). */
static const struct {
    const char *name;
    size_t size;
} dtypes[] = {{"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
              {"I16", 2},  {"U16", 2},  {"F16", 2}, {"BF16", 2},    {"I32", 4},
              {"U32", 4},  {"F32", 4},  {"I64", 8}, {"U64", 8},     {"F64", 8}};
#define DTYPE_COUNT (sizeof dtypes / sizeof dtypes[0])

#define MAX_TENSORS 12
#define MAX_META 4

typedef struct truth_tensor {
    char name[48];
    const char *dtype;  /* as the header writes it */
    size_t rank;
    uint64_t shape[4];
    uint64_t begin, end; /* data_offsets */
} truth_tensor;

typedef struct truth {
    truth_tensor t[MAX_TENSORS];
    size_t count;
    char meta_key[MAX_META][16], meta_value[MAX_META][24];
    size_t meta_count;
} truth;

static size_t dtype_size(const char *name)
{
    for (size_t k = 0; k < DTYPE_COUNT; k++)
        if (strcmp(dtypes[k].name, name) == 0)
            return dtypes[k].size;
    fail_msg("unknown dtype %s", name);
    return 0;
}

static uint64_t elements_of(const truth_tensor *t)
{
    uint64_t n = 1;
    for (size_t d = 0; d < t->rank; d++)
        n *= t->shape[d];
    return n;
}

/* The reader's view of `file` agrees with the truth: every name, dtype, shape, byte range
 * and byte; the metadata. */
static void check_reader(const uint8_t *file, size_t size, const truth *want)
{
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_open_memory(file, size, &m, NULL, &diag) != SGFP4_OK)
        fail_msg("open: %s", diag.message);
    assert_int_equal(sgfp4_model_tensor_count(m), want->count);
    const uint64_t data = sgfp4_model_data_offset(m);
    for (size_t k = 0; k < want->count; k++) {
        const truth_tensor *w = &want->t[k];
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(m, w->name);
        if (!t)
            fail_msg("tensor '%s' missing", w->name);
        assert_string_equal(sgfp4_st_dtype_name(t->dtype), w->dtype);
        assert_int_equal(t->rank, w->rank);
        for (size_t d = 0; d < w->rank; d++)
            if (t->shape[d] != w->shape[d])
                fail_msg("tensor '%s': shape[%zu] = %llu, the file says %llu", w->name, d,
                         (unsigned long long)t->shape[d], (unsigned long long)w->shape[d]);
        assert_int_equal(t->elements, elements_of(w));
        assert_int_equal(t->offset, data + w->begin);
        assert_int_equal(t->nbytes, w->end - w->begin);
        assert_ptr_equal(t->data, file + data + w->begin);
    }
    for (size_t k = 0; k < want->meta_count; k++) {
        const char *v = sgfp4_model_metadata_get(m, want->meta_key[k]);
        assert_non_null(v);
        assert_string_equal(v, want->meta_value[k]);
    }
    sgfp4_model_close(m);
}

/* Encodes `file` with `policy` (NULL: the default) and decodes the result. */
static void encode_decode(const uint8_t *file, size_t size, const sgfp4_model_policy *policy,
                          buffer *quantized, buffer *restored)
{
    sgfp4_model *src = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory(file, size, &src, NULL, &diag), SGFP4_OK);
    sgfp4_model_policy *own = NULL;
    if (!policy) {
        assert_int_equal(sgfp4_model_policy_create(&own), SGFP4_OK);
        policy = own;
    }
    *quantized = (buffer){0};
    const sgfp4_sink qsink = {buffer_write, quantized};
    if (sgfp4_model_encode(src, policy, &qsink, NULL, &diag) != SGFP4_OK)
        fail_msg("encode: %s", diag.message);
    sgfp4_model_policy_free(own);
    sgfp4_model_close(src);
    sgfp4_model *q = NULL;
    if (sgfp4_model_open_memory(quantized->data, quantized->size, &q, NULL, &diag) != SGFP4_OK)
        fail_msg("open the encoded model: %s", diag.message);
    assert_true(sgfp4_model_is_quantized(q));
    *restored = (buffer){0};
    const sgfp4_sink rsink = {buffer_write, restored};
    if (sgfp4_model_decode(q, &rsink, NULL, &diag) != SGFP4_OK)
        fail_msg("decode: %s", diag.message);
    sgfp4_model_close(q);
}

/* The restored file holds what the source file held: every name, dtype and shape; the bytes
 * of every tensor the encoder passed through (per the quantized file's manifest); quantized
 * tensors at their source size; the metadata, without the manifest. Returns how many tensors
 * were quantized. */
static size_t check_restored(const uint8_t *source, size_t source_size, const truth *want,
                             const buffer *quantized, const buffer *restored)
{
    sgfp4_model *q = NULL, *r = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory(quantized->data, quantized->size, &q, NULL, &diag),
                     SGFP4_OK);
    if (sgfp4_model_open_memory(restored->data, restored->size, &r, NULL, &diag) != SGFP4_OK)
        fail_msg("open the restored model: %s", diag.message);
    assert_false(sgfp4_model_is_quantized(r));
    assert_null(sgfp4_model_metadata_get(r, "sgfp4"));
    assert_int_equal(sgfp4_model_tensor_count(r), want->count);
    assert_int_equal(sgfp4_model_tensor_count(q), want->count);
    assert_true(source_size >= 8);
    uint64_t source_data = 0;
    for (int k = 7; k >= 0; k--)
        source_data = source_data << 8 | source[k];
    source_data += 8;
    size_t quantized_count = 0;
    for (size_t k = 0; k < want->count; k++) {
        const truth_tensor *w = &want->t[k];
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(r, w->name);
        const sgfp4_model_tensor *qt = sgfp4_model_tensor_find(q, w->name);
        if (!t || !qt)
            fail_msg("tensor '%s' missing after the round trip", w->name);
        assert_string_equal(sgfp4_st_dtype_name(t->dtype), w->dtype);
        assert_int_equal(t->rank, w->rank);
        for (size_t d = 0; d < w->rank; d++)
            if (t->shape[d] != w->shape[d])
                fail_msg("tensor '%s': restored shape[%zu] = %llu, the source says %llu",
                         w->name, d, (unsigned long long)t->shape[d],
                         (unsigned long long)w->shape[d]);
        assert_int_equal(t->nbytes, w->end - w->begin);
        if (qt->quant) {
            quantized_count++;
            assert_int_equal(qt->quant->original_rank, w->rank);
            assert_string_equal(sgfp4_st_dtype_name(qt->quant->source_dtype), w->dtype);
        } else if (memcmp(t->data, source + source_data + w->begin, (size_t)t->nbytes) != 0) {
            fail_msg("pass-through tensor '%s': bytes differ", w->name);
        }
    }
    for (size_t k = 0; k < want->meta_count; k++) {
        const char *v = sgfp4_model_metadata_get(r, want->meta_key[k]);
        assert_non_null(v);
        assert_string_equal(v, want->meta_value[k]);
    }
    assert_int_equal(sgfp4_model_metadata_count(r), want->meta_count);
    sgfp4_model_close(q);
    sgfp4_model_close(r);
    return quantized_count;
}

/* ---- the reorder repros ------------------------------------------------------------------ */

static buffer repro(const char *name)
{
    const char *root = getenv("SGFP4_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/model/%s", root ? root : ".", name);
    return read_file(path);
}

static void round_trip_repro(const char *file, const truth *want, size_t want_quantized)
{
    buffer f = repro(file);
    check_reader(f.data, f.size, want);
    buffer q, r;
    encode_decode(f.data, f.size, NULL, &q, &r);
    assert_int_equal(check_restored(f.data, f.size, want, &q, &r), want_quantized);
    free(q.data);
    free(r.data);
    free(f.data);
}

static void reorder_swap2(void **state)
{
    (void)state;
    /* b.weight [32, 128] is listed first, stored after a.weight [64, 64] */
    const truth want = {.t = {{"b.weight", "F32", 2, {32, 128}, 16384, 32768},
                              {"a.weight", "F32", 2, {64, 64}, 0, 16384}},
                        .count = 2};
    round_trip_repro("reorder-swap2.safetensors", &want, 1); /* b.weight: mostly padding */
}

static void reorder3_policy_divide(void **state)
{
    (void)state;
    /* b.weight listed first, stored after the empty a.empty [64, 0] (whose last dimension
     * the policy once divided by) */
    const truth want = {.t = {{"b.weight", "F32", 2, {64, 64}, 0, 16384},
                              {"a.empty", "F32", 2, {64, 0}, 0, 0},
                              {"c.bias", "F32", 1, {64}, 16384, 16640}},
                        .count = 3};
    round_trip_repro("reorder3-policy-divide.safetensors", &want, 1);
}

static void reorder3_writer_short(void **state)
{
    (void)state;
    /* three pass-through tensors of different sizes, listed in reverse data order */
    const truth want = {.t = {{"c.norm", "F32", 1, {16}, 8229, 8293},
                              {"b.norm", "F16", 1, {4096}, 37, 8229},
                              {"a.ids", "U8", 1, {37}, 0, 37}},
                        .count = 3};
    round_trip_repro("reorder3-writer-short.safetensors", &want, 0);
}

/* ---- random files ------------------------------------------------------------------------ */

static uint64_t rng_state;
static uint32_t rnd(void)
{
    /* xorshift64*: deterministic, independent of the library */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * UINT64_C(2685821657736338717)) >> 32);
}
static uint32_t below(uint32_t n) { return rnd() % n; }

static void shuffle(size_t *order, size_t n)
{
    for (size_t k = 0; k < n; k++)
        order[k] = k;
    for (size_t k = n; k > 1; k--) {
        const size_t j = below((uint32_t)k), tmp = order[k - 1];
        order[k - 1] = order[j];
        order[j] = tmp;
    }
}

/* A random model: tensors named so that the test policy quantizes those called q.N (of a
 * float dtype, non-empty); every dtype; ranks 0..3; zero dimensions; names that JSON must
 * escape. Data offsets follow a random order independent of the key order. */
static void random_truth(truth *t)
{
    memset(t, 0, sizeof *t);
    t->count = 1 + below(MAX_TENSORS);
    static const char *const odd_names[] = {"model.norm.weight", "wte \"quoted\"",
                                            "back\\slash", "caf\xc3\xa9.bias", "tab\there"};
    for (size_t k = 0; k < t->count; k++) {
        truth_tensor *x = &t->t[k];
        const uint32_t kind = below(10);
        if (kind < 4) {
            static const char *const floats[] = {"F32", "F16", "BF16"};
            x->dtype = floats[below(3)];
            snprintf(x->name, sizeof x->name, "q.%zu", k);
        } else if (kind < 6) {
            x->dtype = dtypes[below(DTYPE_COUNT)].name;
            snprintf(x->name, sizeof x->name, "%s.%zu", odd_names[below(5)], k);
        } else {
            x->dtype = dtypes[below(DTYPE_COUNT)].name;
            snprintf(x->name, sizeof x->name, "layers.%u.w%zu", below(3), k);
        }
        x->rank = below(4);
        for (size_t d = 0; d < x->rank; d++)
            x->shape[d] = below(8) == 0 ? 0 : 1 + below(d + 1 == x->rank ? 90 : 40);
    }
    size_t data_order[MAX_TENSORS];
    shuffle(data_order, t->count);
    uint64_t at = 0;
    for (size_t k = 0; k < t->count; k++) {
        truth_tensor *x = &t->t[data_order[k]];
        x->begin = at;
        x->end = at + elements_of(x) * dtype_size(x->dtype);
        at = x->end;
    }
    t->meta_count = below(MAX_META + 1);
    for (size_t k = 0; k < t->meta_count; k++) {
        snprintf(t->meta_key[k], sizeof t->meta_key[k], "key%u", (unsigned)k);
        snprintf(t->meta_value[k], sizeof t->meta_value[k], "value %u", rnd());
    }
}

static void json_string(char **p, const char *s)
{
    *(*p)++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            *(*p)++ = '\\';
            *(*p)++ = *s;
        } else if (*s == '\t') {
            *(*p)++ = '\\';
            *(*p)++ = 't';
        } else {
            *(*p)++ = *s;
        }
    }
    *(*p)++ = '"';
}

/* Writes the file: keys in `key_order`, __metadata__ before key `meta_at` (or last), the
 * data of each tensor drawn from its own seed (finite floats for the float dtypes). */
static buffer write_model(const truth *t, const size_t *key_order, size_t meta_at, uint64_t seed)
{
    char *header = malloc(16384), *p = header;
    *p++ = '{';
    bool first = true;
    for (size_t i = 0; i <= t->count; i++) {
        if (i == meta_at && t->meta_count) {
            p += sprintf(p, "%s\"__metadata__\":{", first ? "" : ",");
            for (size_t k = 0; k < t->meta_count; k++)
                p += sprintf(p, "%s\"%s\":\"%s\"", k ? "," : "", t->meta_key[k],
                             t->meta_value[k]);
            *p++ = '}';
            first = false;
        }
        if (i == t->count)
            break;
        const truth_tensor *x = &t->t[key_order[i]];
        if (!first)
            *p++ = ',';
        first = false;
        json_string(&p, x->name);
        p += sprintf(p, ":{\"dtype\":\"%s\",\"shape\":[", x->dtype);
        for (size_t d = 0; d < x->rank; d++)
            p += sprintf(p, "%s%llu", d ? "," : "", (unsigned long long)x->shape[d]);
        p += sprintf(p, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)x->begin,
                     (unsigned long long)x->end);
    }
    *p++ = '}';
    const size_t n = (size_t)(p - header);
    uint64_t data_bytes = 0;
    for (size_t k = 0; k < t->count; k++)
        data_bytes = t->t[k].end > data_bytes ? t->t[k].end : data_bytes;
    buffer b = {.data = calloc(1, 8 + n + data_bytes + 1), .size = 8 + n + (size_t)data_bytes};
    for (int k = 0; k < 8; k++)
        b.data[k] = (uint8_t)((uint64_t)n >> (8 * k));
    memcpy(b.data + 8, header, n);
    free(header);
    const uint64_t saved = rng_state;
    for (size_t k = 0; k < t->count; k++) {
        const truth_tensor *x = &t->t[k];
        rng_state = seed + k + 1;
        uint8_t *d = b.data + 8 + n + x->begin;
        const size_t size = dtype_size(x->dtype), count = (size_t)elements_of(x);
        for (size_t e = 0; e < count; e++) {
            uint32_t bits = rnd();
            if (strcmp(x->dtype, "F32") == 0)
                bits = (bits & 0x807FFFFFu) | (uint32_t)(96 + below(40)) << 23;
            else if (strcmp(x->dtype, "F16") == 0)
                bits = (bits & 0x83FFu) | (uint32_t)(5 + below(20)) << 10;
            else if (strcmp(x->dtype, "BF16") == 0)
                bits = (bits & 0x807Fu) | (uint32_t)(96 + below(40)) << 7;
            for (size_t j = 0; j < size; j++)
                d[e * size + j] = (uint8_t)(bits >> (8 * (j % 4)));
        }
    }
    rng_state = saved;
    return b;
}

static void random_key_orders_round_trip(void **state)
{
    (void)state;
    const char *doc = "{\"min_elements\":1,\"defaults\":{\"policy\":\"threshold\","
                      "\"fit\":\"reference\"},\"rules\":[{\"match\":\"q.*\","
                      "\"action\":\"quantize\"}]}";
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_parse(doc, strlen(doc), &policy, NULL), SGFP4_OK);
    rng_state = UINT64_C(0x9E3779B97F4A7C15);
    size_t quantized = 0, zero_size = 0, tensors = 0;
    for (int round = 0; round < 300; round++) {
        truth t;
        random_truth(&t);
        const uint64_t seed = rnd();
        /* The same model twice, with different key orders and __metadata__ places: both
         * read as the truth, both round-trip, and the restored files are the same bytes
         * (the restored file is in name order, whatever the source order). */
        buffer restored[2];
        for (int copy = 0; copy < 2; copy++) {
            size_t keys[MAX_TENSORS];
            shuffle(keys, t.count);
            buffer f = write_model(&t, keys, below((uint32_t)t.count + 1), seed);
            check_reader(f.data, f.size, &t);
            buffer q;
            encode_decode(f.data, f.size, policy, &q, &restored[copy]);
            const size_t n = check_restored(f.data, f.size, &t, &q, &restored[copy]);
            if (copy == 0)
                quantized += n;
            free(q.data);
            free(f.data);
        }
        assert_int_equal(restored[0].size, restored[1].size);
        assert_memory_equal(restored[0].data, restored[1].data, restored[0].size);
        free(restored[0].data);
        free(restored[1].data);
        for (size_t k = 0; k < t.count; k++)
            zero_size += t.t[k].begin == t.t[k].end;
        tensors += t.count;
    }
    sgfp4_model_policy_free(policy);
    /* the generator reached what the test is about */
    assert_true(quantized > 20);
    assert_true(zero_size > 10);
    assert_true(quantized < tensors);
}

/* A sink with `room` bytes: then ENOSPC, as a full disk gives it. */
typedef struct full_sink {
    size_t written, room;
} full_sink;
static sgfp4_status full_write(void *user, const void *data, size_t size)
{
    (void)data;
    full_sink *f = user;
    if (f->written + size > f->room) {
        errno = ENOSPC;
        return SGFP4_ERR_IO;
    }
    f->written += size;
    return SGFP4_OK;
}

static void encode_names_no_space(void **state)
{
    (void)state;
    buffer f = repro("reorder-swap2.safetensors");
    sgfp4_model *src = NULL;
    assert_int_equal(sgfp4_model_open_memory(f.data, f.size, &src, NULL, NULL), SGFP4_OK);
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    full_sink full = {0, 4096}; /* the header fits, the tensors do not */
    const sgfp4_sink sink = {full_write, &full};
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_encode(src, policy, &sink, NULL, &diag), SGFP4_ERR_IO);
    if (!strstr(diag.message, "No space left on device"))
        fail_msg("message: %s", diag.message);
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(src);
    free(f.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reorder_swap2),
        cmocka_unit_test(reorder3_policy_divide),
        cmocka_unit_test(reorder3_writer_short),
        cmocka_unit_test(random_key_orders_round_trip),
        cmocka_unit_test(encode_names_no_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
