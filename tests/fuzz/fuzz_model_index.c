/* libFuzzer target: the index of a sharded model (model.safetensors.index.json), opened as
 * a set over fixed shards that the target writes once into a temporary folder:
 * s1.safetensors (F16, U8 and F4 tensors), s2.safetensors (an F32 matrix, a BF16 vector),
 * q1.safetensors and q2.safetensors (quantized models of the same tensors).
 * Input: the index text, written to index.json beside them and opened by path.
 * Checks: an error leaves no model and has a message; a set that opens lists every tensor
 * once, each found by name in its own shard, inside that shard's file, with the shard the
 * weight_map names; every quantized tensor verifies (the shards are valid); a quantized set
 * restores into counting sinks, as a set and as one file, with the bytes the index implies.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "sgfp4_model.h"

static char folder[256];
static char index_path[300];

static sgfp4_status to_file(void *user, const void *data, size_t size)
{
    return fwrite(data, 1, size, user) == size ? SGFP4_OK : SGFP4_ERR_IO;
}

static void write_shard(const char *name, const sgfp4_st_entry *e, size_t n, size_t bytes)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *f = fopen(path, "wb");
    FUZZ_ASSERT(f);
    const sgfp4_sink sink = {to_file, f};
    sgfp4_st_writer *w = NULL;
    FUZZ_ASSERT(sgfp4_st_writer_begin(e, n, NULL, NULL, 0, &sink, &w, NULL) == SGFP4_OK);
    uint8_t *data = calloc(1, bytes);
    FUZZ_ASSERT(data);
    for (size_t k = 0; k < bytes; k++)
        data[k] = (uint8_t)(k * 7 % 61); /* finite in every float dtype here */
    FUZZ_ASSERT(sgfp4_st_writer_write(w, data, bytes) == SGFP4_OK);
    FUZZ_ASSERT(sgfp4_st_writer_finish(w, NULL) == SGFP4_OK);
    sgfp4_st_writer_free(w);
    free(data);
    fclose(f);
}

static void quantize(const char *from, const char *to)
{
    char in[400], out[400];
    snprintf(in, sizeof in, "%s/%s", folder, from);
    snprintf(out, sizeof out, "%s/%s", folder, to);
    sgfp4_model *m = NULL;
    FUZZ_ASSERT(sgfp4_model_open(in, &m, NULL, NULL) == SGFP4_OK);
    sgfp4_model_policy *p = NULL;
    const char *all = "{\"rules\":[{\"match\":\"*\",\"action\":\"quantize\"}]}";
    FUZZ_ASSERT(sgfp4_model_policy_parse(all, strlen(all), &p, NULL) == SGFP4_OK);
    sgfp4_model_policy_defaults(p)->threads = 1;
    FILE *f = fopen(out, "wb");
    FUZZ_ASSERT(f);
    const sgfp4_sink sink = {to_file, f};
    FUZZ_ASSERT(sgfp4_model_encode(m, p, &sink, NULL, NULL) == SGFP4_OK);
    fclose(f);
    sgfp4_model_policy_free(p);
    sgfp4_model_close(m);
}

static void remove_folder(void)
{
    static const char *const names[] = {"s1.safetensors", "s2.safetensors", "q1.safetensors",
                                        "q2.safetensors", "index.json"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", folder, names[k]);
        unlink(path);
    }
    rmdir(folder);
}

static void make_shards(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/sgfp4-fuzz-index-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_ASSERT(mkdtemp(folder));
    atexit(remove_folder);
    snprintf(index_path, sizeof index_path, "%s/index.json", folder);
    static const uint64_t v4[] = {4}, v3[] = {3}, f4[] = {2, 5}, mat[] = {64, 64}, v8[] = {8};
    const sgfp4_st_entry s1[] = {{"a.w", SGFP4_ST_F16, 1, v4}, {"a.u", SGFP4_ST_U8, 1, v3},
                                 {"a.f4", SGFP4_ST_F4, 2, f4}};
    const sgfp4_st_entry s2[] = {{"b.w", SGFP4_ST_F32, 2, mat}, {"b.v", SGFP4_ST_BF16, 1, v8}};
    write_shard("s1.safetensors", s1, 3, 8 + 3 + 5);
    write_shard("s2.safetensors", s2, 2, 64 * 64 * 4 + 16);
    quantize("s1.safetensors", "q1.safetensors");
    quantize("s2.safetensors", "q2.safetensors");
}

typedef struct counting {
    uint64_t bytes;
    size_t files;
} counting;

static sgfp4_status count_bytes(void *user, const void *data, size_t size)
{
    (void)data;
    ((counting *)user)->bytes += size;
    return SGFP4_OK;
}

static sgfp4_status count_open(void *user, size_t file, const char *name, sgfp4_sink *sink,
                               sgfp4_diag *diag)
{
    (void)file;
    (void)diag;
    FUZZ_ASSERT(name && *name);
    ((counting *)user)->files++;
    *sink = (sgfp4_sink){count_bytes, user};
    return SGFP4_OK;
}

static sgfp4_status count_close(void *user, size_t file, sgfp4_status status, sgfp4_diag *diag)
{
    (void)user;
    (void)file;
    (void)status;
    (void)diag;
    return SGFP4_OK;
}

static void check_set(const sgfp4_model *m)
{
    const size_t shards = sgfp4_model_shard_count(m);
    FUZZ_ASSERT(sgfp4_model_is_set(m) && shards >= 1 && shards <= 4);
    const size_t count = sgfp4_model_tensor_count(m);
    size_t per_shard = 0;
    for (size_t k = 0; k < shards; k++) {
        const sgfp4_model *s = sgfp4_model_shard(m, k);
        FUZZ_ASSERT(s && !sgfp4_model_is_set(s) && sgfp4_model_shard_name(m, k));
        FUZZ_ASSERT(sgfp4_model_is_quantized(s) == sgfp4_model_is_quantized(m));
        per_shard += sgfp4_model_tensor_count(s);
    }
    FUZZ_ASSERT(per_shard == count);
    for (size_t i = 0; i < count; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, i);
        FUZZ_ASSERT(t && t->shard < shards);
        FUZZ_ASSERT(sgfp4_model_tensor_find(m, t->name) == t);
        const sgfp4_model *s = sgfp4_model_shard(m, t->shard);
        FUZZ_ASSERT(sgfp4_model_tensor_find(s, t->name) == t);
        FUZZ_ASSERT(t->offset + t->nbytes <= sgfp4_model_file_bytes(s));
        if (t->quant)
            FUZZ_ASSERT(sgfp4_model_tensor_verify(m, t, NULL) == SGFP4_OK);
    }
    if (!sgfp4_model_is_quantized(m))
        return;
    const char *names[4] = {"o1", "o2", "o3", "o4"};
    counting set = {0}, one = {0};
    const sgfp4_model_set_sinks sinks = {count_open, count_close, &set};
    sgfp4_model_summary sum;
    sgfp4_model_summary_init(&sum);
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.summary = &sum;
    FUZZ_ASSERT(sgfp4_model_decode_set(m, names, "o.json", &sinks, &wo, NULL) == SGFP4_OK);
    FUZZ_ASSERT(set.files == shards + 1 && sum.files == shards + 1 && sum.tensors == count);
    FUZZ_ASSERT(sum.file_bytes_out == set.bytes);
    const uint64_t restored = sum.bytes_out;
    const sgfp4_sink sink = {count_bytes, &one};
    const sgfp4_status s = sgfp4_model_decode(m, &sink, &wo, NULL);
    /* one file fails only where shards disagree on a metadata value (none here); it holds
     * the same tensors, so the same data bytes */
    FUZZ_ASSERT(s == SGFP4_OK && sum.bytes_out == restored && sum.file_bytes_out == one.bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!folder[0])
        make_shards();
    FILE *f = fopen(index_path, "wb");
    FUZZ_ASSERT(f);
    FUZZ_ASSERT(fwrite(data, 1, size, f) == size);
    fclose(f);
    sgfp4_model_open_options options;
    sgfp4_model_open_options_init(&options);
    options.ignore_index_total_size = size & 1;
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open(index_path, &m, &options, &diag);
    if (s != SGFP4_OK) {
        FUZZ_ASSERT(m == NULL && diag.status == s && diag.message[0] != '\0');
        return 0;
    }
    if (sgfp4_model_is_set(m))
        check_set(m);
    sgfp4_model_close(m);
    return 0;
}
