/* Strict safetensors header parsing: the 8-byte length, a linear pre-scan (tensor count,
 * nesting, the memory the parse will need), the JSON header (jansson, duplicate keys
 * rejected), every tensor entry, contiguous offsets and the file's end. Every step is linear
 * or a sort: a header of n tensors costs O(n log n).
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/json_scan.h"
#include "model/model_internal.h"

/* The deepest a valid header nests: the header, an entry, its shape or data_offsets. */
#define HEADER_MAX_DEPTH 3
/* Longest array the pre-scan lets through: above every valid one (a shape has at most
 * SGFP4_MODEL_MAX_RANK dims), low enough that no array costs much memory. */
#define HEADER_MAX_ARRAY 64

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

/* Fills entry e from the JSON object of tensor `name`, whose key is at file byte `at`. */
static sgfp4_status parse_entry(const char *name, json_t *obj, model_entry *e, int64_t at,
                                sgfp4_diag *diag)
{
    if (!json_is_object(obj))
        return entry_fail(diag, SGFP4_ERR_MODEL_JSON, at, name, "entry is not a JSON object");
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return entry_fail(diag, SGFP4_ERR_MODEL_JSON, at, name,
                              "unknown key '%.32s' (only dtype, shape, data_offsets)", key);
    }
    const json_t *dtype = json_object_get(obj, "dtype");
    const json_t *shape = json_object_get(obj, "shape");
    const json_t *offs = json_object_get(obj, "data_offsets");
    if (!dtype || !shape || !offs)
        return entry_fail(diag, SGFP4_ERR_MODEL_JSON, at, name, "missing '%s'",
                          !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!json_is_string(dtype) || sgfp4_st_dtype_parse(json_string_value(dtype), &e->pub.dtype))
        return entry_fail(diag, SGFP4_ERR_MODEL_DTYPE, at, name, "unknown dtype %s%s%s",
                          json_is_string(dtype) ? "'" : "(not a string)",
                          json_is_string(dtype) ? json_string_value(dtype) : "",
                          json_is_string(dtype) ? "'" : "");
    if (!json_is_array(shape))
        return entry_fail(diag, SGFP4_ERR_MODEL_JSON, at, name, "shape is not an array");
    const size_t rank = json_array_size(shape);
    if (rank > SGFP4_MODEL_MAX_RANK)
        return entry_fail(diag, SGFP4_ERR_LIMIT, at, name,
                          "rank %zu exceeds this reader's limit of %d", rank, SGFP4_MODEL_MAX_RANK);
    uint64_t elements = 1;
    bool overflow = false;
    for (size_t d = 0; d < rank; d++) {
        if (!json_uint(json_array_get(shape, d), &e->shape[d]))
            return entry_fail(diag, SGFP4_ERR_MODEL_JSON, at, name,
                              "shape[%zu] is not a non-negative integer", d);
        overflow = overflow || mul_overflows(elements, e->shape[d], &elements);
    }
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_uint(json_array_get(offs, 0), &e->begin) ||
        !json_uint(json_array_get(offs, 1), &e->end))
        return entry_fail(diag, SGFP4_ERR_MODEL_JSON, at, name,
                          "data_offsets is not [begin, end] of non-negative integers");
    uint64_t nbytes = 0;
    if (overflow || sgfp4_st_dtype_bytes(e->pub.dtype, elements, &nbytes) != 0) {
        /* Sub-byte dtypes (F4, F6) must fill whole bytes, as the format requires. */
        if (!overflow && sgfp4_st_dtype_bits(e->pub.dtype) % 8 && elements < UINT64_MAX / 8)
            return entry_fail(diag, SGFP4_ERR_MODEL_OFFSETS, at, name,
                              "%llu elements of %s are %llu bits, not a whole number of bytes",
                              (unsigned long long)elements, sgfp4_st_dtype_name(e->pub.dtype),
                              (unsigned long long)(elements * sgfp4_st_dtype_bits(e->pub.dtype)));
        return entry_fail(diag, SGFP4_ERR_MODEL_OFFSETS, at, name,
                          "shape claims more than 2^64 bytes");
    }
    if (e->end < e->begin)
        return entry_fail(diag, SGFP4_ERR_MODEL_OFFSETS, at, name,
                          "data_offsets end %llu is before begin %llu", (unsigned long long)e->end,
                          (unsigned long long)e->begin);
    if (e->end - e->begin != nbytes)
        return entry_fail(diag, SGFP4_ERR_MODEL_OFFSETS, at, name,
                          "data_offsets span %llu bytes but shape x dtype is %llu",
                          (unsigned long long)(e->end - e->begin),
                          (unsigned long long)nbytes);
    e->pub.rank = rank;
    e->pub.elements = elements; /* pub.shape is set once the entry has its final place */
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

/* An entry's sort key, compact, so that the sort reads one small array. */
typedef struct offset_key {
    uint64_t begin, end;
    const char *name;
    size_t index;
} offset_key;

static int by_offset(const void *a, const void *b)
{
    const offset_key *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name); /* zero-size tensors at one offset: by name */
}

/* Puts the entries into data order: sorts their keys, then moves each entry once, cycle by
 * cycle (the keys' indices mark what is in place). */
static sgfp4_status sort_entries(sgfp4_model *m, sgfp4_diag *diag)
{
    offset_key *keys = malloc((m->count ? m->count : 1) * sizeof *keys);
    if (!keys)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (size_t k = 0; k < m->count; k++)
        keys[k] = (offset_key){m->entries[k].begin, m->entries[k].end, m->entries[k].pub.name, k};
    qsort(keys, m->count, sizeof *keys, by_offset);
    for (size_t start = 0; start < m->count; start++) {
        if (keys[start].index == start)
            continue;
        const model_entry saved = m->entries[start];
        size_t to = start;
        for (;;) {
            const size_t from = keys[to].index;
            keys[to].index = to;
            if (from == start) {
                m->entries[to] = saved;
                break;
            }
            m->entries[to] = m->entries[from];
            to = from;
        }
    }
    free(keys);
    return SGFP4_OK;
}

/* Sorts the entries into data order, then checks the offsets: contiguous from 0, and the
 * file ends at the last tensor. The sort moves the entries, so the pointers each one's
 * public view holds into itself are set only here, after it (never before: a pointer taken
 * earlier would name whichever entry moved into the old place). */
static sgfp4_status check_layout(sgfp4_model *m, sgfp4_diag *diag)
{
    const sgfp4_status sorted = sort_entries(m, diag);
    if (sorted != SGFP4_OK)
        return sorted;
    for (size_t k = 0; k < m->count; k++)
        m->entries[k].pub.shape = m->entries[k].shape;
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

/* File byte of the k-th top-level key, from the pre-scan: jansson keeps an object's keys in
 * text order, so once both count the same keys the k-th one is the k-th iterated. Else 8,
 * the header's start. */
static int64_t key_offset(const json_scan *scan, size_t k, size_t keys)
{
    return scan->top_keys == keys && k < scan->top_keys ? (int64_t)(8 + scan->top_key_at[k]) : 8;
}

static sgfp4_status parse_header(sgfp4_model *m, json_t *root, const json_scan *scan,
                                 uint64_t max_tensors, sgfp4_diag *diag)
{
    if (!json_is_object(root))
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, 8, -1, -1, "header is not a JSON object");
    json_t *meta = json_object_get(root, "__metadata__");
    const size_t keys = json_object_size(root);
    m->count = keys - (meta ? 1 : 0);
    if (m->count > max_tensors)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, 8, -1, -1,
                          "the header lists more than %llu tensors (%zu; the limit is "
                          "sgfp4_model_open_options.max_tensors)",
                          (unsigned long long)max_tensors, m->count);
    m->entries = calloc(m->count ? m->count : 1, sizeof *m->entries);
    if (!m->entries)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    sgfp4_status s = SGFP4_OK;
    if (meta && (s = parse_metadata(m, meta, diag)) != SGFP4_OK)
        return s;
    size_t k = 0, index = 0;
    const char *name;
    json_t *value;
    json_object_foreach(root, name, value) {
        const int64_t at = key_offset(scan, index++, keys);
        if (strcmp(name, "__metadata__") == 0)
            continue;
        model_entry *e = &m->entries[k++];
        if (!(e->pub.name = strdup(name)))
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        if ((s = parse_entry(name, value, e, at, diag)) != SGFP4_OK)
            return s;
    }
    if ((s = check_layout(m, diag)) != SGFP4_OK)
        return s;
    return sgfp4_model_index_names(m, diag);
}

/* The pre-scan's verdict on the header text, as a status (SGFP4_OK to go on to jansson,
 * which also reports what the scan found malformed). */
static sgfp4_status check_scan(json_scan_result r, const json_scan *scan, uint64_t max_tensors,
                               sgfp4_diag *diag)
{
    const int64_t at = (int64_t)(8 + scan->stop);
    switch (r) {
    case JSON_SCAN_TOO_MANY_KEYS:
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, at, -1, -1,
                          "header byte %lld: the header lists more than %llu tensors (the "
                          "limit; sgfp4_model_open_options.max_tensors)",
                          (long long)at, (unsigned long long)max_tensors);
    case JSON_SCAN_TOO_DEEP:
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, at, -1, -1,
                          "header byte %lld: nested deeper than a safetensors header can be "
                          "(header, entry, shape)", (long long)at);
    case JSON_SCAN_ARRAY_TOO_LONG:
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, at, -1, -1,
                          "header byte %lld: an array of more than %d elements (a shape has at "
                          "most %d dimensions)", (long long)at, HEADER_MAX_ARRAY,
                          SGFP4_MODEL_MAX_RANK);
    case JSON_SCAN_NOMEM:
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "out of memory while scanning the header");
    default:
        return SGFP4_OK;
    }
}

sgfp4_status sgfp4_model_parse(sgfp4_model *m, const sgfp4_model_open_options *o,
                               sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    const uint64_t max_header = o && o->limits.max_header_bytes ? o->limits.max_header_bytes
                                                                : SGFP4_DEFAULT_MAX_HEADER;
    const uint64_t max_tensors =
        o && o->max_tensors ? o->max_tensors : SGFP4_MODEL_DEFAULT_MAX_TENSORS;
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
    /* The header is read once, into memory of its own: a mapped file may change meanwhile,
     * and the pre-scan's bounds must hold for the very bytes the parser reads. */
    char *text = n >= 2 ? malloc((size_t)n) : NULL;
    if (n >= 2 && !text)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "out of memory for the %llu-byte header", (unsigned long long)n);
    if (text)
        memcpy(text, m->base + 8, (size_t)n);
    if (n < 2 || text[0] != '{') {
        free(text);
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_JSON, 8, -1, -1,
                          "header does not start with '{'");
    }
    m->data_offset = 8 + n;
    /* Pre-scan: refuse what cannot be a header before jansson allocates for it, and make
     * sure the memory the parse and the entries need can be had (jansson hangs or crashes
     * when an allocation fails in the middle of a parse). */
    const json_scan_limits limits = {HEADER_MAX_DEPTH, HEADER_MAX_ARRAY,
                                     max_tensors < UINT64_MAX ? max_tensors + 1 : 0, true};
    json_scan scan;
    sgfp4_status s = check_scan(json_scan_run(text, (size_t)n, &limits, &scan), &scan,
                                max_tensors, diag);
    /* jansson's tree, plus the entries and the names copied while it is alive (the counts
     * are bounded by the header's length, so this does not overflow) */
    const uint64_t parse = json_scan_parse_memory(&scan);
    const uint64_t own = scan.top_keys * (sizeof(model_entry) + 2 * sizeof(size_t)) +
                         scan.string_bytes;
    const uint64_t need = parse > UINT64_MAX - own ? UINT64_MAX : parse + own;
    if (s == SGFP4_OK && !json_memory_available(need))
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                       "out of memory: parsing the %llu-byte header (%llu entries) needs "
                       "about %llu MB", (unsigned long long)n,
                       (unsigned long long)scan.top_keys,
                       (unsigned long long)(need >> 20) + 1);
    json_t *root = NULL;
    if (s == SGFP4_OK) {
        json_error_t err;
        root = json_loadb(text, (size_t)n, JSON_REJECT_DUPLICATES, &err);
        if (!root) {
            const enum json_error_code code = json_error_code(&err);
            const sgfp4_status st = code == json_error_duplicate_key  ? SGFP4_ERR_MODEL_DUPLICATE
                                    : code == json_error_out_of_memory ? SGFP4_ERR_NOMEM
                                                                       : SGFP4_ERR_MODEL_JSON;
            s = sgfp4_fail(diag, st, (int64_t)(8 + (err.position > 0 ? err.position : 0)), -1,
                           -1, "header JSON at byte %lld: %s", (long long)(8 + err.position),
                           err.text);
        }
    }
    if (s == SGFP4_OK)
        s = parse_header(m, root, &scan, max_tensors, diag);
    json_decref(root);
    json_scan_free(&scan);
    free(text);
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
