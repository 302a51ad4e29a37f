/* Input Hessians from an importance file for a whole-model encode (model_internal.h): found
 * by name or metadata alias, read one at a time (a little-endian F32 tensor straight from the
 * mapping, any other float dtype through a float32 copy), prepared, and its pages released.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static const char *metadata_value(const sgfp4_model *m, const char *key)
{
    for (size_t k = 0; k < m->meta_count; k++)
        if (strcmp(m->meta_keys[k], key) == 0)
            return m->meta_values[k];
    return NULL;
}

static bool f32_in_place(const sgfp4_model_tensor *v)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return v->dtype == SGFP4_ST_F32 && first == 1 && (uintptr_t)v->data % sizeof(float) == 0;
}

/* Prepares the Hessian stored in tensor v (checked: [cols, cols]) into *out. */
static sgfp4_status prepare(const sgfp4_model *importance, const sgfp4_model_tensor *v,
                            const char *key, uint64_t cols, unsigned threads,
                            sgfp4_hessian **out, sgfp4_diag *diag)
{
    const float *h = NULL;
    float *owned = NULL;
    sgfp4_status s = SGFP4_OK;
    if (f32_in_place(v)) {
        h = (const float *)(const void *)v->data;
    } else if (cols > SIZE_MAX / sizeof(float) / cols ||
               !(owned = malloc((size_t)(cols * cols) * sizeof(float)))) {
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, (int64_t)v->offset, -1, -1,
                          "importance '%s': out of memory for its float32 copy", key);
    } else {
        s = sgfp4_model_tensor_to_f32(v, 0, owned, (size_t)(cols * cols) * sizeof(float), diag);
        h = owned;
    }
    sgfp4_diag inner;
    if (s == SGFP4_OK) {
        sgfp4_hessian_options o;
        sgfp4_hessian_options_init(&o);
        o.threads = threads;
        s = sgfp4_hessian_create(h, cols, 0, &o, out, &inner);
        if (s != SGFP4_OK)
            sgfp4_fail(diag, s, (int64_t)v->offset, -1, -1, "importance '%s': %s", key,
                       inner.message);
    }
    free(owned);
    sgfp4_model_tensor_evict(importance, v);
    return s;
}

sgfp4_status sgfp4_importance_hessian(const sgfp4_model *importance, const sgfp4_model_tensor *t,
                                      uint64_t cols, unsigned threads, hessian_cache *cache,
                                      const sgfp4_hessian **out, sgfp4_diag *diag)
{
    *out = NULL;
    char key[1024];
    if (snprintf(key, sizeof key, "%s:hessian", t->name) >= (int)sizeof key)
        return SGFP4_OK;
    const sgfp4_model_tensor *v = sgfp4_model_tensor_find(importance, key);
    if (!v) {
        const char *target = metadata_value(importance, key);
        if (!target)
            return SGFP4_OK;
        v = sgfp4_model_tensor_find(importance, target);
        if (!v)
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                              "importance: the metadata alias '%s' names '%s', which is not a "
                              "tensor of the file",
                              key, target);
        snprintf(key, sizeof key, "%s", target);
    }
    if (v->rank != 2 || v->shape[0] != cols || v->shape[1] != cols)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, (int64_t)v->offset, -1, -1,
                          "importance '%s': a Hessian of %llu elements for tensor '%s' of %llu "
                          "columns (want [%llu, %llu])",
                          key, (unsigned long long)v->elements, t->name,
                          (unsigned long long)cols, (unsigned long long)cols,
                          (unsigned long long)cols);
    for (unsigned k = 0; k < 2; k++)
        if (cache->source[k] == v) {
            cache->newer = k;
            *out = cache->prepared[k];
            return SGFP4_OK;
        }
    const unsigned slot = 1u - cache->newer; /* the older one goes */
    sgfp4_hessian_free(cache->prepared[slot]);
    cache->prepared[slot] = NULL;
    cache->source[slot] = NULL;
    const sgfp4_status s =
        prepare(importance, v, key, cols, threads, &cache->prepared[slot], diag);
    if (s != SGFP4_OK)
        return s;
    cache->source[slot] = v;
    cache->newer = slot;
    *out = cache->prepared[slot];
    return SGFP4_OK;
}

void sgfp4_hessian_cache_free(hessian_cache *cache)
{
    for (unsigned k = 0; k < 2; k++) {
        sgfp4_hessian_free(cache->prepared[k]);
        cache->prepared[k] = NULL;
        cache->source[k] = NULL;
    }
}
