/* Strict safetensors header parsing: the 8-byte length, the JSON header (jansson, duplicate
 * keys rejected), every tensor entry, contiguous offsets and the file's end.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/model_internal.h"

static uint64_t read_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

/* A JSON integer >= 0 (json_int_t is at least 64-bit, so every value jansson accepts fits). */
static bool json_uint(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static bool mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return true;
    *out = a * b;
    return false;
}

/* Fails naming the tensor and the file byte of its key in the header. */
static sgfp4_status entry_fail(sgfp4_diag *diag, sgfp4_status status, int64_t at,
                               const char *name, const char *format, ...) SGFP4_PRINTF_(5, 6);
static sgfp4_status entry_fail(sgfp4_diag *diag, sgfp4_status status, int64_t at,
                               const char *name, const char *format, ...)
{
    char what[200];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return sgfp4_fail(diag, status, at, -1, -1, "tensor '%.64s' (header byte %lld): %s", name,
                      (long long)at, what);
}
#define ENTRY_FAIL(status, ...) entry_fail(diag, status, at, name, __VA_ARGS__)

/* Fills entry e from the JSON object of tensor `name`, whose key is at file byte `at`. */
static sgfp4_status parse_entry(const char *name, json_t *obj, model_entry *e, int64_t at,
                                sgfp4_diag *diag)
{
    if (!json_is_object(obj))
        return ENTRY_FAIL(SGFP4_ERR_MODEL_JSON, "entry is not a JSON object");
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return ENTRY_FAIL(SGFP4_ERR_MODEL_JSON,
                              "unknown key '%.32s' (only dtype, shape, data_offsets)", key);
    }
    const json_t *dtype = json_object_get(obj, "dtype");
    const json_t *shape = json_object_get(obj, "shape");
    const json_t *offs = json_object_get(obj, "data_offsets");
    if (!dtype || !shape || !offs)
        return ENTRY_FAIL(SGFP4_ERR_MODEL_JSON, "missing '%s'",
                          !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!json_is_string(dtype) || sgfp4_st_dtype_parse(json_string_value(dtype), &e->pub.dtype))
        return ENTRY_FAIL(SGFP4_ERR_MODEL_DTYPE, "unknown dtype %s%s%s",
                          json_is_string(dtype) ? "'" : "(not a string)",
                          json_is_string(dtype) ? json_string_value(dtype) : "",
                          json_is_string(dtype) ? "'" : "");
    if (!json_is_array(shape))
        return ENTRY_FAIL(SGFP4_ERR_MODEL_JSON, "shape is not an array");
    const size_t rank = json_array_size(shape);
    if (rank > SGFP4_MODEL_MAX_RANK)
        return ENTRY_FAIL(SGFP4_ERR_LIMIT, "rank %zu exceeds this reader's limit of %d", rank,
                          SGFP4_MODEL_MAX_RANK);
    uint64_t elements = 1;
    bool overflow = false;
    for (size_t d = 0; d < rank; d++) {
        if (!json_uint(json_array_get(shape, d), &e->shape[d]))
            return ENTRY_FAIL(SGFP4_ERR_MODEL_JSON, "shape[%zu] is not a non-negative integer", d);
        overflow = overflow || mul_overflows(elements, e->shape[d], &elements);
    }
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_uint(json_array_get(offs, 0), &e->begin) ||
        !json_uint(json_array_get(offs, 1), &e->end))
        return ENTRY_FAIL(SGFP4_ERR_MODEL_JSON,
                          "data_offsets is not [begin, end] of non-negative integers");
    uint64_t nbytes = 0;
    if (overflow || sgfp4_st_dtype_bytes(e->pub.dtype, elements, &nbytes) != 0) {
        /* Sub-byte dtypes (F4, F6) must fill whole bytes, as the format requires. */
        if (!overflow && sgfp4_st_dtype_bits(e->pub.dtype) % 8 && elements < UINT64_MAX / 8)
            return ENTRY_FAIL(SGFP4_ERR_MODEL_OFFSETS,
                              "%llu elements of %s are %llu bits, not a whole number of bytes",
                              (unsigned long long)elements, sgfp4_st_dtype_name(e->pub.dtype),
                              (unsigned long long)(elements * sgfp4_st_dtype_bits(e->pub.dtype)));
        return ENTRY_FAIL(SGFP4_ERR_MODEL_OFFSETS, "shape claims more than 2^64 bytes");
    }
    if (e->end < e->begin)
        return ENTRY_FAIL(SGFP4_ERR_MODEL_OFFSETS, "data_offsets end %llu is before begin %llu",
                          (unsigned long long)e->end, (unsigned long long)e->begin);
    if (e->end - e->begin != nbytes)
        return ENTRY_FAIL(SGFP4_ERR_MODEL_OFFSETS,
                          "data_offsets span %llu bytes but shape x dtype is %llu",
                          (unsigned long long)(e->end - e->begin),
                          (unsigned long long)nbytes);
    e->pub.rank = rank;
    e->pub.shape = e->shape;
    e->pub.elements = elements;
    e->pub.nbytes = nbytes;
    return SGFP4_OK;
}

static sgfp4_status parse_metadata(sgfp4_model *m, json_t *meta, sgfp4_diag *diag)
{
    if (!json_is_object(meta))
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, 8, -1, -1,
                          "__metadata__ is not a JSON object");
    const size_t n = json_object_size(meta);
    m->meta_keys = calloc(n ? n : 1, sizeof *m->meta_keys);
    m->meta_values = calloc(n ? n : 1, sizeof *m->meta_values);
    if (!m->meta_keys || !m->meta_values)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    const char *key;
    json_t *value;
    json_object_foreach(meta, key, value) {
        if (!json_is_string(value))
            return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, 8, -1, -1,
                              "__metadata__['%s'] is not a string", key);
        m->meta_keys[m->meta_count] = strdup(key);
        m->meta_values[m->meta_count] = strdup(json_string_value(value));
        m->meta_count++;
        if (!m->meta_keys[m->meta_count - 1] || !m->meta_values[m->meta_count - 1])
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    return SGFP4_OK;
}

static int by_offset(const void *a, const void *b)
{
    const model_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->pub.name, y->pub.name);
}

/* Offsets sorted: contiguous from 0, and the file ends at the last tensor. */
static sgfp4_status check_layout(sgfp4_model *m, sgfp4_diag *diag)
{
    qsort(m->entries, m->count, sizeof *m->entries, by_offset);
    const uint64_t data_bytes = m->size - m->data_offset;
    uint64_t expected = 0;
    for (size_t k = 0; k < m->count; k++) {
        model_entry *e = &m->entries[k];
        if (e->begin != expected)
            return sgfp4_fail(diag, SGFP4_ERR_MODEL_OFFSETS,
                              (int64_t)(m->data_offset + (e->begin < expected ? e->begin : expected)),
                              -1, -1, "tensor '%s': data begins at %llu (file byte %llu) but the "
                              "previous tensor ends at %llu (%s)", e->pub.name, (unsigned long long)e->begin,
                              (unsigned long long)(m->data_offset + e->begin),
                              (unsigned long long)expected, e->begin < expected ? "overlap" : "hole");
        if (e->end > data_bytes)
            return sgfp4_fail(diag, SGFP4_ERR_TRUNCATED,
                              (int64_t)(m->data_offset + e->begin), -1, -1,
                              "tensor '%s': data [%llu, %llu) (file byte %llu on) runs past the "
                              "end of the file (%llu data bytes): truncated", e->pub.name,
                              (unsigned long long)e->begin, (unsigned long long)e->end,
                              (unsigned long long)(m->data_offset + e->begin),
                              (unsigned long long)data_bytes);
        expected = e->end;
        e->pub.offset = m->data_offset + e->begin;
        e->pub.data = m->base + e->pub.offset;
    }
    if (expected != data_bytes)
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_OFFSETS, (int64_t)(m->data_offset + expected), -1,
                          -1, "%llu bytes after the last tensor's data, from file byte %llu (the "
                          "file must end there)", (unsigned long long)(data_bytes - expected),
                          (unsigned long long)(m->data_offset + expected));
    return SGFP4_OK;
}

/* File byte of the key "name" in the header (the first match of the quoted name followed by
 * a colon), or 8 (the header's start) if not found, e.g. when the name is escaped. */
static int64_t key_offset(const sgfp4_model *m, const char *name)
{
    const char *h = (const char *)m->base + 8;
    const size_t n = (size_t)(m->data_offset - 8), len = strlen(name);
    for (size_t k = 0; k + len + 2 <= n; k++)
        if (h[k] == '"' && memcmp(h + k + 1, name, len) == 0 && h[k + len + 1] == '"') {
            size_t j = k + len + 2;
            while (j < n && (h[j] == ' ' || h[j] == '\t' || h[j] == '\n' || h[j] == '\r'))
                j++;
            if (j < n && h[j] == ':')
                return (int64_t)(8 + k);
        }
    return 8;
}

static sgfp4_status parse_header(sgfp4_model *m, json_t *root, sgfp4_diag *diag)
{
    if (!json_is_object(root))
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, 8, -1, -1, "header is not a JSON object");
    json_t *meta = json_object_get(root, "__metadata__");
    m->count = json_object_size(root) - (meta ? 1 : 0);
    m->entries = calloc(m->count ? m->count : 1, sizeof *m->entries);
    if (!m->entries)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    sgfp4_status s = SGFP4_OK;
    if (meta && (s = parse_metadata(m, meta, diag)) != SGFP4_OK)
        return s;
    size_t k = 0;
    const char *name;
    json_t *value;
    json_object_foreach(root, name, value) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        model_entry *e = &m->entries[k++];
        if (!(e->pub.name = strdup(name)))
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        if ((s = parse_entry(name, value, e, key_offset(m, name), diag)) != SGFP4_OK)
            return s;
    }
    if ((s = check_layout(m, diag)) != SGFP4_OK)
        return s;
    return sgfp4_model_index_names(m, diag);
}

sgfp4_status sgfp4_model_parse(sgfp4_model *m, const sgfp4_limits *limits, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    const uint64_t max_header =
        limits && limits->max_header_bytes ? limits->max_header_bytes : SGFP4_DEFAULT_MAX_HEADER;
    if (m->size < 8)
        return sgfp4_fail(diag, SGFP4_ERR_TRUNCATED, 0, -1, -1,
                          "file is %llu bytes, shorter than the 8-byte header length",
                          (unsigned long long)m->size);
    const uint64_t n = read_le64(m->base);
    if (n > max_header)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, 0, -1, -1,
                          "header length %llu exceeds the limit of %llu bytes",
                          (unsigned long long)n, (unsigned long long)max_header);
    if (n > m->size - 8)
        return sgfp4_fail(diag, SGFP4_ERR_TRUNCATED, 0, -1, -1,
                          "header length %llu runs past the end of the file (%llu bytes): "
                          "truncated", (unsigned long long)n, (unsigned long long)m->size);
    if (n < 2 || m->base[8] != '{')
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, 8, -1, -1,
                          "header does not start with '{'");
    m->data_offset = 8 + n;
    json_error_t err;
    json_t *root = json_loadb((const char *)m->base + 8, (size_t)n, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        const bool dup = json_error_code(&err) == json_error_duplicate_key;
        return sgfp4_fail(diag, dup ? SGFP4_ERR_MODEL_DUPLICATE : SGFP4_ERR_MODEL_JSON,
                          (int64_t)(8 + (err.position > 0 ? err.position : 0)), -1, -1,
                          "header JSON at byte %lld: %s", (long long)(8 + err.position),
                          err.text);
    }
    sgfp4_status s = parse_header(m, root, diag);
    json_decref(root);
    if (s != SGFP4_OK)
        return s;
    const char *manifest = sgfp4_model_metadata_get(m, "sgfp4");
    if (manifest) {
        m->quantized = true;
        s = sgfp4_model_parse_manifest(m, manifest, diag);
    }
    return s;
}

void sgfp4_model_free_parsed(sgfp4_model *m)
{
    for (size_t k = 0; m->entries && k < m->count; k++) {
        free((char *)m->entries[k].pub.name);
        free(m->entries[k].encoder_json);
    }
    free(m->entries);
    free(m->by_name);
    m->by_name = NULL;
    for (size_t k = 0; k < m->meta_count; k++) {
        free(m->meta_keys[k]);
        free(m->meta_values[k]);
    }
    free(m->meta_keys);
    free(m->meta_values);
    m->entries = NULL;
    m->meta_keys = m->meta_values = NULL;
    m->count = m->meta_count = 0;
}
