/* Streaming safetensors writer: header first (offsets from the declared sizes, JSON padded
 * with spaces to a 64-byte data boundary), then exactly the declared data bytes, in order.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/model_internal.h"

struct sgfp4_st_writer {
    sgfp4_sink sink;
    uint64_t expected, written;
    bool failed;
};

static json_t *shape_json(const uint64_t *shape, size_t rank)
{
    json_t *a = json_array();
    for (size_t d = 0; a && d < rank; d++)
        if (json_array_append_new(a, json_integer((json_int_t)shape[d])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Builds the header object; sets *data_bytes. */
static sgfp4_status build_header(const sgfp4_st_entry *entries, size_t count,
                                 const char *const *keys, const char *const *values,
                                 size_t meta_count, json_t **out, uint64_t *data_bytes,
                                 sgfp4_diag *diag)
{
    json_t *root = json_object();
    if (!root)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    if (meta_count) {
        json_t *meta = json_object();
        json_object_set_new(root, "__metadata__", meta);
        for (size_t k = 0; meta && k < meta_count; k++)
            json_object_set_new(meta, keys[k], json_string(values[k]));
        if (!meta || json_object_size(meta) != meta_count) {
            json_decref(root);
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                              "metadata keys are not unique or not valid UTF-8");
        }
    }
    uint64_t offset = 0;
    for (size_t k = 0; k < count; k++) {
        const sgfp4_st_entry *e = &entries[k];
        uint64_t elements = 1, n = 0;
        bool bad = sgfp4_st_dtype_bits(e->dtype) == 0 || !e->name ||
                   strcmp(e->name, "__metadata__") == 0 || e->rank > SGFP4_MODEL_MAX_RANK ||
                   (e->rank && !e->shape);
        for (size_t d = 0; !bad && d < e->rank; d++) {
            bad = e->shape[d] > (uint64_t)INT64_MAX ||
                  (e->shape[d] && elements > UINT64_MAX / e->shape[d]);
            elements *= e->shape[d];
        }
        /* Sub-byte dtypes must fill whole bytes. */
        bad = bad || sgfp4_st_dtype_bytes(e->dtype, elements, &n) != 0;
        if (bad || n > (uint64_t)INT64_MAX - offset) {
            json_decref(root);
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                              "tensor '%s': invalid name, dtype or shape", e->name ? e->name : "");
        }
        json_t *t = json_object();
        json_object_set_new(t, "dtype", json_string(sgfp4_st_dtype_name(e->dtype)));
        json_object_set_new(t, "shape", shape_json(e->shape, e->rank));
        json_object_set_new(t, "data_offsets",
                            json_pack("[II]", (json_int_t)offset, (json_int_t)(offset + n)));
        const size_t before = json_object_size(root);
        if (!t || json_object_size(t) != 3 || json_object_set_new(root, e->name, t) != 0 ||
            json_object_size(root) != before + 1) {
            json_decref(root);
            return sgfp4_fail(diag, SGFP4_ERR_MODEL_DUPLICATE, -1, -1, -1,
                              "tensor '%s': duplicate or invalid name", e->name);
        }
        offset += n;
    }
    *out = root;
    *data_bytes = offset;
    return SGFP4_OK;
}

sgfp4_status sgfp4_st_writer_begin(const sgfp4_st_entry *entries, size_t count,
                                   const char *const *meta_keys, const char *const *meta_values,
                                   size_t meta_count, const sgfp4_sink *sink,
                                   sgfp4_st_writer **out, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!out || !sink || !sink->write || (count && !entries) ||
        (meta_count && (!meta_keys || !meta_values)))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    json_t *root = NULL;
    uint64_t data_bytes = 0;
    sgfp4_status s = build_header(entries, count, meta_keys, meta_values, meta_count, &root,
                                  &data_bytes, diag);
    if (s != SGFP4_OK)
        return s;
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    const size_t len = strlen(text);
    const size_t padded = (8 + len + 63) / 64 * 64 - 8; /* data starts on a 64-byte boundary */
    sgfp4_st_writer *w = calloc(1, sizeof *w);
    char *head = malloc(8 + padded);
    if (!w || !head) {
        free(text);
        free(w);
        free(head);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    for (int k = 0; k < 8; k++)
        head[k] = (char)((uint64_t)padded >> (8 * k));
    memcpy(head + 8, text, len);
    memset(head + 8 + len, ' ', padded - len);
    free(text);
    w->sink = *sink;
    w->expected = data_bytes;
    s = sgfp4_sink_put(sink, head, 8 + padded);
    free(head);
    if (s != SGFP4_OK) {
        free(w);
        return sgfp4_fail(diag, s, -1, -1, -1, "cannot write the safetensors header");
    }
    *out = w;
    return SGFP4_OK;
}

sgfp4_status sgfp4_st_writer_write(sgfp4_st_writer *w, const void *data, size_t size)
{
    if (!w || w->failed || (!data && size))
        return SGFP4_ERR_ARGUMENT;
    if (size > w->expected - w->written) {
        w->failed = true;
        return SGFP4_ERR_ARGUMENT;
    }
    const sgfp4_status s = sgfp4_sink_put(&w->sink, data, size);
    if (s != SGFP4_OK)
        w->failed = true;
    w->written += size;
    return s;
}

sgfp4_status sgfp4_st_writer_finish(sgfp4_st_writer *w, sgfp4_diag *diag)
{
    if (!w)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL writer");
    if (w->failed || w->written != w->expected)
        return sgfp4_fail(diag, SGFP4_ERR_INTERNAL, (int64_t)w->written, -1, -1,
                          "safetensors writer: %llu of %llu data bytes written%s",
                          (unsigned long long)w->written, (unsigned long long)w->expected,
                          w->failed ? " (a write failed)" : "");
    return SGFP4_OK;
}

void sgfp4_st_writer_free(sgfp4_st_writer *w) { free(w); }
