/* Sharded sets: a large synthetic set (many tensors, several shards) opened from its index
 * as one model, encoded to a quantized set and to one file, decoded back; every malformed
 * index and every index/shard mismatch failing with its own named error; the set writers'
 * argument and callback contracts. The index texts here are written by hand (snprintf),
 * independently of the library's index writer.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sgfp4_model.h"

static char work_dir[256];

static void path_of(char *buf, size_t size, const char *dir, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static void write_file(const char *name, const void *data, size_t size)
{
    char path[512];
    path_of(path, sizeof path, work_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text)); }

static uint32_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

/* ---- a file sink, for the library's writers and for building shards ------------------- */

typedef struct file_sinks {
    const char *dir;
    FILE *f;
    size_t opened, closed;
    size_t fail_close_at;   /* close() of this file fails (SIZE_MAX: never) */
    size_t fail_open_at;
    char names[64][128];    /* what open() was asked for */
} file_sinks;

static sgfp4_status file_write(void *user, const void *data, size_t size)
{
    return fwrite(data, 1, size, user) == size ? SGFP4_OK : SGFP4_ERR_IO;
}

static sgfp4_status sinks_open(void *user, size_t file, const char *name, sgfp4_sink *sink,
                               sgfp4_diag *diag)
{
    (void)diag;
    file_sinks *fs = user;
    if (file == fs->fail_open_at)
        return SGFP4_ERR_IO; /* no message: the library adds one */
    assert_true(file < 64);
    snprintf(fs->names[file], sizeof fs->names[file], "%s", name);
    char path[512];
    path_of(path, sizeof path, fs->dir, name);
    fs->f = fopen(path, "wb");
    assert_non_null(fs->f);
    fs->opened++;
    *sink = (sgfp4_sink){file_write, fs->f};
    return SGFP4_OK;
}

static sgfp4_status sinks_close(void *user, size_t file, sgfp4_status status, sgfp4_diag *diag)
{
    file_sinks *fs = user;
    fclose(fs->f);
    fs->f = NULL;
    fs->closed++;
    if (status == SGFP4_OK && file == fs->fail_close_at) {
        if (diag) {
            diag->status = SGFP4_ERR_IO;
            snprintf(diag->message, sizeof diag->message, "the check of file %zu failed", file);
        }
        return SGFP4_ERR_IO;
    }
    return SGFP4_OK;
}

static file_sinks make_sinks(const char *dir)
{
    file_sinks fs;
    memset(&fs, 0, sizeof fs);
    fs.dir = dir;
    fs.fail_close_at = fs.fail_open_at = SIZE_MAX;
    return fs;
}

/* ---- synthetic shards ------------------------------------------------------------------ */

typedef struct tspec {
    char name[48];
    sgfp4_st_dtype dtype;
    size_t rank;
    uint64_t shape[2];
} tspec;

/* Writes a safetensors file of the tensors (random data, F32 matrices Gaussian-like). */
static uint64_t write_shard(const char *name, const tspec *ts, size_t n, const char *format,
                            uint64_t seed)
{
    sgfp4_st_entry *e = calloc(n, sizeof *e);
    for (size_t k = 0; k < n; k++)
        e[k] = (sgfp4_st_entry){ts[k].name, ts[k].dtype, ts[k].rank, ts[k].shape};
    char path[512];
    path_of(path, sizeof path, work_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const sgfp4_sink sink = {file_write, f};
    const char *keys[] = {"format"}, *values[] = {format};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(e, n, keys, values, format ? 1 : 0, &sink, &w, NULL),
                     SGFP4_OK);
    uint64_t data = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t elements = 1, bytes = 0;
        for (size_t d = 0; d < ts[k].rank; d++)
            elements *= ts[k].shape[d];
        assert_int_equal(sgfp4_st_dtype_bytes(ts[k].dtype, elements, &bytes), 0);
        uint8_t *p = malloc(bytes ? bytes : 1);
        for (uint64_t i = 0; i < bytes; i++)
            p[i] = (uint8_t)rng_next(&seed);
        if (ts[k].dtype == SGFP4_ST_F32)
            for (uint64_t i = 0; i < elements; i++) {
                const float v = ((float)rng_next(&seed) / 4294967296.0f - 0.5f) +
                                ((float)rng_next(&seed) / 4294967296.0f - 0.5f);
                memcpy(p + 4 * i, &v, 4);
            }
        assert_int_equal(sgfp4_st_writer_write(w, p, bytes), SGFP4_OK);
        data += bytes;
        free(p);
    }
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    fclose(f);
    free(e);
    return data;
}

/* A growing text buffer. */
typedef struct textbuf {
    char *s;
    size_t len, cap;
} textbuf;

static void add(textbuf *t, const char *format, ...)
{
    va_list a;
    va_start(a, format);
    char piece[512];
    const int n = vsnprintf(piece, sizeof piece, format, a);
    va_end(a);
    assert_true(n >= 0 && (size_t)n < sizeof piece);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    memcpy(t->s + t->len, piece, (size_t)n + 1);
    t->len += (size_t)n;
}

/* ---- the large synthetic set --------------------------------------------------------- */

#define SHARDS 6
#define PER_SHARD 500

static tspec large[SHARDS][PER_SHARD];
static uint64_t large_data;

static const char *large_shard_name(size_t k, char *buf, size_t size)
{
    snprintf(buf, size, "model-%05zu-of-%05d.safetensors", k + 1, SHARDS);
    return buf;
}

static void make_large_set(void)
{
    large_data = 0;
    textbuf idx = {0};
    add(&idx, "{\n  \"metadata\": {\"total_parameters\": 12345, \"total_size\": %s},\n",
        "TOTAL");
    add(&idx, "  \"extra\": [1, 2],\n  \"weight_map\": {\n");
    for (size_t k = 0; k < SHARDS; k++) {
        char shard[64];
        large_shard_name(k, shard, sizeof shard);
        for (size_t i = 0; i < PER_SHARD; i++) {
            tspec *t = &large[k][i];
            const size_t n = k * PER_SHARD + i;
            /* names interleave across shards, so shard order is not name order */
            snprintf(t->name, sizeof t->name, "layers.%zu.part%zu.weight", n % 97, n);
            if (i % 100 == 7) {
                *t = (tspec){"", SGFP4_ST_F32, 2, {64, 64}};
                snprintf(t->name, sizeof t->name, "layers.%zu.mlp%zu.weight", n % 97, n);
            } else {
                t->dtype = i % 3 ? SGFP4_ST_F16 : SGFP4_ST_I32;
                t->rank = 1;
                t->shape[0] = 1 + i % 5;
            }
            add(&idx, "    \"%s\": \"%s\"%s\n", t->name, shard,
                k + 1 == SHARDS && i + 1 == PER_SHARD ? "" : ",");
        }
        large_data += write_shard(shard, large[k], PER_SHARD, "pt", 100 + k);
    }
    add(&idx, "  }\n}\n");
    /* total_size is known only now: put it in place of the marker */
    char total[32];
    snprintf(total, sizeof total, "%llu", (unsigned long long)large_data);
    char *at = strstr(idx.s, "TOTAL");
    textbuf fixed = {0};
    add(&fixed, "%.*s", (int)(at - idx.s), idx.s);
    add(&fixed, "%s", total);
    const char *rest = at + 5;
    while (*rest) { /* add() has a piece limit */
        add(&fixed, "%.400s", rest);
        rest += strnlen(rest, 400);
    }
    write_text("model.safetensors.index.json", fixed.s);
    free(idx.s);
    free(fixed.s);
}

static sgfp4_model *open_path(const char *dir, const char *name, sgfp4_status want,
                              const char *needle, const sgfp4_model_open_options *o)
{
    char path[512];
    path_of(path, sizeof path, dir, name);
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open(path, &m, o, &diag);
    if (s != want || (needle && !strstr(diag.message, needle)))
        fail_msg("open %s: got %s (%s), want %s with '%s'", name, sgfp4_status_name(s),
                 diag.message, sgfp4_status_name(want), needle ? needle : "");
    if (want != SGFP4_OK)
        assert_null(m);
    return m;
}

static char *read_all(const char *dir, const char *name)
{
    char path[512];
    path_of(path, sizeof path, dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* The set's view: shards, names, dtypes, shapes; `written_order`: tensors in the order the
 * shards were written (a decoded set has each shard in name order instead). */
static void check_large_view(const sgfp4_model *set, bool written_order)
{
    assert_true(sgfp4_model_is_set(set));
    assert_false(sgfp4_model_is_quantized(set));
    assert_int_equal(sgfp4_model_shard_count(set), SHARDS);
    assert_int_equal(sgfp4_model_tensor_count(set), SHARDS * PER_SHARD);
    assert_int_equal(sgfp4_model_data_offset(set), 0);
    assert_string_equal(sgfp4_model_metadata_get(set, "format"), "pt");
    uint64_t bytes = 0;
    for (size_t k = 0; k < SHARDS; k++) {
        char want[64];
        assert_string_equal(sgfp4_model_shard_name(set, k), large_shard_name(k, want, sizeof want));
        const sgfp4_model *shard = sgfp4_model_shard(set, k);
        assert_non_null(shard);
        assert_false(sgfp4_model_is_set(shard));
        assert_int_equal(sgfp4_model_tensor_count(shard), PER_SHARD);
        bytes += sgfp4_model_file_bytes(shard);
        for (size_t i = 0; i < PER_SHARD; i++) {
            /* file order is shard order; within a shard, data order */
            const sgfp4_model_tensor *t = sgfp4_model_tensor_find(set, large[k][i].name);
            assert_non_null(t);
            if (written_order)
                assert_ptr_equal(sgfp4_model_tensor_at(set, k * PER_SHARD + i), t);
            assert_int_equal(t->shard, k);
            assert_int_equal(t->dtype, large[k][i].dtype);
            assert_int_equal(t->rank, large[k][i].rank);
            assert_memory_equal(t->shape, large[k][i].shape, t->rank * sizeof(uint64_t));
        }
    }
    assert_int_equal(sgfp4_model_file_bytes(set), bytes);
    assert_null(sgfp4_model_shard(set, SHARDS));
    assert_null(sgfp4_model_shard_name(set, SHARDS));
    assert_null(sgfp4_model_tensor_find(set, "nope"));
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

static void test_large_set(void **state)
{
    (void)state;
    make_large_set();
    sgfp4_model *set = open_path(work_dir, "model.safetensors.index.json", SGFP4_OK, NULL, NULL);
    check_large_view(set, true);

    /* encode to a quantized set */
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/q", work_dir);
    assert_int_equal(mkdir(out_dir, 0700), 0);
    const char *names[SHARDS];
    char name_buf[SHARDS][64];
    for (size_t k = 0; k < SHARDS; k++) {
        snprintf(name_buf[k], sizeof name_buf[k], "q-%05zu.sgfp4.safetensors", k);
        names[k] = name_buf[k];
    }
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    sgfp4_model_policy_defaults(policy)->threads = 1;
    file_sinks fs = make_sinks(out_dir);
    const sgfp4_model_set_sinks sinks = {sinks_open, sinks_close, &fs};
    sgfp4_model_summary sum;
    sgfp4_model_summary_init(&sum);
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.summary = &sum;
    sgfp4_diag diag;
    if (sgfp4_model_encode_set(set, policy, names, "q.index.json", &sinks, &wo, &diag) != SGFP4_OK)
        fail_msg("encode_set: %s", diag.message);
    assert_int_equal(fs.opened, SHARDS + 1);
    assert_int_equal(fs.closed, SHARDS + 1);
    assert_string_equal(fs.names[SHARDS], "q.index.json");
    assert_int_equal(sum.files, SHARDS + 1);
    assert_int_equal(sum.tensors, SHARDS * PER_SHARD);
    assert_int_equal(sum.quantized, SHARDS * 5);
    assert_int_equal(sum.bytes_in, large_data);

    /* the output index: the source's document, total_size of the output, every tensor */
    char *index = read_all(out_dir, "q.index.json");
    assert_non_null(strstr(index, "\"total_parameters\": 12345"));
    assert_non_null(strstr(index, "\"extra\": ["));
    char want_total[64];
    snprintf(want_total, sizeof want_total, "\"total_size\": %llu",
             (unsigned long long)sum.bytes_out);
    assert_non_null(strstr(index, want_total));
    free(index);

    sgfp4_model *q = open_path(out_dir, "q.index.json", SGFP4_OK, NULL, NULL);
    assert_true(sgfp4_model_is_quantized(q));
    assert_int_equal(sgfp4_model_shard_count(q), SHARDS);
    assert_int_equal(sgfp4_model_tensor_count(q), SHARDS * PER_SHARD);
    size_t quantized = 0;
    for (size_t k = 0; k < SHARDS; k++) {
        const sgfp4_model *shard = sgfp4_model_shard(q, k);
        assert_string_equal(sgfp4_model_shard_name(q, k), names[k]);
        assert_true(sgfp4_model_is_quantized(shard)); /* each a D6 model of its own */
        assert_string_equal(sgfp4_model_metadata_get(shard, "format"), "pt");
        assert_int_equal(sgfp4_model_tensor_count(shard), PER_SHARD);
        for (size_t i = 0; i < PER_SHARD; i++) {
            const sgfp4_model_tensor *t = sgfp4_model_tensor_find(shard, large[k][i].name);
            assert_non_null(t);
            assert_ptr_equal(sgfp4_model_tensor_find(q, t->name), t);
            if (t->quant) {
                quantized++;
                assert_int_equal(sgfp4_model_tensor_verify(q, t, NULL), SGFP4_OK);
            }
        }
    }
    assert_int_equal(quantized, SHARDS * 5);

    /* decode the quantized set back to a set */
    char dec_dir[300];
    snprintf(dec_dir, sizeof dec_dir, "%s/d", work_dir);
    assert_int_equal(mkdir(dec_dir, 0700), 0);
    char dname_buf[SHARDS][64];
    const char *dnames[SHARDS];
    for (size_t k = 0; k < SHARDS; k++)
        dnames[k] = large_shard_name(k, dname_buf[k], sizeof dname_buf[k]);
    file_sinks ds = make_sinks(dec_dir);
    const sgfp4_model_set_sinks dsinks = {sinks_open, sinks_close, &ds};
    if (sgfp4_model_decode_set(q, dnames, "model.safetensors.index.json", &dsinks, &wo, &diag) !=
        SGFP4_OK)
        fail_msg("decode_set: %s", diag.message);
    assert_int_equal(sum.files, SHARDS + 1);
    assert_int_equal(sum.quantized, SHARDS * 5);
    assert_int_equal(sum.bytes_out, large_data);
    sgfp4_model *d = open_path(dec_dir, "model.safetensors.index.json", SGFP4_OK, NULL, NULL);
    check_large_view(d, false);
    for (size_t k = 0; k < SHARDS * PER_SHARD; k++) {
        const sgfp4_model_tensor *s = sgfp4_model_tensor_at(set, k);
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(d, s->name);
        assert_int_equal(t->nbytes, s->nbytes);
        if (s->dtype != SGFP4_ST_F32)
            assert_memory_equal(t->data, s->data, s->nbytes);
        else if (!(rel_l2(s, t) < 0.2))
            fail_msg("%s: rel-L2 %.3f", s->name, rel_l2(s, t));
    }

    /* the same set as ONE file each way */
    char one[512];
    path_of(one, sizeof one, work_dir, "one.sgfp4.safetensors");
    FILE *f = fopen(one, "wb");
    const sgfp4_sink sink = {file_write, f};
    assert_int_equal(sgfp4_model_encode(set, policy, &sink, &wo, &diag), SGFP4_OK);
    fclose(f);
    assert_int_equal(sum.files, 1);
    sgfp4_model *q1 = open_path(work_dir, "one.sgfp4.safetensors", SGFP4_OK, NULL, NULL);
    assert_false(sgfp4_model_is_set(q1));
    assert_int_equal(sgfp4_model_tensor_count(q1), SHARDS * PER_SHARD);
    assert_string_equal(sgfp4_model_metadata_get(q1, "format"), "pt");
    path_of(one, sizeof one, work_dir, "one.safetensors");
    f = fopen(one, "wb");
    const sgfp4_sink sink2 = {file_write, f};
    assert_int_equal(sgfp4_model_decode(q, &sink2, &wo, &diag), SGFP4_OK); /* set -> one */
    fclose(f);
    sgfp4_model *d1 = open_path(work_dir, "one.safetensors", SGFP4_OK, NULL, NULL);
    assert_int_equal(sgfp4_model_tensor_count(d1), SHARDS * PER_SHARD);
    for (size_t k = 0; k < SHARDS * PER_SHARD; k++) {
        const sgfp4_model_tensor *s = sgfp4_model_tensor_at(d, k);
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(d1, s->name);
        assert_int_equal(t->nbytes, s->nbytes);
        assert_memory_equal(t->data, s->data, s->nbytes); /* the same decode, bit for bit */
    }
    sgfp4_model_close(d1);
    sgfp4_model_close(q1);
    sgfp4_model_close(d);
    sgfp4_model_close(q);
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(set);
}

/* ---- malformed indexes and mismatches ------------------------------------------------ */

static const tspec small_a[] = {{"a.one", SGFP4_ST_F16, 1, {4, 0}}, {"a.two", SGFP4_ST_U8, 1, {3, 0}}};
static const tspec small_b[] = {{"b.one", SGFP4_ST_F32, 2, {2, 2}}};
static const tspec small_dup[] = {{"a.one", SGFP4_ST_F16, 1, {4, 0}}};
static uint64_t small_total;

#define GOOD_MAP "\"a.one\": \"a.safetensors\", \"a.two\": \"a.safetensors\", \"b.one\": \"b.safetensors\""

static void expect_index(const char *text, sgfp4_status want, const char *needle)
{
    write_text("bad.json", text);
    sgfp4_model *m = open_path(work_dir, "bad.json", want, needle, NULL);
    sgfp4_model_close(m);
}

static void test_index_errors(void **state)
{
    (void)state;
    small_total = write_shard("a.safetensors", small_a, 2, "pt", 1);
    small_total += write_shard("b.safetensors", small_b, 1, "pt", 2);
    write_shard("dup.safetensors", small_dup, 1, "pt", 3);
    char good[512];
    snprintf(good, sizeof good, "{\"metadata\": {\"total_size\": %llu}, \"weight_map\": {" GOOD_MAP "}}",
             (unsigned long long)small_total);
    expect_index(good, SGFP4_OK, NULL);
    /* recognised by content: any name, leading white space */
    char spaced[600];
    snprintf(spaced, sizeof spaced, "\n\t  %s", good);
    write_text("weights.bin", spaced);
    sgfp4_model_close(open_path(work_dir, "weights.bin", SGFP4_OK, NULL, NULL));

    expect_index("{not json", SGFP4_ERR_MODEL_INDEX, "line 1");
    expect_index("{\"weight_map\": {" GOOD_MAP "}} trailing", SGFP4_ERR_MODEL_INDEX, "line 1");
    expect_index("{}", SGFP4_ERR_MODEL_INDEX, "no \"weight_map\" object");
    expect_index("{\"weight_map\": []}", SGFP4_ERR_MODEL_INDEX, "no \"weight_map\" object");
    expect_index("{\"weight_map\": {}}", SGFP4_ERR_MODEL_INDEX, "\"weight_map\" is empty");
    expect_index("{\"weight_map\": {\"a.one\": 5}}", SGFP4_ERR_MODEL_INDEX, "is not a string");
    expect_index("{\"weight_map\": {\"a.one\": \"../a.safetensors\"}}", SGFP4_ERR_MODEL_INDEX,
                 "has a folder in it");
    expect_index("{\"weight_map\": {\"a.one\": \"/tmp/a.safetensors\"}}", SGFP4_ERR_MODEL_INDEX,
                 "has a folder in it");
    expect_index("{\"weight_map\": {\"a.one\": \"..\"}}", SGFP4_ERR_MODEL_INDEX, "not a file name");
    expect_index("{\"weight_map\": {\"a.one\": \"\"}}", SGFP4_ERR_MODEL_INDEX, "is empty");
    expect_index("{\"weight_map\": {\"x\": \"missing.safetensors\"}}", SGFP4_ERR_IO,
                 "shard 'missing.safetensors': ");
    expect_index("{\"weight_map\": {\"a.one\": \"a.safetensors\", \"b.one\": \"b.safetensors\"}}",
                 SGFP4_ERR_MODEL_INDEX, "shard 'a.safetensors' holds tensor 'a.two', which the "
                                        "weight_map does not list");
    expect_index("{\"weight_map\": {" GOOD_MAP ", \"ghost\": \"b.safetensors\"}}",
                 SGFP4_ERR_MODEL_INDEX, "lists tensor 'ghost' in shard 'b.safetensors', which has no");
    expect_index("{\"weight_map\": {\"a.one\": \"a.safetensors\", \"a.two\": \"b.safetensors\", "
                 "\"b.one\": \"b.safetensors\"}}",
                 SGFP4_ERR_MODEL_INDEX, "tensor 'a.two' is in shard 'a.safetensors' but the "
                                        "weight_map says 'b.safetensors'");
    expect_index("{\"weight_map\": {" GOOD_MAP ", \"a.one\": \"a.safetensors\"}}",
                 SGFP4_ERR_MODEL_DUPLICATE, "duplicate");
    expect_index("{\"weight_map\": {\"a.one\": \"dup.safetensors\", \"a.two\": \"a.safetensors\"}}",
                 SGFP4_ERR_MODEL_DUPLICATE, "tensor 'a.one' is in two shards");
    expect_index("{\"metadata\": 3, \"weight_map\": {" GOOD_MAP "}}", SGFP4_ERR_MODEL_INDEX,
                 "\"metadata\" is not a JSON object");
    expect_index("{\"metadata\": {\"total_size\": \"12\"}, \"weight_map\": {" GOOD_MAP "}}",
                 SGFP4_ERR_MODEL_INDEX, "total_size is not a non-negative integer");
    expect_index("{\"metadata\": {\"total_size\": -1}, \"weight_map\": {" GOOD_MAP "}}",
                 SGFP4_ERR_MODEL_INDEX, "total_size is not a non-negative integer");
    expect_index("{\"metadata\": {\"total_size\": 5}, \"weight_map\": {" GOOD_MAP "}}",
                 SGFP4_ERR_MODEL_INDEX, "total_size is 5 but the shards hold");
    sgfp4_model_open_options lenient;
    sgfp4_model_open_options_init(&lenient);
    lenient.ignore_index_total_size = 1;
    write_text("bad.json", "{\"metadata\": {\"total_size\": 5}, \"weight_map\": {" GOOD_MAP "}}");
    sgfp4_model_close(open_path(work_dir, "bad.json", SGFP4_OK, NULL, &lenient));

    /* a shard that is itself an index, or not a valid file */
    write_text("inner.json", good);
    expect_index("{\"weight_map\": {\"x\": \"inner.json\"}}", SGFP4_ERR_MODEL_INDEX,
                 "shard 'inner.json': ");
    write_file("short.safetensors", "\x10\0\0\0\0\0\0\0{", 9);
    expect_index("{\"weight_map\": {\"x\": \"short.safetensors\"}}", SGFP4_ERR_TRUNCATED,
                 "shard 'short.safetensors': ");

    /* quantized in some shards only */
    sgfp4_model *b = open_path(work_dir, "b.safetensors", SGFP4_OK, NULL, NULL);
    sgfp4_model_policy *p = NULL;
    const char *all = "{\"rules\":[{\"match\":\"*\",\"action\":\"quantize\"}]}";
    assert_int_equal(sgfp4_model_policy_parse(all, strlen(all), &p, NULL), SGFP4_OK);
    char qpath[512];
    path_of(qpath, sizeof qpath, work_dir, "bq.safetensors");
    FILE *f = fopen(qpath, "wb");
    const sgfp4_sink sink = {file_write, f};
    assert_int_equal(sgfp4_model_encode(b, p, &sink, NULL, NULL), SGFP4_OK);
    fclose(f);
    sgfp4_model_policy_free(p);
    sgfp4_model_close(b);
    expect_index("{\"weight_map\": {\"a.one\": \"a.safetensors\", \"a.two\": \"a.safetensors\", "
                 "\"b.one\": \"bq.safetensors\"}}",
                 SGFP4_ERR_MODEL_INDEX, "shard 'a.safetensors' has no sgfp4 manifest and shard "
                                        "'bq.safetensors' has one: a set is quantized in every "
                                        "shard or in none");

    /* an index cannot be opened from memory: it names files */
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory(good, strlen(good), &m, NULL, &diag),
                     SGFP4_ERR_MODEL_INDEX);
    assert_null(m);
    /* a list is neither: the safetensors reader says why */
    write_text("list.json", "[1, 2, 3, 4, 5, 6, 7, 8]");
    assert_null(open_path(work_dir, "list.json", SGFP4_ERR_LIMIT, NULL, NULL));
}

/* Shards that disagree on a metadata value: one output file would lose one, so it is
 * refused; a set keeps each shard's own. */
static void test_metadata_conflict(void **state)
{
    (void)state;
    const tspec x[] = {{"x.w", SGFP4_ST_F32, 2, {64, 64}}}, y[] = {{"y.w", SGFP4_ST_F32, 2, {64, 64}}};
    write_shard("x.safetensors", x, 1, "pt", 5);
    write_shard("y.safetensors", y, 1, "np", 6);
    write_text("xy.json", "{\"weight_map\": {\"x.w\": \"x.safetensors\", \"y.w\": \"y.safetensors\"}}");
    sgfp4_model *set = open_path(work_dir, "xy.json", SGFP4_OK, NULL, NULL);
    assert_string_equal(sgfp4_model_metadata_get(set, "format"), "pt");
    assert_int_equal(sgfp4_model_metadata_count(set), 1);
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_create(&p), SGFP4_OK);
    char path[512];
    path_of(path, sizeof path, work_dir, "xy-one.safetensors");
    FILE *f = fopen(path, "wb");
    const sgfp4_sink sink = {file_write, f};
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_encode(set, p, &sink, NULL, &diag), SGFP4_ERR_MODEL_INDEX);
    assert_non_null(strstr(diag.message, "shards 'x.safetensors' and 'y.safetensors' disagree on "
                                         "__metadata__['format']"));
    fclose(f);
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/xy", work_dir);
    assert_int_equal(mkdir(out_dir, 0700), 0);
    file_sinks fs = make_sinks(out_dir);
    const sgfp4_model_set_sinks sinks = {sinks_open, sinks_close, &fs};
    const char *names[] = {"x.q", "y.q"};
    assert_int_equal(sgfp4_model_encode_set(set, p, names, "xy.json", &sinks, NULL, &diag), SGFP4_OK);
    sgfp4_model *q = open_path(out_dir, "xy.json", SGFP4_OK, NULL, NULL);
    assert_string_equal(sgfp4_model_metadata_get(sgfp4_model_shard(q, 0), "format"), "pt");
    assert_string_equal(sgfp4_model_metadata_get(sgfp4_model_shard(q, 1), "format"), "np");
    /* decoding it to one file is refused the same way */
    f = fopen(path, "wb");
    const sgfp4_sink sink2 = {file_write, f};
    assert_int_equal(sgfp4_model_decode(q, &sink2, NULL, &diag), SGFP4_ERR_MODEL_INDEX);
    fclose(f);
    sgfp4_model_close(q);
    sgfp4_model_policy_free(p);
    sgfp4_model_close(set);
}

/* The set writers' contracts: names, callbacks, sources. */
static void test_set_writer_contracts(void **state)
{
    (void)state;
    const tspec x[] = {{"x.w", SGFP4_ST_F32, 2, {64, 64}}, {"x.b", SGFP4_ST_F32, 1, {64, 0}}};
    write_shard("single.safetensors", x, 2, NULL, 9);
    sgfp4_model *m = open_path(work_dir, "single.safetensors", SGFP4_OK, NULL, NULL);
    assert_false(sgfp4_model_is_set(m));
    assert_int_equal(sgfp4_model_shard_count(m), 1);
    assert_ptr_equal(sgfp4_model_shard(m, 0), m);
    assert_null(sgfp4_model_shard_name(m, 0));
    assert_int_equal(sgfp4_model_tensor_at(m, 1)->shard, 0);
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/single", work_dir);
    assert_int_equal(mkdir(out_dir, 0700), 0);
    sgfp4_model_policy *p = NULL;
    assert_int_equal(sgfp4_model_policy_create(&p), SGFP4_OK);
    file_sinks fs = make_sinks(out_dir);
    const sgfp4_model_set_sinks sinks = {sinks_open, sinks_close, &fs};
    sgfp4_diag diag;
    const char *bad[][2] = {{"a/b", "i.json"}, {"..", "i.json"}, {"", "i.json"},
                            {"same", "same"},   {"ok", "x/i"}};
    for (size_t k = 0; k < 5; k++) {
        const char *names[] = {bad[k][0]};
        assert_int_equal(sgfp4_model_encode_set(m, p, names, bad[k][1], &sinks, NULL, &diag),
                         SGFP4_ERR_ARGUMENT);
        assert_int_equal(fs.opened, 0);
    }
    const char *names[] = {"single.q"};
    assert_int_equal(sgfp4_model_encode_set(m, p, names, NULL, &sinks, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_encode_set(m, p, names, "i.json", NULL, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    /* a failing open: a message that names the file */
    fs.fail_open_at = 0;
    assert_int_equal(sgfp4_model_encode_set(m, p, names, "i.json", &sinks, NULL, &diag), SGFP4_ERR_IO);
    assert_non_null(strstr(diag.message, "output 'single.q': cannot open"));
    /* a failing close (the caller's own check of what was written) stops the job */
    fs = make_sinks(out_dir);
    fs.fail_close_at = 0;
    assert_int_equal(sgfp4_model_encode_set(m, p, names, "i.json", &sinks, NULL, &diag), SGFP4_ERR_IO);
    assert_string_equal(diag.message, "the check of file 0 failed");
    assert_int_equal(fs.opened, 1);
    /* a single file is a set of one */
    fs = make_sinks(out_dir);
    sgfp4_model_summary sum;
    sgfp4_model_summary_init(&sum);
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.summary = &sum;
    assert_int_equal(sgfp4_model_encode_set(m, p, names, "i.json", &sinks, &wo, &diag), SGFP4_OK);
    assert_int_equal(sum.files, 2);
    assert_int_equal(sum.quantized, 1);
    sgfp4_model *q = open_path(out_dir, "i.json", SGFP4_OK, NULL, NULL);
    assert_int_equal(sgfp4_model_shard_count(q), 1);
    assert_string_equal(sgfp4_model_shard_name(q, 0), "single.q");
    assert_true(sgfp4_model_is_quantized(q));
    /* the wrong kind of source */
    assert_int_equal(sgfp4_model_encode_set(q, p, names, "i.json", &sinks, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_decode_set(m, names, "i.json", &sinks, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_model_close(q);
    sgfp4_model_policy_free(p);
    sgfp4_model_close(m);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(work_dir, sizeof work_dir, "%s/sgfp4-set-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(work_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_set),
        cmocka_unit_test(test_index_errors),
        cmocka_unit_test(test_metadata_conflict),
        cmocka_unit_test(test_set_writer_contracts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
