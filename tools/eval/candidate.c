/* Candidates: the float32 model with a set of its tensors quantized, by the library (encode,
 * strict open, decode), by a baseline reimplementation, or read from a quantized model file.
 * The set is what a model policy decides (the library's default policy unless told), so a
 * table compares every candidate on the same tensors.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

static int parse_value(eval_candidate *c, const char *key, const char *value)
{
    char *end = NULL;
    if (strcmp(key, "label") == 0) {
        snprintf(c->label, sizeof c->label, "%s", value);
        return 0;
    }
    if (c->kind == KIND_SGFP4) {
        if (strcmp(key, "bpw") == 0) {
            c->bpw = strtod(value, &end);
            return *end || !(c->bpw > 0 && c->bpw <= 64) ? -1 : 0;
        }
        if (strcmp(key, "metric") == 0) {
            c->metric = strcmp(value, "sse") == 0 ? SGFP4_METRIC_SSE
                        : strcmp(value, "row") == 0 ? SGFP4_METRIC_ROW_RELATIVE
                                                    : -2;
            return c->metric == -2 ? -1 : 0;
        }
        if (strcmp(key, "fit") == 0) {
            c->fit = strcmp(value, "best") == 0        ? SGFP4_FIT_BEST
                     : strcmp(value, "fast") == 0      ? SGFP4_FIT_FAST
                     : strcmp(value, "reference") == 0 ? SGFP4_FIT_REFERENCE
                                                       : -2;
            return c->fit == -2 ? -1 : 0;
        }
        if (strcmp(key, "profile") == 0) {
            c->profile = strcmp(value, "v1") == 0 ? SGFP4_PROFILE_V1
                         : strcmp(value, "v2") == 0 ? SGFP4_PROFILE_V2
                                                    : -2;
            return c->profile == -2 ? -1 : 0;
        }
        if (strcmp(key, "policy") == 0) {
            c->policy = strcmp(value, "rate") == 0 ? SGFP4_POLICY_RATE
                        : strcmp(value, "threshold") == 0 ? SGFP4_POLICY_THRESHOLD
                                                          : -2;
            return c->policy == -2 ? -1 : 0;
        }
        if (strcmp(key, "threshold") == 0) {
            c->threshold = strtod(value, &end);
            return *end || !(c->threshold > 0) ? -1 : 0;
        }
        if (strcmp(key, "importance") == 0) {
            snprintf(c->importance, sizeof c->importance, "%s", value);
            return 0;
        }
        if (strcmp(key, "equal") == 0) {
            /* q4_0, or affineB: B-bit affine with groups of 64 */
            c->equal = 1;
            if (strcmp(value, "q4_0") == 0) {
                c->like = (baseline){BASELINE_Q4_0, 4, 32};
                return 0;
            }
            const long b = strncmp(value, "affine", 6) == 0 ? strtol(value + 6, &end, 10) : 0;
            c->like = (baseline){BASELINE_AFFINE, (int)b, 64};
            return b >= 1 && b <= 8 && !*end ? 0 : -1;
        }
        if (strcmp(key, "use") == 0) {
            c->importance_use = strcmp(value, "columns") == 0 ? 1
                                : strcmp(value, "rows") == 0  ? 2
                                : strcmp(value, "both") == 0  ? 3
                                                              : -1;
            return c->importance_use < 0 ? -1 : 0;
        }
    }
    if ((c->kind == KIND_Q4_0 || c->kind == KIND_AFFINE) && strcmp(key, "gptq") == 0) {
        snprintf(c->gptq, sizeof c->gptq, "%s", value);
        return 0;
    }
    if (c->kind == KIND_AFFINE) {
        const long v = strtol(value, &end, 10);
        if (strcmp(key, "bits") == 0 && !*end && v >= 1 && v <= 8) {
            c->bits = (int)v;
            return 0;
        }
        if (strcmp(key, "group") == 0 && !*end && v >= 2 && v <= 4096) {
            c->group = (int)v;
            return 0;
        }
    }
    return -1;
}

int eval_candidate_parse(const char *spec, eval_candidate *c)
{
    memset(c, 0, sizeof *c);
    c->metric = c->fit = c->profile = c->policy = c->effort = -1;
    c->bits = 4;
    c->group = 64;
    c->importance_use = 3;
    const char *colon = strchr(spec, ':');
    const size_t kind_len = colon ? (size_t)(colon - spec) : strlen(spec);
    static const struct { const char *name; eval_kind kind; } kinds[] = {
        {"f32", KIND_F32}, {"sgfp4", KIND_SGFP4}, {"q4_0", KIND_Q4_0},
        {"affine", KIND_AFFINE}, {"file", KIND_FILE}};
    int found = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strlen(kinds[k].name) == kind_len && strncmp(spec, kinds[k].name, kind_len) == 0) {
            c->kind = kinds[k].kind;
            found = 1;
        }
    if (!found)
        return -1;
    if (c->kind == KIND_FILE) {
        if (!colon || !colon[1])
            return -1;
        snprintf(c->path, sizeof c->path, "%s", colon + 1);
    } else if (colon) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", colon + 1);
        for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
             item = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(item, '=');
            if (!eq)
                return -1;
            *eq = 0;
            if (parse_value(c, item, eq + 1) != 0)
                return -1;
        }
    }
    if (!c->label[0])
        snprintf(c->label, sizeof c->label, "%s", spec);
    return 0;
}

/* The policy the set comes from: the default, a policy file, or NULL for "all". */
static int open_policy(const char *selection, sgfp4_model_policy **out)
{
    *out = NULL;
    if (strcmp(selection, "all") == 0)
        return 0;
    if (strcmp(selection, "default") == 0)
        return sgfp4_model_policy_create(out) == SGFP4_OK ? 0 : -1;
    FILE *f = fopen(selection, "rb");
    char *text = malloc(1 << 20);
    const size_t n = f && text ? fread(text, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    sgfp4_diag diag;
    const int ok = text && n > 0 && sgfp4_model_policy_parse(text, n, out, &diag) == SGFP4_OK;
    if (!ok)
        fprintf(stderr, "sgfp4-eval: policy %s: %s\n", selection,
                text && n ? diag.message : "cannot read");
    free(text);
    return ok ? 0 : -1;
}

/* Encodes t with o through the library and replaces its values by the decoded ones. */
static int quantize_sgfp4(eval_tensor *t, const sgfp4_encode_options *o, double *bits)
{
    void *bytes = NULL;
    size_t size = 0;
    sgfp4_tensor *view = NULL;
    sgfp4_status s = sgfp4_encode_alloc(t->data, t->rows, t->cols, 0, &bytes, &size, o, NULL);
    if (s == SGFP4_OK)
        s = sgfp4_tensor_open(bytes, size, o->profile, t->rows, t->cols, &view, NULL, NULL);
    if (s == SGFP4_OK)
        s = sgfp4_decode(view, SGFP4_DTYPE_F32, t->data, 0,
                         (size_t)(t->rows * t->cols) * sizeof(float), NULL);
    sgfp4_tensor_close(view);
    sgfp4_free(bytes);
    if (s != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", t->name, sgfp4_status_str(s));
        return -1;
    }
    *bits += (double)size * 8.0;
    return 0;
}

static int is_attention(const char *name) { return strstr(name, "attention.w") != NULL; }

/* The importance vector of tensor t in an importance file: its columns (key NAME) or rows
 * (key NAME:rows) into *out, NULL when the file has none. -1 (said on stderr, naming the
 * file and the tensor) when the file's vector has another length than t's columns or rows. */
static int importance_of(const eval_weights *importance, const char *file, const eval_tensor *t,
                         int rows, const float **out)
{
    char key[512];
    snprintf(key, sizeof key, rows ? "%s:rows" : "%s", t->name);
    const eval_tensor *v = importance ? eval_weights_find(importance, key) : NULL;
    const uint64_t want = rows ? t->rows : t->cols;
    *out = NULL;
    if (!v)
        return 0;
    if (v->rows * v->cols != want) {
        fprintf(stderr, "sgfp4-eval: %s: importance '%s': %llu values for %llu %s of tensor "
                        "'%s'\n", file, key, (unsigned long long)(v->rows * v->cols),
                (unsigned long long)want, rows ? "rows" : "columns", t->name);
        return -1;
    }
    *out = v->data;
    return 0;
}

/* The second-order prediction of the KL divergence that q's errors cause: 1/2 of the
 * Fisher quadratic form, rows x columns factors of the importance file (0 when it has not
 * both for r). -1 for a vector of the wrong length (said). */
static int predict_kl(const eval_weights *fisher, const char *file, const eval_tensor *r,
                      const eval_tensor *q, double *kl)
{
    const float *cols = NULL, *rows = NULL;
    *kl = 0;
    if (!fisher)
        return 0;
    if (importance_of(fisher, file, r, 0, &cols) != 0 ||
        importance_of(fisher, file, r, 1, &rows) != 0)
        return -1;
    if (!cols || !rows)
        return 0;
    double sum = 0;
    for (uint64_t i = 0; i < r->rows; i++)
        for (uint64_t j = 0; j < r->cols; j++) {
            const double e = (double)r->data[i * r->cols + j] - q->data[i * r->cols + j];
            sum += (double)rows[i] * cols[j] * e * e;
        }
    *kl = sum / 2;
    return 0;
}

/* Adds the error of q (quantized) against r (float32) to the totals. */
static int add_error(const eval_tensor *r, const eval_tensor *q, const eval_set *set,
                     eval_quantized *out)
{
    double kl;
    if (predict_kl(set->fisher, set->fisher_path, r, q, &kl) != 0)
        return -1;
    out->predicted_kl += kl;
    if (is_attention(r->name)) {
        double *grown = realloc(out->attention_row_error,
                                (out->attention_rows + r->rows) * sizeof *grown);
        if (!grown)
            return -1;
        out->attention_row_error = grown;
    }
    for (uint64_t i = 0; i < r->rows; i++) {
        double sse = 0, norm = 0;
        for (uint64_t j = 0; j < r->cols; j++) {
            const double w = r->data[i * r->cols + j], e = w - q->data[i * r->cols + j];
            sse += e * e;
            norm += w * w;
        }
        out->sse += sse;
        out->norm += norm;
        if (is_attention(r->name))
            out->attention_row_error[out->attention_rows++] = norm > 0 ? sqrt(sse / norm) : 0;
    }
    out->tensors++;
    out->weights_in_set += r->rows * r->cols;
    return 0;
}

static void apply_spec(const eval_candidate *c, sgfp4_encode_options *o)
{
    if (c->bpw > 0)
        o->target_bpw = c->bpw;
    if (c->metric >= 0)
        o->metric = (sgfp4_error_metric)c->metric;
    if (c->fit >= 0)
        o->fit = (sgfp4_fit)c->fit;
    if (c->profile >= 0)
        o->profile = (sgfp4_profile)c->profile;
    if (c->policy >= 0)
        o->policy = (sgfp4_policy)c->policy;
    if (c->threshold > 0)
        o->threshold = c->threshold;
    o->threads = 1;
}

/* GPTQ's factors of the last Hessians met, so that matrices that share an input (and sit
 * together in a model) share one factorization. */
#define FACTORS_KEPT 8
typedef struct factor_cache {
    const eval_tensor *hessian[FACTORS_KEPT];
    gptq_factor factor[FACTORS_KEPT];
    size_t next; /* the slot to replace next, round robin */
} factor_cache;

/* A baseline on tensor t, with GPTQ where `calibration` is given; the bits it used, or -1. */
static double quantize_baseline(const baseline *b, eval_tensor *t,
                                const eval_weights *calibration, const char *path,
                                factor_cache *cache)
{
    if (!calibration)
        return baseline_quantize(b, t->data, t->rows, t->cols);
    const eval_tensor *h = eval_hessian_find(calibration, t->name);
    if (!h || h->rows != t->cols || h->cols != t->cols) {
        fprintf(stderr, "sgfp4-eval: %s has no %llu x %llu Hessian for %s\n", path,
                (unsigned long long)t->cols, (unsigned long long)t->cols, t->name);
        return -1;
    }
    size_t k = 0;
    while (k < FACTORS_KEPT && cache->hessian[k] != h)
        k++;
    if (k == FACTORS_KEPT) {
        k = cache->next;
        cache->next = (k + 1) % FACTORS_KEPT;
        gptq_factor_free(&cache->factor[k]);
        cache->hessian[k] = NULL;
        if (gptq_factor_create(h->data, h->rows, 0.01, h->name, &cache->factor[k]) != 0)
            return -1;
        cache->hessian[k] = h;
    }
    return gptq_quantize(b, &cache->factor[k], t->data, t->rows, t->cols);
}

/* Quantizes the set's tensors of out->weights in place. */
static int build_in_process(const eval_candidate *c, const eval_set *set,
                            const eval_weights *reference, eval_quantized *out)
{
    sgfp4_model *m = NULL;
    sgfp4_model_policy *policy = NULL;
    eval_weights importance = {0}, calibration = {0};
    factor_cache *cache = calloc(1, sizeof *cache);
    size_t quantized = 0, weighted = 0; /* with an importance file: how many it weighted */
    sgfp4_diag diag;
    if (!cache)
        return -1;
    if (sgfp4_model_open(set->source_path, &m, NULL, &diag) != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", set->source_path, diag.message);
        free(cache);
        return -1;
    }
    int rc = open_policy(set->selection, &policy);
    if (rc == 0 && c->importance[0])
        rc = eval_importance_load(c->importance, set->seed, set->sequences, &importance);
    if (rc == 0 && c->gptq[0])
        rc = eval_importance_load(c->gptq, set->seed, set->sequences, &calibration);
    const baseline b = {c->kind == KIND_Q4_0 ? BASELINE_Q4_0 : BASELINE_AFFINE, c->bits,
                        c->group};
    for (size_t i = 0; rc == 0 && i < sgfp4_model_tensor_count(m); i++) {
        const sgfp4_model_tensor *mt = sgfp4_model_tensor_at(m, i);
        eval_tensor *t = eval_weights_find(&out->weights, mt->name);
        if (!t)
            continue;
        sgfp4_model_decision d;
        sgfp4_model_decision_init(&d);
        sgfp4_encode_options eo;
        sgfp4_encode_options_init(&eo);
        if (policy) {
            sgfp4_model_policy_decide(policy, mt, &d);
            sgfp4_model_decision_options(policy, &d, &eo);
        } else {
            memset(&d, 0, sizeof d);
            d.quantize = mt->rank == 2;
        }
        if (!d.quantize)
            continue;
        if (c->kind == KIND_SGFP4) {
            apply_spec(c, &eo);
            if (c->equal)
                eo.target_bpw =
                    baseline_bits(&c->like, t->rows, t->cols) / (double)(t->rows * t->cols);
            const float *cols = NULL, *rows = NULL;
            if (c->importance[0] &&
                (importance_of(&importance, c->importance, t, 0, &cols) != 0 ||
                 importance_of(&importance, c->importance, t, 1, &rows) != 0)) {
                rc = -1;
                break;
            }
            eo.column_importance = c->importance_use & 1 ? cols : NULL;
            eo.row_importance = c->importance_use & 2 ? rows : NULL;
            quantized++;
            weighted += eo.column_importance || eo.row_importance;
            rc = quantize_sgfp4(t, &eo, &out->bits);
        } else if (c->kind == KIND_Q4_0 || c->kind == KIND_AFFINE) {
            const double bits = quantize_baseline(&b, t, c->gptq[0] ? &calibration : NULL,
                                                  c->gptq, cache);
            rc = bits < 0 ? -1 : 0;
            out->bits += bits;
        } else {
            out->bits += (double)(t->rows * t->cols) * 32.0;
        }
        if (rc == 0)
            rc = add_error(eval_weights_find(reference, t->name), t, set, out);
    }
    if (rc == 0 && c->importance[0] && weighted < quantized)
        fprintf(stderr, "sgfp4-eval: warning: %s: importance %s has the vectors it uses (%s) for "
                        "%zu of the %zu quantized tensors: the other %zu were encoded without "
                        "it\n", c->label, c->importance,
                c->importance_use == 3 ? "columns or rows"
                : c->importance_use == 1 ? "columns" : "rows",
                weighted, quantized, quantized - weighted);
    else if (rc == 0 && c->importance[0])
        fprintf(stderr, "sgfp4-eval: %s: importance %s: vectors for all %zu quantized tensors\n",
                c->label, c->importance, quantized);
    eval_weights_free(&importance);
    eval_weights_free(&calibration);
    for (size_t k = 0; k < FACTORS_KEPT; k++)
        gptq_factor_free(&cache->factor[k]);
    free(cache);
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(m);
    return rc;
}

/* A quantized model file: its quantized tensors form the set. */
static int build_from_file(const eval_candidate *c, const eval_set *set,
                           const eval_weights *reference, eval_quantized *out)
{
    char *unused = NULL;
    if (eval_weights_load(c->path, &out->weights, &unused) != 0)
        return -1;
    free(unused);
    for (size_t i = 0; i < out->weights.count; i++) {
        const eval_tensor *t = &out->weights.tensors[i];
        const eval_tensor *r = eval_weights_find(reference, t->name);
        if (!r || r->rows * r->cols != t->rows * t->cols) {
            fprintf(stderr, "sgfp4-eval: %s: %s does not match the float32 model\n", c->path,
                    t->name);
            return -1;
        }
        if (t->container_bytes == 0)
            continue;
        out->bits += (double)t->container_bytes * 8.0;
        if (add_error(r, t, set, out) != 0)
            return -1;
    }
    return 0;
}

int eval_candidate_build(const eval_candidate *c, const eval_set *set,
                         const eval_weights *reference, eval_quantized *out)
{
    memset(out, 0, sizeof *out);
    int rc;
    if (c->kind == KIND_FILE) {
        rc = build_from_file(c, set, reference, out);
    } else {
        rc = eval_weights_copy(reference, &out->weights);
        if (rc == 0)
            rc = build_in_process(c, set, reference, out);
    }
    if (rc != 0)
        eval_quantized_free(out);
    return rc;
}

void eval_quantized_free(eval_quantized *q)
{
    eval_weights_free(&q->weights);
    free(q->attention_row_error);
    memset(q, 0, sizeof *q);
}
