/* Parsing and checking the sgfp4 manifest (DECISIONS D6) of a quantized model.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/json_scan.h"
#include "model/model_internal.h"

/* Fails with SGFP4_ERR_MODEL_MANIFEST at file byte `offset`; the message starts with the
 * entry's name, the first argument after the format. */
#define MANIFEST_FAIL(diag, offset, ...)                                                       \
    sgfp4_fail(diag, SGFP4_ERR_MODEL_MANIFEST, offset, -1, -1, "manifest entry '%s': " __VA_ARGS__)

static bool is_sha256_hex(const char *s)
{
    if (strlen(s) != 64)
        return false;
    for (int k = 0; k < 64; k++)
        if (!((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'f')))
            return false;
    return true;
}

static bool positive_int(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static sgfp4_status parse_entry(sgfp4_model *m, const char *name, json_t *obj, sgfp4_diag *diag)
{
    int64_t offset = 8;
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(m, name);
    if (!t)
        return MANIFEST_FAIL(diag, offset, "no tensor of that name in the file", name);
    model_entry *e = (model_entry *)t; /* pub is the first member of model_entry */
    offset = (int64_t)t->offset;
    if (!json_is_object(obj))
        return MANIFEST_FAIL(diag, offset, "not a JSON object", name);
    const char *key;
    json_t *value;
    static const char *const known[] = {"profile", "shape", "original_shape", "dtype",
                                        "sha256",  "encoder", NULL};
    json_object_foreach(obj, key, value) {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return MANIFEST_FAIL(diag, offset, "unknown key '%s'", name, key);
    }
    if (t->dtype != SGFP4_ST_U8 || t->rank != 1)
        return MANIFEST_FAIL(diag, offset, "the tensor is not stored as U8 [nbytes]", name);
    sgfp4_model_quant *q = &e->quant;
    const char *profile = json_string_value(json_object_get(obj, "profile"));
    if (!profile || (strcmp(profile, "v1") != 0 && strcmp(profile, "v2") != 0))
        return MANIFEST_FAIL(diag, offset, "profile is not \"v1\" or \"v2\"", name);
    q->profile = profile[1] == '1' ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
    const json_t *shape = json_object_get(obj, "shape");
    if (!json_is_array(shape) || json_array_size(shape) != 2 ||
        !positive_int(json_array_get(shape, 0), &q->rows) ||
        !positive_int(json_array_get(shape, 1), &q->cols))
        return MANIFEST_FAIL(diag, offset, "shape is not [O, I] of positive integers", name);
    const json_t *orig = json_object_get(obj, "original_shape");
    if (!json_is_array(orig) || json_array_size(orig) > SGFP4_MODEL_MAX_RANK)
        return MANIFEST_FAIL(diag, offset, "original_shape is not an array of rank <= %d", name,
                             SGFP4_MODEL_MAX_RANK);
    q->original_rank = json_array_size(orig);
    uint64_t product = 1;
    for (size_t d = 0; d < q->original_rank; d++) {
        if (!positive_int(json_array_get(orig, d), &e->original_shape[d]) ||
            (product && e->original_shape[d] > UINT64_MAX / product))
            return MANIFEST_FAIL(diag, offset,
                                 "original_shape[%zu] is not a positive integer (or the product "
                                 "overflows)", name, d);
        product *= e->original_shape[d];
    }
    q->original_shape = e->original_shape;
    /* D6: [prod(leading dims), last dim]; a rank-0 or rank-1 tensor is [1, n]. */
    const uint64_t last = q->original_rank ? e->original_shape[q->original_rank - 1] : 1;
    if (q->rows > UINT64_MAX / q->cols || q->rows * q->cols != product || q->cols != last)
        return MANIFEST_FAIL(diag, offset,
                             "shape [%llu, %llu] is not [prod(leading dims), last dim] of "
                             "original_shape", name, (unsigned long long)q->rows,
                             (unsigned long long)q->cols);
    const char *dtype = json_string_value(json_object_get(obj, "dtype"));
    if (!dtype || sgfp4_st_dtype_parse(dtype, &q->source_dtype) ||
        !sgfp4_st_dtype_is_quantizable(q->source_dtype))
        return MANIFEST_FAIL(diag, offset,
                             "dtype is not \"BF16\", \"F16\", \"F32\", \"F8_E4M3\" or \"F8_E5M2\"",
                             name);
    const char *sha = json_string_value(json_object_get(obj, "sha256"));
    if (!sha || !is_sha256_hex(sha))
        return MANIFEST_FAIL(diag, offset, "sha256 is not 64 lowercase hex digits", name);
    memcpy(q->sha256, sha, 65);
    const json_t *enc = json_object_get(obj, "encoder");
    if (!json_is_object(enc))
        return MANIFEST_FAIL(diag, offset, "encoder is not a JSON object", name);
    e->encoder_json = json_dumps(enc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!e->encoder_json)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    q->encoder_json = e->encoder_json;
    e->pub.quant = q;
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_parse_manifest(sgfp4_model *m, const char *text, sgfp4_diag *diag)
{
    /* The same memory check as the header's before jansson parses the text (jansson does not
     * fail cleanly when an allocation fails in the middle of a parse). */
    const size_t length = strlen(text);
    json_scan scan;
    const json_scan_result scanned = json_scan_run(text, length, NULL, &scan);
    if (scanned == JSON_SCAN_TOO_DEEP)
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_MANIFEST, 8, -1, -1,
                          "__metadata__['sgfp4'] nests deeper than %d levels (character %zu)",
                          JSON_SCAN_MAX_DEPTH, scan.stop);
    if (!json_memory_available(json_scan_parse_memory(&scan)))
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "out of memory: parsing the %zu-byte manifest needs about %llu MB",
                          length, (unsigned long long)(json_scan_parse_memory(&scan) >> 20) + 1);
    json_error_t err;
    json_t *root = json_loadb(text, length, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return sgfp4_fail(diag,
                          json_error_code(&err) == json_error_out_of_memory
                              ? SGFP4_ERR_NOMEM
                              : SGFP4_ERR_MODEL_MANIFEST,
                          8, -1, -1, "__metadata__['sgfp4'] is not valid JSON (character %d: %s)",
                          err.position, err.text);
    sgfp4_status s = SGFP4_OK;
    const json_t *format = json_object_get(root, "format");
    const json_t *version = json_object_get(root, "version");
    json_t *tensors = json_object_get(root, "tensors");
    if (!json_is_object(root) || !json_is_string(format) ||
        strcmp(json_string_value(format), "sgfp4-manifest") != 0)
        s = sgfp4_fail(diag, SGFP4_ERR_MODEL_MANIFEST, 8, -1, -1,
                       "manifest: \"format\" is not \"sgfp4-manifest\"");
    else if (!json_is_integer(version) || json_integer_value(version) != 1)
        s = sgfp4_fail(diag, SGFP4_ERR_MODEL_MANIFEST, 8, -1, -1,
                       "manifest: \"version\" is not 1 (this reader knows version 1 only)");
    else if (!json_is_object(tensors))
        s = sgfp4_fail(diag, SGFP4_ERR_MODEL_MANIFEST, 8, -1, -1,
                       "manifest: \"tensors\" is not a JSON object");
    else {
        const char *name;
        json_t *value;
        json_object_foreach(tensors, name, value) {
            if ((s = parse_entry(m, name, value, diag)) != SGFP4_OK)
                break;
        }
    }
    json_decref(root);
    return s;
}
