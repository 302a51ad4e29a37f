/* Loading a model's tensors as float32 through the library's model API: plain tensors are
 * converted (F32 / F16 / BF16), quantized tensors of a D6 model are hash-checked, strictly
 * opened and decoded. SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

static int is_float(sgfp4_st_dtype d)
{
    return d == SGFP4_ST_F32 || d == SGFP4_ST_F16 || d == SGFP4_ST_BF16;
}

/* Decodes quantized tensor t of m into out->data (its original shape's 2-D view). */
static int load_quantized(const sgfp4_model *m, const sgfp4_model_tensor *t, eval_tensor *out)
{
    sgfp4_diag diag;
    sgfp4_tensor *view = NULL;
    if (sgfp4_model_tensor_verify(m, t, &diag) != SGFP4_OK ||
        sgfp4_model_tensor_open(m, t, &view, NULL, &diag) != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", t->name, diag.message);
        return -1;
    }
    out->rows = t->quant->rows;
    out->cols = t->quant->cols;
    out->rank = (int)t->quant->original_rank;
    out->container_bytes = t->nbytes;
    const size_t n = (size_t)(out->rows * out->cols);
    out->data = malloc(n * sizeof(float));
    const int ok = out->data && sgfp4_decode(view, SGFP4_DTYPE_F32, out->data, 0,
                                             n * sizeof(float), NULL) == SGFP4_OK;
    sgfp4_tensor_close(view);
    if (!ok)
        fprintf(stderr, "sgfp4-eval: %s: cannot decode\n", t->name);
    return ok ? 0 : -1;
}

static int load_plain(const sgfp4_model_tensor *t, eval_tensor *out)
{
    sgfp4_diag diag;
    out->rank = (int)t->rank;
    out->cols = t->rank ? t->shape[t->rank - 1] : 1;
    out->rows = out->cols ? t->elements / out->cols : 0;
    out->data = malloc((size_t)(t->elements ? t->elements : 1) * sizeof(float));
    if (!out->data || sgfp4_model_tensor_to_f32(t, 1, out->data,
                                                (size_t)t->elements * sizeof(float),
                                                &diag) != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", t->name, out->data ? diag.message : "no memory");
        return -1;
    }
    return 0;
}

int eval_weights_load(const char *path, eval_weights *w, char **config_json)
{
    memset(w, 0, sizeof *w);
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_open(path, &m, NULL, &diag) != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", path, diag.message);
        return -1;
    }
    const size_t n = sgfp4_model_tensor_count(m);
    w->tensors = calloc(n ? n : 1, sizeof *w->tensors);
    int rc = w->tensors ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, i);
        if (!t->quant && !is_float(t->dtype))
            continue; /* integer tensors play no part in the forward pass */
        eval_tensor *e = &w->tensors[w->count];
        e->name = strdup(t->name);
        if (!e->name)
            rc = -1;
        else
            rc = t->quant ? load_quantized(m, t, e) : load_plain(t, e);
        w->count++;
    }
    const size_t meta = sgfp4_model_metadata_count(m);
    w->meta_keys = calloc(meta ? meta : 1, sizeof *w->meta_keys);
    w->meta_values = calloc(meta ? meta : 1, sizeof *w->meta_values);
    if (!w->meta_keys || !w->meta_values)
        rc = -1;
    for (size_t i = 0; i < meta && rc == 0; i++) {
        const char *key, *value;
        if (sgfp4_model_metadata_at(m, i, &key, &value) != 0)
            continue;
        w->meta_keys[w->meta_count] = strdup(key);
        w->meta_values[w->meta_count] = strdup(value);
        if (!w->meta_keys[w->meta_count] || !w->meta_values[w->meta_count])
            rc = -1;
        w->meta_count++;
    }
    const char *config = sgfp4_model_metadata_get(m, "config");
    *config_json = config ? strdup(config) : NULL;
    sgfp4_model_close(m);
    if (rc != 0)
        eval_weights_free(w);
    return rc;
}

/* The decimal metadata value `key` of m in *out; 0, or -1 when absent or not a number. */
static int metadata_number(const sgfp4_model *m, const char *key, uint64_t *out)
{
    const char *v = sgfp4_model_metadata_get(m, key);
    char *end;
    if (!v || !*v || *v == '-')
        return -1;
    errno = 0;
    *out = strtoull(v, &end, 10);
    return *end || errno ? -1 : 0;
}

int eval_importance_load(const char *path, uint64_t seed, int sequences, eval_weights *out)
{
    memset(out, 0, sizeof *out);
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_open(path, &m, NULL, &diag) != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", path, diag.message);
        return -1;
    }
    const char *source = sgfp4_model_metadata_get(m, "calibration.source");
    uint64_t calib_seed = 0, calib_sequences = 0;
    int rc = 0;
    if (source && strcmp(source, "sgfp4-eval") == 0) {
        if (metadata_number(m, "calibration.seed", &calib_seed) != 0 ||
            metadata_number(m, "calibration.sequences", &calib_sequences) != 0) {
            fprintf(stderr, "sgfp4-eval: %s: calibration.seed or .sequences is not a number\n",
                    path);
            rc = -1;
        } else if (eval_streams_overlap(calib_seed, calib_sequences, seed,
                                        (uint64_t)sequences)) {
            fprintf(stderr,
                    "sgfp4-eval: %s was calibrated on text sampled with seed %llu, which "
                    "shares random streams with the evaluation's (seed %llu): choose another "
                    "--seed or --calib-seed\n",
                    path, (unsigned long long)calib_seed, (unsigned long long)seed);
            rc = -1;
        }
    }
    sgfp4_model_close(m);
    char *unused = NULL;
    if (rc == 0)
        rc = eval_weights_load(path, out, &unused);
    free(unused);
    return rc;
}

int eval_weights_copy(const eval_weights *src, eval_weights *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->tensors = calloc(src->count ? src->count : 1, sizeof *dst->tensors);
    if (!dst->tensors)
        return -1;
    for (size_t i = 0; i < src->count; i++) {
        const eval_tensor *s = &src->tensors[i];
        eval_tensor *d = &dst->tensors[i];
        *d = *s;
        d->name = strdup(s->name);
        d->data = malloc((size_t)(s->rows * s->cols) * sizeof(float) + 1);
        dst->count++;
        if (!d->name || !d->data) {
            eval_weights_free(dst);
            return -1;
        }
        memcpy(d->data, s->data, (size_t)(s->rows * s->cols) * sizeof(float));
    }
    return 0;
}

void eval_weights_free(eval_weights *w)
{
    for (size_t i = 0; i < w->count; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].data);
    }
    for (size_t i = 0; i < w->meta_count; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->meta_keys);
    free(w->meta_values);
    free(w->tensors);
    memset(w, 0, sizeof *w);
}

eval_tensor *eval_weights_find(const eval_weights *w, const char *name)
{
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return &w->tensors[i];
    return NULL;
}

const char *eval_weights_metadata(const eval_weights *w, const char *key)
{
    for (size_t i = 0; i < w->meta_count; i++)
        if (strcmp(w->meta_keys[i], key) == 0)
            return w->meta_values[i];
    return NULL;
}

const eval_tensor *eval_hessian_find(const eval_weights *importance, const char *name)
{
    char key[1024];
    if (snprintf(key, sizeof key, "%s:hessian", name) >= (int)sizeof key)
        return NULL;
    const eval_tensor *t = eval_weights_find(importance, key);
    const char *alias = t ? NULL : eval_weights_metadata(importance, key);
    return t ? t : alias ? eval_weights_find(importance, alias) : NULL;
}
