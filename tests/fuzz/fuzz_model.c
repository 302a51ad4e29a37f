/* libFuzzer target: whole-model files: the safetensors reader, the sgfp4 manifest (D6),
 * opening and verifying each quantized tensor, converting pass-through tensors, restoring
 * the model into a sink; and the JSON policy parser.
 * Input: one selector byte. Below 0xF0: a safetensors file follows (opened from memory, with
 * max_header_bytes 1 MB when the selector is odd). 0xF0 and above: a policy document.
 * Checks: every tensor a model lists lies inside the file, in data order, with a shape that
 * multiplies out to its element count and the name, dtype, shape and offsets the header
 * says (parsed again by the harness); each quantized tensor's strict open agrees with its
 * verify (a hash mismatch aside), and what opens passes every check of fuzz_check_tensor();
 * conversions and the restore stay inside their buffers; a small plain model round-trips
 * (encode -> decode keeps every name, dtype, shape, metadata pair and pass-through byte).
 * The libFuzzer binary mutates the safetensors files structurally (fuzz_model_mutator.c).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include <jansson.h>

#include "fuzz_common.h"
#include "sgfp4_model.h"
#include "support/buffer_sink.h"

static sgfp4_status discard(void *user, const void *data, size_t size)
{
    (void)data;
    *(uint64_t *)user += size;
    return SGFP4_OK;
}

static void check_quantized(const sgfp4_model *m, const sgfp4_model_tensor *t,
                            const uint8_t *file, size_t size)
{
    const sgfp4_model_quant *q = t->quant;
    FUZZ_ASSERT(q->profile == SGFP4_PROFILE_V1 || q->profile == SGFP4_PROFILE_V2);
    FUZZ_ASSERT(strlen(q->sha256) == 64);
    sgfp4_open_options options;
    sgfp4_open_options_init(&options);
    options.limits.max_elements = FUZZ_MAX_ELEMENTS;
    sgfp4_tensor *view = NULL;
    sgfp4_diag diag;
    const sgfp4_status opened = sgfp4_model_tensor_open(m, t, &view, &options, &diag);
    if (opened == SGFP4_OK) {
        sgfp4_tensor_info info;
        sgfp4_tensor_info_init(&info);
        sgfp4_tensor_get_info(view, &info);
        FUZZ_ASSERT(info.rows == q->rows && info.cols == q->cols);
        FUZZ_ASSERT(info.container_bytes == t->nbytes);
        fuzz_check_tensor(view, file + t->offset, (size_t)t->nbytes, 0x07);
        sgfp4_tensor_close(view);
    } else {
        FUZZ_ASSERT(view == NULL && diag.status == opened);
    }
    /* verify = strict open (default limits) + sha256 */
    const sgfp4_status verified = sgfp4_model_tensor_verify(m, t, &diag);
    if (verified == SGFP4_OK)
        FUZZ_ASSERT(opened == SGFP4_OK || opened == SGFP4_ERR_LIMIT);
    (void)size;
}

/* The shape a tensor reports multiplies out to its element count (a shape that belongs to
 * another tensor mostly does not). */
static void check_shape(const sgfp4_model_tensor *t)
{
    uint64_t product = 1;
    for (size_t d = 0; d < t->rank; d++) {
        FUZZ_ASSERT(t->shape[d] == 0 || product <= UINT64_MAX / t->shape[d]);
        product *= t->shape[d];
    }
    FUZZ_ASSERT(product == t->elements);
}

/* An oracle independent of the reader's structures: the header parsed again here, each
 * entry compared with what the reader reports for that name (dtype, shape, offsets). A
 * shape taken from another tensor of the same size passes every other check. */
static void check_against_header(const sgfp4_model *m, const uint8_t *data)
{
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--)
        n = n << 8 | data[k];
    json_t *root = json_loadb((const char *)data + 8, (size_t)n, 0, NULL);
    FUZZ_ASSERT(json_is_object(root));
    size_t tensors = 0;
    const char *name;
    json_t *entry;
    json_object_foreach(root, name, entry) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        tensors++;
        const sgfp4_model_tensor *t = sgfp4_model_tensor_find(m, name);
        FUZZ_ASSERT(t && strcmp(t->name, name) == 0);
        FUZZ_ASSERT(strcmp(json_string_value(json_object_get(entry, "dtype")),
                           sgfp4_st_dtype_name(t->dtype)) == 0);
        const json_t *shape = json_object_get(entry, "shape");
        FUZZ_ASSERT(json_array_size(shape) == t->rank);
        for (size_t d = 0; d < t->rank; d++)
            FUZZ_ASSERT((uint64_t)json_integer_value(json_array_get(shape, d)) == t->shape[d]);
        const json_t *offsets = json_object_get(entry, "data_offsets");
        FUZZ_ASSERT(8 + n + (uint64_t)json_integer_value(json_array_get(offsets, 0)) == t->offset);
    }
    FUZZ_ASSERT(tensors == sgfp4_model_tensor_count(m));
    json_decref(root);
}

/* The round trip as an oracle, for every small plain model that opens: encoded with every
 * float tensor quantized (cheap encoder settings) and decoded, the result has the source's
 * names, dtypes, shapes, metadata and every pass-through byte. Encoding may only refuse
 * non-finite values. */
static void check_round_trip(const sgfp4_model *src)
{
    static sgfp4_model_policy *policy;
    if (!policy) {
        const char doc[] = "{\"min_elements\":1,\"defaults\":{\"policy\":\"threshold\","
                           "\"fit\":\"reference\"},\"rules\":[{\"match\":\"*\","
                           "\"action\":\"quantize\"}]}";
        FUZZ_ASSERT(sgfp4_model_policy_parse(doc, sizeof doc - 1, &policy, NULL) == SGFP4_OK);
    }
    buffer q = {0}, r = {0};
    const sgfp4_sink qsink = {buffer_write, &q}, rsink = {buffer_write, &r};
    sgfp4_diag diag;
    const sgfp4_status encoded = sgfp4_model_encode(src, policy, &qsink, NULL, &diag);
    if (encoded != SGFP4_OK) {
        if (encoded != SGFP4_ERR_ARGUMENT || !strstr(diag.message, "finite"))
            fprintf(stderr, "round trip: encode: %s\n", diag.message);
        FUZZ_ASSERT(encoded == SGFP4_ERR_ARGUMENT && strstr(diag.message, "finite"));
        free(q.data);
        return;
    }
    sgfp4_model *qm = NULL, *rm = NULL;
    FUZZ_ASSERT(sgfp4_model_open_memory(q.data, q.size, &qm, NULL, &diag) == SGFP4_OK);
    if (sgfp4_model_decode(qm, &rsink, NULL, &diag) != SGFP4_OK)
        fprintf(stderr, "round trip: decode: %s\n", diag.message);
    FUZZ_ASSERT(sgfp4_model_open_memory(r.data, r.size, &rm, NULL, &diag) == SGFP4_OK);
    const size_t n = sgfp4_model_tensor_count(src);
    FUZZ_ASSERT(sgfp4_model_tensor_count(qm) == n && sgfp4_model_tensor_count(rm) == n);
    for (size_t i = 0; i < n; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(src, i);
        const sgfp4_model_tensor *qt = sgfp4_model_tensor_find(qm, t->name);
        const sgfp4_model_tensor *rt = sgfp4_model_tensor_find(rm, t->name);
        FUZZ_ASSERT(qt && rt);
        FUZZ_ASSERT(rt->dtype == t->dtype && rt->rank == t->rank && rt->nbytes == t->nbytes);
        FUZZ_ASSERT(t->rank == 0 || memcmp(rt->shape, t->shape, t->rank * sizeof *t->shape) == 0);
        if (!qt->quant)
            FUZZ_ASSERT(t->nbytes == 0 || memcmp(rt->data, t->data, (size_t)t->nbytes) == 0);
        else
            FUZZ_ASSERT(qt->quant->source_dtype == t->dtype &&
                        qt->quant->original_rank == t->rank);
    }
    for (size_t k = 0; k < sgfp4_model_metadata_count(src); k++) {
        const char *key = NULL, *value = NULL;
        FUZZ_ASSERT(sgfp4_model_metadata_at(src, k, &key, &value) == 0);
        const char *restored = sgfp4_model_metadata_get(rm, key);
        FUZZ_ASSERT(restored && strcmp(restored, value) == 0);
    }
    sgfp4_model_close(qm);
    sgfp4_model_close(rm);
    free(q.data);
    free(r.data);
}

static void fuzz_file(const uint8_t *data, size_t size, int small_header)
{
    sgfp4_model_open_options options;
    sgfp4_model_open_options_init(&options);
    if (small_header)
        options.limits.max_header_bytes = 1 << 20;
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open_memory(data, size, &m, &options, &diag);
    if (s != SGFP4_OK) {
        FUZZ_ASSERT(m == NULL && diag.status == s && diag.message[0] != '\0');
        return;
    }
    FUZZ_ASSERT(m != NULL);
    const uint64_t data_offset = sgfp4_model_data_offset(m);
    FUZZ_ASSERT(data_offset >= 8 && data_offset <= size);
    FUZZ_ASSERT(sgfp4_model_file_bytes(m) == size);
    const size_t count = sgfp4_model_tensor_count(m);
    uint64_t total_elements = 0;
    for (size_t i = 0; i < count; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, i);
        FUZZ_ASSERT(t && t->name);
        FUZZ_ASSERT(sgfp4_model_tensor_find(m, t->name) == t);
        FUZZ_ASSERT(t->offset >= data_offset && t->offset <= size &&
                    size - t->offset >= t->nbytes);
        FUZZ_ASSERT(t->data == data + t->offset);
        uint64_t nbytes = 0; /* elements x bits / 8: sub-byte dtypes fill whole bytes */
        FUZZ_ASSERT(sgfp4_st_dtype_bytes(t->dtype, t->elements, &nbytes) == 0);
        FUZZ_ASSERT(t->nbytes == nbytes);
        check_shape(t);
        /* tensors come in data order */
        FUZZ_ASSERT(i == 0 || t->offset >= sgfp4_model_tensor_at(m, i - 1)->offset);
        total_elements += t->elements;
        if (t->quant) {
            check_quantized(m, t, data, size);
        } else if (sgfp4_st_dtype_is_quantizable(t->dtype) && t->elements <= FUZZ_MAX_ELEMENTS) {
            const size_t bytes = (size_t)t->elements * 4;
            float *f = malloc(bytes ? bytes : 1);
            FUZZ_ASSERT(f);
            (void)sgfp4_model_tensor_to_f32(t, (int)(i & 1), f, bytes, &diag);
            free(f);
        }
    }
    FUZZ_ASSERT(sgfp4_model_tensor_at(m, count) == NULL);
    check_against_header(m, data);
    const size_t meta = sgfp4_model_metadata_count(m);
    for (size_t i = 0; i < meta; i++) {
        const char *key = NULL, *value = NULL;
        FUZZ_ASSERT(sgfp4_model_metadata_at(m, i, &key, &value) == 0 && key && value);
    }
    /* Restore the whole model into a counting sink, when it is small. */
    if (sgfp4_model_is_quantized(m) && total_elements <= FUZZ_MAX_ELEMENTS) {
        uint64_t written = 0;
        const sgfp4_sink sink = {discard, &written};
        (void)sgfp4_model_decode(m, &sink, NULL, &diag);
    }
    if (!sgfp4_model_is_quantized(m) && count <= 16 && total_elements <= 4 * 4096)
        check_round_trip(m);
    sgfp4_model_close(m);
}

static void fuzz_policy(const uint8_t *data, size_t size)
{
    sgfp4_model_policy *p = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_policy_parse((const char *)data, size, &p, &diag);
    if (s == SGFP4_OK)
        FUZZ_ASSERT(p != NULL && sgfp4_model_policy_defaults(p) != NULL);
    else
        FUZZ_ASSERT(p == NULL);
    sgfp4_model_policy_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* An exact-size copy: the file must not need the selector byte before it. */
    uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
    FUZZ_ASSERT(copy);
    memcpy(copy, data + 1, size - 1);
    if (data[0] >= 0xF0)
        fuzz_policy(copy, size - 1);
    else
        fuzz_file(copy, size - 1, data[0] & 1);
    free(copy);
    return 0;
}
