/* The top of the model layer: opening a model by path (one file, or the set an index file
 * describes) and closing it, the accessors, and per-tensor services: container open, hash
 * check, float conversion. What the readers below it share lives in their own files: one
 * file's opening in model_file.c, the lookups by name (tensors, metadata keys) in
 * model_index.c, temporary files and hashes in model_io.c.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/model_internal.h"

sgfp4_status sgfp4_model_open(const char *path, sgfp4_model **out,
                              const sgfp4_model_open_options *given, sgfp4_diag *diag)
{
    if (!out || !path)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    sgfp4_model_open_options options;
    sgfp4_status s = sgfp4_model_open_options_read(given, &options, diag);
    if (s != SGFP4_OK)
        return s;
    model_file file;
    if ((s = sgfp4_model_file_begin(path, &options, &file, diag)) != SGFP4_OK)
        return s;
    if (!file.is_index)
        return sgfp4_model_file_finish(&file, path, &options, out, diag);
    s = sgfp4_model_open_set(path, file.fd, file.size, out, &options, diag);
    close(file.fd);
    if (s == SGFP4_OK && (s = sgfp4_model_keep_file(*out, path, &file, diag)) != SGFP4_OK) {
        sgfp4_model_close(*out);
        *out = NULL;
    }
    return s;
}

void sgfp4_model_close(sgfp4_model *m)
{
    if (m && m->shards)
        sgfp4_model_set_free(m);
    else
        sgfp4_model_file_free(m);
}

size_t sgfp4_model_tensor_count(const sgfp4_model *m) { return m ? m->count : 0; }

const sgfp4_model_tensor *sgfp4_model_tensor_at(const sgfp4_model *m, size_t index)
{
    return m && index < m->count ? sgfp4_model_tensor_k(m, index) : NULL;
}

size_t sgfp4_model_metadata_count(const sgfp4_model *m) { return m ? m->meta_count : 0; }

sgfp4_status sgfp4_model_metadata_at(const sgfp4_model *m, size_t index, const char **key,
                                     const char **value)
{
    if (!m || index >= m->meta_count)
        return SGFP4_ERR_ARGUMENT;
    if (key)
        *key = m->meta_keys[index];
    if (value)
        *value = m->meta_values[index];
    return SGFP4_OK;
}

bool sgfp4_model_is_quantized(const sgfp4_model *m) { return m && m->quantized; }
uint64_t sgfp4_model_data_offset(const sgfp4_model *m) { return m ? m->data_offset : 0; }
uint64_t sgfp4_model_file_bytes(const sgfp4_model *m) { return m ? m->size : 0; }
bool sgfp4_model_was_compressed(const sgfp4_model *m) { return m && m->compressed; }

bool sgfp4_model_is_set(const sgfp4_model *m) { return m && m->shards; }

size_t sgfp4_model_shard_count(const sgfp4_model *m) { return !m ? 0 : m->shards ? m->shard_count : 1; }

const sgfp4_model *sgfp4_model_shard(const sgfp4_model *m, size_t index)
{
    if (!m)
        return NULL;
    if (!m->shards)
        return index == 0 ? m : NULL;
    return index < m->shard_count ? m->shards[index] : NULL;
}

const char *sgfp4_model_shard_name(const sgfp4_model *m, size_t index)
{
    return m && m->shards && index < m->shard_count ? m->shard_names[index] : NULL;
}

const sgfp4_model *sgfp4_model_owner(const sgfp4_model *m, const sgfp4_model_tensor *t)
{
    return m && m->shards && t && t->shard < m->shard_count ? m->shards[t->shard] : m;
}

/* "shard 'NAME' " for a tensor of a set (so messages name the file), else "". */
static void shard_prefix(const sgfp4_model *m, const sgfp4_model_tensor *t, char *buf,
                         size_t size)
{
    const char *name = t ? sgfp4_model_shard_name(m, t->shard) : NULL;
    if (name)
        snprintf(buf, size, "shard '%.80s' ", name);
    else
        buf[0] = '\0';
}

void sgfp4_model_tensor_evict(const sgfp4_model *set, const sgfp4_model_tensor *t)
{
    const sgfp4_model *m = sgfp4_model_owner(set, t);
    if (!m || !t || !m->mapping || t->nbytes == 0)
        return;
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    const uint64_t begin = t->offset / page * page;
    const uint64_t end = t->offset + t->nbytes;
    /* Whole pages, rounded outwards: a private read-only file mapping re-reads on fault. */
    (void)madvise((uint8_t *)m->mapping + begin, (size_t)(end - begin), MADV_DONTNEED);
}

sgfp4_status sgfp4_model_tensor_open(const sgfp4_model *m, const sgfp4_model_tensor *t,
                                     sgfp4_tensor **out, const sgfp4_open_options *options,
                                     sgfp4_diag *diag)
{
    if (!m || !t || !out || !t->quant)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "tensor '%s' is not a quantized tensor", t ? t->name : "(null)");
    const sgfp4_status s = sgfp4_tensor_open(t->data, (size_t)t->nbytes, t->quant->profile,
                                             t->quant->rows, t->quant->cols, out, options, diag);
    if (s != SGFP4_OK && diag) {
        /* Name the tensor and make the offset absolute in the model file. */
        char inner[sizeof diag->message];
        memcpy(inner, diag->message, sizeof inner);
        const int64_t at = diag->offset >= 0 ? (int64_t)t->offset + diag->offset : -1;
        diag->offset = at;
        char head[sizeof diag->message], where[100];
        shard_prefix(m, t, where, sizeof where);
        snprintf(head, sizeof head, "%stensor '%s' (file byte %lld): ", where, t->name,
                 (long long)at);
        const size_t used = strlen(head);
        memcpy(diag->message, head, used);
        const size_t room = sizeof diag->message - used - 1;
        const size_t take = strlen(inner) < room ? strlen(inner) : room;
        memcpy(diag->message + used, inner, take);
        diag->message[used + take] = '\0';
    }
    return s;
}

sgfp4_status sgfp4_model_tensor_verify(const sgfp4_model *m, const sgfp4_model_tensor *t,
                                       sgfp4_diag *diag)
{
    sgfp4_tensor *view = NULL;
    sgfp4_status s = sgfp4_model_tensor_open(m, t, &view, NULL, diag);
    sgfp4_tensor_close(view);
    if (s != SGFP4_OK)
        return s;
    char hex[65], where[100];
    sgfp4_sha256_hex(t->data, (size_t)t->nbytes, hex);
    shard_prefix(m, t, where, sizeof where);
    if (strcmp(hex, t->quant->sha256) != 0)
        return sgfp4_fail(diag, SGFP4_ERR_HASH_MISMATCH, (int64_t)t->offset, -1, -1,
                          "%stensor '%s' (file bytes %llu..%llu): sha256 %s, manifest says %s",
                          where, t->name, (unsigned long long)t->offset,
                          (unsigned long long)(t->offset + t->nbytes), hex, t->quant->sha256);
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_tensor_to_f32(const sgfp4_model_tensor *t, int reject_nonfinite,
                                       float *dst, size_t capacity, sgfp4_diag *diag)
{
    if (!t || !dst)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    if (!sgfp4_st_dtype_is_quantizable(t->dtype))
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_DTYPE, (int64_t)t->offset, -1, -1,
                          "tensor '%s': dtype %s cannot be converted to float32", t->name,
                          sgfp4_st_dtype_name(t->dtype));
    if (t->elements > capacity / sizeof(float))
        return sgfp4_fail(diag, SGFP4_ERR_DST_TOO_SMALL, -1, -1, -1,
                          "tensor '%s': destination too small", t->name);
    const uint8_t *p = t->data;
    const size_t n = (size_t)t->elements;
    for (size_t k = 0; k < n; k++) {
        uint32_t bits;
        switch (t->dtype) {
        case SGFP4_ST_F32:
            bits = (uint32_t)p[4 * k] | (uint32_t)p[4 * k + 1] << 8 |
                   (uint32_t)p[4 * k + 2] << 16 | (uint32_t)p[4 * k + 3] << 24;
            memcpy(&dst[k], &bits, 4);
            break;
        case SGFP4_ST_F16:
            dst[k] = sgfp4_half_to_float((uint16_t)(p[2 * k] | p[2 * k + 1] << 8));
            break;
        case SGFP4_ST_BF16:
            bits = (uint32_t)(p[2 * k] | p[2 * k + 1] << 8) << 16;
            memcpy(&dst[k], &bits, 4);
            break;
        case SGFP4_ST_F8_E4M3:
            dst[k] = sgfp4_f8e4m3_to_float(p[k]);
            break;
        default: /* F8_E5M2, the only other quantizable dtype */
            dst[k] = sgfp4_f8e5m2_to_float(p[k]);
            break;
        }
        if (reject_nonfinite && !isfinite(dst[k]))
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT,
                              (int64_t)(t->offset + k * sgfp4_st_dtype_size(t->dtype)), -1, -1,
                              "tensor '%s': element %zu (file byte %llu) is %s; SGFP4 encodes "
                              "finite values only (skip the tensor with a policy rule)",
                              t->name, k,
                              (unsigned long long)(t->offset + k * sgfp4_st_dtype_size(t->dtype)),
                              isnan(dst[k]) ? "NaN" : "infinite");
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_tensor_to_f32_check(const sgfp4_model_tensor *t, sgfp4_diag *diag)
{
    const uint8_t *p = t->data;
    for (uint64_t k = 0; k < t->elements; k++) {
        /* exponent all ones = infinity or NaN */
        if ((p[4 * k + 3] & 0x7F) == 0x7F && (p[4 * k + 2] & 0x80))
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, (int64_t)(t->offset + 4 * k), -1, -1,
                              "tensor '%s': element %llu (file byte %llu) is not finite; SGFP4 "
                              "encodes finite values only (skip the tensor with a policy rule)",
                              t->name, (unsigned long long)k,
                              (unsigned long long)(t->offset + 4 * k));
    }
    return SGFP4_OK;
}
