/* sgfp4 info MODEL.safetensors[.zst] [--json] [--against SOURCE]: one row per tensor (name,
 * shape, profile or dtype, bits per weight, bytes; with --against the rel-L2 error and SNR of
 * each float tensor, decoded when quantized, against its namesake in SOURCE, and whether
 * each other tensor has the same bytes; for a model not quantized yet, what encode would
 * do), a memory table per tensor class, and a summary of the sizes. A SOURCE that does not
 * hold the same tensors is refused before anything is printed.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* ---- --against REF: every tensor against the tensor of the same name in REF ---- */

/* Whether t holds numbers compared as float32: a quantized tensor (decoded) or a F32, F16,
 * BF16, F8_E4M3 or F8_E5M2 one (converted exactly); any other is compared byte for byte. */
static bool is_float(const sgfp4_model_tensor *t)
{
    return t->quant || sgfp4_st_dtype_is_quantizable(t->dtype);
}

/* The shape a tensor stands for: a quantized tensor's original shape, else its own. */
static void logical_shape(const sgfp4_model_tensor *t, const uint64_t **shape, size_t *rank)
{
    *shape = t->quant ? t->quant->original_shape : t->shape;
    *rank = t->quant ? t->quant->original_rank : t->rank;
}

/* REF matches MODEL when both hold the same tensor names, each pair of the same shape and
 * both float (quantized or a float dtype) or both of the same other dtype. Said before
 * anything is printed; false when it does not match (reported). */
static bool reference_matches(const cli_args *a, const sgfp4_model *m, const sgfp4_model *ref)
{
    const size_t n = sgfp4_model_tensor_count(m);
    for (size_t k = 0; k < n; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_tensor *r = sgfp4_model_tensor_find(ref, t->name);
        if (!r)
            return cli_error(a->command, "%s does not match %s: it has no tensor '%s'",
                             a->against, a->in, t->name),
                   false;
        const uint64_t *ts, *rs;
        size_t tr, rr;
        logical_shape(t, &ts, &tr);
        logical_shape(r, &rs, &rr);
        char tt[96], rt[96];
        cli_shape_text(tt, sizeof tt, ts, tr);
        cli_shape_text(rt, sizeof rt, rs, rr);
        if (strcmp(tt, rt) != 0)
            return cli_error(a->command, "%s does not match %s: tensor '%s' is %s there, %s here",
                             a->against, a->in, t->name, rt, tt),
                   false;
        if (is_float(t) != is_float(r) || (!is_float(t) && t->dtype != r->dtype))
            return cli_error(a->command, "%s does not match %s: tensor '%s' is %s there, %s here",
                             a->against, a->in, t->name,
                             r->quant ? "quantized" : sgfp4_st_dtype_name(r->dtype),
                             t->quant ? "quantized" : sgfp4_st_dtype_name(t->dtype)),
                   false;
    }
    if (sgfp4_model_tensor_count(ref) != n) { /* names are unique: REF has others too */
        for (size_t k = 0; k < sgfp4_model_tensor_count(ref); k++) {
            const sgfp4_model_tensor *r = sgfp4_model_tensor_at(ref, k);
            if (!sgfp4_model_tensor_find(m, r->name))
                return cli_error(a->command, "%s does not match %s: it has tensor '%s', which "
                                 "%s has not", a->against, a->in, r->name, a->in),
                       false;
        }
    }
    return true;
}

/* A float tensor of `m` as float32 (a quantized one decoded, a float dtype converted):
 * malloc'ed, or NULL (reported). */
static float *as_f32(const cli_args *a, const sgfp4_model *m, const sgfp4_model_tensor *t,
                     const char *file)
{
    const uint64_t n = t->quant ? t->quant->rows * t->quant->cols : t->elements;
    float *w = n <= SIZE_MAX / sizeof(float) ? malloc((size_t)n * sizeof(float) + 1) : NULL;
    sgfp4_diag diag;
    sgfp4_tensor *view = NULL;
    sgfp4_status s = SGFP4_ERR_NOMEM;
    if (!w) {
        snprintf(diag.message, sizeof diag.message, "out of memory");
    } else if (!t->quant) {
        s = sgfp4_model_tensor_to_f32(t, 0, w, (size_t)n * sizeof(float), &diag);
    } else if ((s = sgfp4_model_tensor_open(m, t, &view, NULL, &diag)) == SGFP4_OK) {
        const sgfp4_decode_options d = cli_decode_options(a);
        if ((s = sgfp4_decode(view, SGFP4_DTYPE_F32, w, 0, (size_t)n * sizeof(float), &d)))
            snprintf(diag.message, sizeof diag.message, "cannot decode: %s",
                     sgfp4_status_str(s));
    }
    sgfp4_tensor_close(view);
    if (s == SGFP4_OK)
        return w;
    free(w);
    cli_error(a->command, "%s: tensor '%s': %s [%s]", file, t->name, diag.message,
              sgfp4_status_name(s));
    return NULL;
}

/* The error statistics of `got` against `want` (n values), as sgfp4_tensor_compare fills
 * them. */
static void quality_of(const float *got, const float *want, uint64_t n, sgfp4_quality *q)
{
    memset(q, 0, sizeof *q);
    q->count = n;
    for (uint64_t i = 0; i < n; i++) {
        const double e = (double)want[i] - (double)got[i];
        q->sse += e * e;
        q->reference_sq += (double)want[i] * want[i];
        q->max_abs = fabs(e) > q->max_abs ? fabs(e) : q->max_abs;
        q->nonfinite += !isfinite(got[i]);
    }
    q->rmse = n ? sqrt(q->sse / (double)n) : 0;
    q->rel_l2 = q->reference_sq > 0 ? sqrt(q->sse / q->reference_sq)
                : q->sse > 0        ? INFINITY
                                    : 0;
    q->snr_db = q->sse > 0 ? 10.0 * log10(q->reference_sq / q->sse) : INFINITY;
}

/* Compares tensor t of m with its namesake `ref` of the --against model (one pair in
 * memory): float tensors by their float32 values (*q), others byte for byte (*same). */
static bool compare(const cli_args *a, const sgfp4_model *m, const sgfp4_model_tensor *t,
                    const sgfp4_model *against, const sgfp4_model_tensor *ref, sgfp4_quality *q,
                    bool *same)
{
    if (!is_float(t)) {
        *same = t->nbytes == ref->nbytes && memcmp(t->data, ref->data, t->nbytes) == 0;
        return true;
    }
    float *want = as_f32(a, against, ref, a->against);
    if (!want)
        return false;
    bool ok = true;
    sgfp4_tensor *view = NULL;
    sgfp4_diag diag;
    if (t->quant) { /* decoded in bands by the library, against the reference's floats */
        const sgfp4_decode_options d = cli_decode_options(a);
        sgfp4_status s = sgfp4_model_tensor_open(m, t, &view, NULL, &diag);
        if (s == SGFP4_OK && (s = sgfp4_tensor_compare(view, want, 0, q, &d)) != SGFP4_OK)
            snprintf(diag.message, sizeof diag.message, "cannot decode: %s", sgfp4_status_str(s));
        if (s != SGFP4_OK)
            ok = false, cli_error(a->command, "%s: tensor '%s': %s [%s]", a->in, t->name,
                                  diag.message, sgfp4_status_name(s));
    } else {
        float *got = as_f32(a, m, t, a->in);
        if (got)
            quality_of(got, want, t->elements, q);
        ok = got != NULL;
        free(got);
    }
    sgfp4_tensor_close(view);
    free(want);
    return ok;
}

/* Tensor classes of the memory table, recognised by name. */
enum { CLASS_ATTENTION, CLASS_MLP, CLASS_EMBEDDING, CLASS_NORM, CLASS_OTHER, CLASS_COUNT };
static const char *const class_names[CLASS_COUNT] = {"attention", "mlp", "embedding", "norm",
                                                     "other"};

static int class_of(const char *name)
{
    static const char *const words[CLASS_OTHER][11] = {
        {"attn", "attention", "att.", "q_proj", "k_proj", "v_proj", "o_proj", "query", "key",
         "value", NULL},
        {"mlp", "feed_forward", "ffn", "gate_proj", "up_proj", "down_proj", "fc1", "fc2",
         "experts", NULL},
        {"embed", "wte", "wpe", "lm_head", NULL},
        {"norm", "ln_", NULL}};
    static const int order[CLASS_OTHER] = {CLASS_NORM, CLASS_EMBEDDING, CLASS_ATTENTION, CLASS_MLP};
    if (strcmp(name, "output.weight") == 0)
        return CLASS_EMBEDDING;
    for (int k = 0; k < CLASS_OTHER; k++)
        for (const char *const *w = words[order[k]]; *w; w++)
            if (strstr(name, *w))
                return order[k];
    return CLASS_OTHER;
}

typedef struct totals {
    size_t tensors, quantized;
    uint64_t before, after, weights, q_bytes, q_weights;
    double rel_l2_sum;    /* --against: over the quantized tensors of a quantized model, the
                           * float tensors of a plain one; `compared` of them, and the other
                           * tensors whose bytes differ */
    size_t compared, differing;
} totals;

static void add(totals *t, bool quantized, uint64_t before, uint64_t after, uint64_t weights)
{
    t->tensors++;
    t->quantized += quantized;
    t->before += before;
    t->after += after;
    t->weights += weights;
    t->q_bytes += quantized ? after : 0;
    t->q_weights += quantized ? weights : 0;
}

static void print_text_summary(const sgfp4_model *m, const totals *all, const totals *classes,
                               bool against)
{
    printf("\n%-10s %7s %9s %12s %12s %12s %7s\n", "class", "tensors", "quantized", "before MB",
           "after MB", "saved MB", "saved");
    for (int k = 0; k < CLASS_COUNT; k++) {
        const totals *c = &classes[k];
        const double saved = (double)c->before - (double)c->after;
        if (c->tensors)
            printf("%-10s %7zu %9zu %12.3f %12.3f %12.3f %6.1f%%\n", class_names[k], c->tensors,
                   c->quantized, (double)c->before / 1e6, (double)c->after / 1e6, saved / 1e6,
                   c->before ? 100.0 * saved / (double)c->before : 0.0);
    }
    const uint64_t saved = all->before > all->after ? all->before - all->after : 0;
    printf("\n%zu tensors, %zu quantized\n", all->tensors, all->quantized);
    printf("tensor bytes: %llu before, %llu after, %llu saved (%.1f%%)\n",
           (unsigned long long)all->before, (unsigned long long)all->after,
           (unsigned long long)saved, all->before ? 100.0 * (double)saved / (double)all->before : 0);
    if (all->quantized)
        printf("bits per weight: %.3f over quantized tensors, %.3f over the whole model\n",
               8.0 * (double)all->q_bytes / (double)all->q_weights,
               all->weights ? 8.0 * (double)all->after / (double)all->weights : 0);
    if (against && all->compared)
        printf("mean rel-L2 over %s tensors: %.5f\n", all->quantized ? "quantized" : "float",
               all->rel_l2_sum / (double)all->compared);
    if (against && all->differing)
        printf("other tensors whose bytes differ: %zu\n", all->differing);
    printf("file: %llu bytes%s\n", (unsigned long long)sgfp4_model_file_bytes(m),
           sgfp4_model_was_compressed(m) ? " (decompressed from zstd)" : "");
}

static json_t *json_summary(const sgfp4_model *m, const totals *all, const totals *classes,
                            bool against)
{
    json_t *sum = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:f,s:f}", "tensors", (json_int_t)all->tensors, "quantized",
        (json_int_t)all->quantized, "bytes_before", (json_int_t)all->before, "bytes_after",
        (json_int_t)all->after, "file_bytes", (json_int_t)sgfp4_model_file_bytes(m),
        "bits_per_weight_quantized",
        all->q_weights ? 8.0 * (double)all->q_bytes / (double)all->q_weights : 0.0,
        "bits_per_weight_all", all->weights ? 8.0 * (double)all->after / (double)all->weights : 0.0);
    if (against && all->compared)
        json_object_set_new(sum, "mean_rel_l2", json_real(all->rel_l2_sum / (double)all->compared));
    if (against)
        json_object_set_new(sum, "differing_bytes", json_integer((json_int_t)all->differing));
    json_t *by_class = json_object();
    for (int k = 0; k < CLASS_COUNT; k++)
        if (classes[k].tensors)
            json_object_set_new(by_class, class_names[k],
                                json_pack("{s:I,s:I,s:I,s:I}", "tensors",
                                          (json_int_t)classes[k].tensors, "quantized",
                                          (json_int_t)classes[k].quantized, "bytes_before",
                                          (json_int_t)classes[k].before, "bytes_after",
                                          (json_int_t)classes[k].after));
    return json_pack("{s:o,s:o}", "summary", sum, "classes", by_class);
}

/* A set: one line per shard (its name, tensors, quantized, bytes before and after). */
static void print_text_shards(const sgfp4_model *m, const totals *shards, size_t count)
{
    printf("\n%-40s %7s %9s %12s %12s\n", "shard", "tensors", "quantized", "before MB",
           "after MB");
    for (size_t k = 0; k < count; k++)
        printf("%-40s %7zu %9zu %12.3f %12.3f\n", sgfp4_model_shard_name(m, k), shards[k].tensors,
               shards[k].quantized, (double)shards[k].before / 1e6,
               (double)shards[k].after / 1e6);
}

static json_t *json_shards(const sgfp4_model *m, const totals *shards, size_t count)
{
    json_t *list = json_array();
    for (size_t k = 0; k < count; k++)
        json_array_append_new(list, json_pack("{s:s,s:I,s:I,s:I,s:I}", "name",
                                              sgfp4_model_shard_name(m, k), "tensors",
                                              (json_int_t)shards[k].tensors, "quantized",
                                              (json_int_t)shards[k].quantized, "bytes_before",
                                              (json_int_t)shards[k].before, "bytes_after",
                                              (json_int_t)shards[k].after));
    return list;
}

int cmd_info_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_MAP, 0};
    const int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0)
        return rc;
    const bool json = a->given[KEY_JSON];
    sgfp4_model *m = NULL, *ref = NULL;
    if (!cli_model_open(a, a->in, &m) || (a->against && !cli_model_open(a, a->against, &ref)) ||
        (ref && !reference_matches(a, m, ref))) {
        sgfp4_model_close(ref);
        sgfp4_model_close(m);
        return CLI_EXIT_FAIL;
    }
    /* the mean error is over the quantized tensors of a quantized model (its other float
     * tensors pass through unchanged), over every float tensor of a plain one */
    const bool quantized_model = sgfp4_model_is_quantized(m);
    /* For a model that is not quantized yet: what `encode` would do with the default policy. */
    sgfp4_model_policy *plan = NULL;
    if (!sgfp4_model_is_quantized(m) && sgfp4_model_policy_create(&plan) != SGFP4_OK)
        plan = NULL;
    json_t *rows = json_array();
    const size_t n = sgfp4_model_tensor_count(m);
    totals all = {0}, classes[CLASS_COUNT] = {{0}};
    /* a set: totals per shard too */
    const size_t shard_count = sgfp4_model_is_set(m) ? sgfp4_model_shard_count(m) : 0;
    totals *shards = shard_count ? calloc(shard_count, sizeof *shards) : NULL;
    bool ok = true;
    int width = 6; /* the name column fits the longest name (up to 80) */
    for (size_t k = 0; k < n; k++) {
        const int len = (int)strlen(sgfp4_model_tensor_at(m, k)->name);
        width = len > width ? (len < 80 ? len : 80) : width;
    }
    if (!json)
        printf("%-*s %-16s %-5s %8s %12s%s%s%s\n", width, "tensor", "shape", "kind", "bits/w",
               "bytes", shards ? " shard" : "", ref ? "   rel-L2   SNR dB" : "",
               plan ? "  encode would" : "");
    for (size_t k = 0; k < n && ok; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_quant *q = t->quant;
        const uint64_t *shape = q ? q->original_shape : t->shape;
        const size_t rank = q ? q->original_rank : t->rank;
        const uint64_t weights = q ? q->rows * q->cols : t->elements;
        const sgfp4_st_dtype dt = q ? q->source_dtype : t->dtype;
        const double bpw = weights ? 8.0 * (double)t->nbytes / (double)weights : 0;
        const char *kind = q ? cli_profile_name(q->profile) : sgfp4_st_dtype_name(t->dtype);
        sgfp4_quality quality;
        sgfp4_quality_init(&quality);
        bool same = false;
        const bool have = ref != NULL, numbers = have && is_float(t);
        ok = !have ||
             compare(a, m, t, ref, sgfp4_model_tensor_find(ref, t->name), &quality, &same);
        sgfp4_model_decision decision;
        sgfp4_model_decision_init(&decision);
        if (plan)
            sgfp4_model_policy_decide(plan, t, &decision);
        uint64_t before = t->nbytes; /* a pass-through tensor: its bytes, also for F4 / F6 */
        if (q && sgfp4_st_dtype_bytes(dt, weights, &before) != 0)
            before = 0;
        add(&all, q != NULL, before, t->nbytes, weights);
        add(&classes[class_of(t->name)], q != NULL, before, t->nbytes, weights);
        if (shards)
            add(&shards[t->shard], q != NULL, before, t->nbytes, weights);
        if (ok && numbers && (q || !quantized_model)) {
            all.rel_l2_sum += quality.rel_l2;
            all.compared++;
        }
        all.differing += ok && have && !numbers && !same;
        char text[96];
        cli_shape_text(text, sizeof text, shape, rank);
        if (ok && json) {
            json_t *r = json_pack("{s:s,s:[],s:s,s:s,s:f,s:I}", "name", t->name, "shape", "kind",
                                  kind, "source_dtype", sgfp4_st_dtype_name(dt),
                                  "bits_per_weight", bpw, "bytes", (json_int_t)t->nbytes);
            for (size_t d = 0; d < rank; d++)
                json_array_append_new(json_object_get(r, "shape"),
                                      json_integer((json_int_t)shape[d]));
            if (shards)
                json_object_set_new(r, "shard", json_string(sgfp4_model_shard_name(m, t->shard)));
            if (numbers) {
                json_object_set_new(r, "rel_l2", json_real(quality.rel_l2));
                json_object_set_new(r, "snr_db", isfinite(quality.snr_db)
                                                     ? json_real(quality.snr_db)
                                                     : json_null());
            } else if (have) {
                json_object_set_new(r, "same_bytes", json_boolean(same));
            }
            if (plan)
                json_object_set_new(r, "plan", json_pack("{s:b,s:s}", "quantize",
                                                         decision.quantize, "reason",
                                                         decision.reason));
            json_array_append_new(rows, r);
        } else if (ok) {
            printf("%-*s %-16s %-5s %8.3f %12llu", width, t->name, text, kind, bpw,
                   (unsigned long long)t->nbytes);
            if (shards)
                printf(" %5zu", t->shard + 1);
            if (numbers)
                printf("  %8.5f %8.2f", quality.rel_l2, quality.snr_db);
            else if (have)
                printf("  %-17s", same ? "same bytes" : "bytes differ");
            if (plan)
                printf("  %s (%s)", decision.quantize ? "quantize" : "pass", decision.reason);
            printf("\n");
        }
        sgfp4_model_tensor_evict(m, t);
    }
    if (ok && json) {
        json_t *root = json_pack("{s:s,s:O}", "file", a->in, "tensors", rows);
        json_t *summary = json_summary(m, &all, classes, ref != NULL);
        json_object_update(root, summary);
        json_decref(summary);
        if (shards)
            json_object_set_new(root, "shards", json_shards(m, shards, shard_count));
        cli_print_json(root);
    } else if (ok) {
        print_text_summary(m, &all, classes, ref != NULL);
        if (shards)
            print_text_shards(m, shards, shard_count);
    }
    free(shards);
    json_decref(rows);
    sgfp4_model_policy_free(plan);
    sgfp4_model_close(ref);
    sgfp4_model_close(m);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
