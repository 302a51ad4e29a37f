/* sgfp4 info MODEL.safetensors[.zst] [--json] [--against SOURCE]: one row per tensor (name,
 * shape, profile or dtype, bits per weight, bytes; with --against the rel-L2 error and SNR of
 * the decoded tensor; for a model not quantized yet, what encode would do), a memory table
 * per tensor class, and a summary of the sizes.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* Decodes quantized tensor t and compares it with `ref` (one tensor pair in memory). */
static bool compare(const cli_args *a, const sgfp4_model *m, const sgfp4_model_tensor *t,
                    const sgfp4_model_tensor *ref, sgfp4_quality *q)
{
    if (!ref || ref->elements != t->quant->rows * t->quant->cols)
        return cli_error(a->command, "tensor '%s': missing or of another size in the --against "
                                     "model", t->name),
               false;
    const size_t n = (size_t)ref->elements;
    float *w = malloc(n * sizeof *w);
    sgfp4_tensor *view = NULL;
    sgfp4_diag diag;
    const sgfp4_decode_options d = cli_decode_options(a);
    bool ok = false;
    if (!w)
        cli_error(a->command, "tensor '%s': out of memory", t->name);
    else if (sgfp4_model_tensor_to_f32(ref, 0, w, n * sizeof *w, &diag) != SGFP4_OK ||
             sgfp4_model_tensor_open(m, t, &view, NULL, &diag) != SGFP4_OK)
        cli_error(a->command, "tensor '%s': %s", t->name, diag.message);
    else if (sgfp4_tensor_compare(view, w, 0, q, &d) != SGFP4_OK)
        cli_error(a->command, "tensor '%s': cannot decode", t->name);
    else
        ok = true;
    sgfp4_tensor_close(view);
    free(w);
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
    double rel_l2_sum;
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
    if (against && all->quantized)
        printf("mean rel-L2 over quantized tensors: %.5f\n",
               all->rel_l2_sum / (double)all->quantized);
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
    if (against && all->quantized)
        json_object_set_new(sum, "mean_rel_l2", json_real(all->rel_l2_sum / (double)all->quantized));
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

static void shape_text(char *buf, size_t size, const uint64_t *shape, size_t rank)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

int cmd_info_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_MAP, 0};
    const int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0)
        return rc;
    const bool json = a->given[KEY_JSON];
    sgfp4_model *m = NULL, *ref = NULL;
    if (!cli_model_open(a, a->in, &m) || (a->against && !cli_model_open(a, a->against, &ref))) {
        sgfp4_model_close(m);
        return CLI_EXIT_FAIL;
    }
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
        const bool have = q && ref;
        ok = !have || compare(a, m, t, sgfp4_model_tensor_find(ref, t->name), &quality);
        sgfp4_model_decision decision;
        if (plan)
            sgfp4_model_policy_decide(plan, t, &decision);
        uint64_t before = t->nbytes; /* a pass-through tensor: its bytes, also for F4 / F6 */
        if (q && sgfp4_st_dtype_bytes(dt, weights, &before) != 0)
            before = 0;
        add(&all, q != NULL, before, t->nbytes, weights);
        add(&classes[class_of(t->name)], q != NULL, before, t->nbytes, weights);
        if (shards)
            add(&shards[t->shard], q != NULL, before, t->nbytes, weights);
        all.rel_l2_sum += have && ok ? quality.rel_l2 : 0;
        char text[96];
        shape_text(text, sizeof text, shape, rank);
        if (ok && json) {
            json_t *r = json_pack("{s:s,s:[],s:s,s:s,s:f,s:I}", "name", t->name, "shape", "kind",
                                  kind, "source_dtype", sgfp4_st_dtype_name(dt),
                                  "bits_per_weight", bpw, "bytes", (json_int_t)t->nbytes);
            for (size_t d = 0; d < rank; d++)
                json_array_append_new(json_object_get(r, "shape"),
                                      json_integer((json_int_t)shape[d]));
            if (shards)
                json_object_set_new(r, "shard", json_string(sgfp4_model_shard_name(m, t->shard)));
            if (have) {
                json_object_set_new(r, "rel_l2", json_real(quality.rel_l2));
                json_object_set_new(r, "snr_db", isfinite(quality.snr_db)
                                                     ? json_real(quality.snr_db)
                                                     : json_null());
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
            if (have)
                printf("  %8.5f %8.2f", quality.rel_l2, quality.snr_db);
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
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text)
            puts(text);
        free(text);
        json_decref(root);
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
