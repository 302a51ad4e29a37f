/* sgfp4 info MODEL.safetensors[.zst] [--json] [--against SOURCE.safetensors]
 * One row per tensor (name, shape, profile or dtype, bits per weight, bytes; with --against:
 * rel-L2 error and SNR of the decoded tensor) and a summary of the sizes.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model_cli.h"

static const char help[] =
    "usage: sgfp4 info MODEL.safetensors[.zst] [--json] [--against SOURCE.safetensors]\n"
    "\n"
    "  --json            machine-readable output\n"
    "  --against SOURCE  compare every quantized tensor with the source model's tensor\n"
    "                    (relative L2 error and SNR in dB)\n";

typedef struct error_stats {
    bool have;
    double rel_l2, snr_db;
} error_stats;

/* Decodes `t` and compares with `ref` (same element count); one tensor pair in memory. */
static bool compare(const char *cmd, const sgfp4_model *m, const sgfp4_model_tensor *t,
                    const sgfp4_model_tensor *ref, error_stats *es)
{
    if (!ref || ref->elements != t->quant->rows * t->quant->cols)
        return cli_error(cmd, "tensor '%s': missing or of another size in the --against model",
                         t->name), false;
    const size_t n = (size_t)ref->elements;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    sgfp4_tensor *view = NULL;
    sgfp4_diag diag;
    bool ok = a && b;
    if (!ok)
        cli_error(cmd, "out of memory");
    ok = ok && sgfp4_model_tensor_to_f32(ref, 0, a, n * sizeof *a, &diag) == SGFP4_OK;
    ok = ok && sgfp4_model_tensor_open(m, t, &view, NULL, &diag) == SGFP4_OK;
    ok = ok && sgfp4_decode(view, SGFP4_DTYPE_F32, b, 0, n * sizeof *b, NULL) == SGFP4_OK;
    if (ok) {
        double signal = 0, noise = 0;
        for (size_t k = 0; k < n; k++) {
            const double d = (double)a[k] - (double)b[k];
            signal += (double)a[k] * a[k];
            noise += d * d;
        }
        es->have = true;
        es->rel_l2 = signal > 0 ? sqrt(noise / signal) : (noise > 0 ? INFINITY : 0);
        es->snr_db = noise > 0 ? 10 * log10(signal / noise) : INFINITY;
    } else if (a && b) {
        cli_error(cmd, "tensor '%s': %s", t->name, diag.message);
    }
    sgfp4_tensor_close(view);
    free(a);
    free(b);
    return ok;
}

/* Tensor classes of the memory table (as in seed 002), recognised by name. */
enum { CLASS_ATTENTION, CLASS_MLP, CLASS_EMBEDDING, CLASS_NORM, CLASS_OTHER, CLASS_COUNT };
static const char *const class_names[CLASS_COUNT] = {"attention", "mlp", "embedding",
                                                     "norm", "other"};

static int class_of(const char *name)
{
    static const char *const attention[] = {"attn", "attention", "att.", "q_proj", "k_proj",
                                            "v_proj", "o_proj", "query", "key", "value", NULL};
    static const char *const mlp[] = {"mlp", "feed_forward", "ffn", "gate_proj", "up_proj",
                                      "down_proj", "fc1", "fc2", "experts", NULL};
    static const char *const embedding[] = {"embed", "wte", "wpe", "lm_head", NULL};
    if (strstr(name, "norm") || strstr(name, "ln_"))
        return CLASS_NORM;
    for (const char *const *w = embedding; *w; w++)
        if (strstr(name, *w) || strcmp(name, "output.weight") == 0)
            return CLASS_EMBEDDING;
    for (const char *const *w = attention; *w; w++)
        if (strstr(name, *w))
            return CLASS_ATTENTION;
    for (const char *const *w = mlp; *w; w++)
        if (strstr(name, *w))
            return CLASS_MLP;
    return CLASS_OTHER;
}

typedef struct class_total {
    size_t tensors, quantized;
    uint64_t before, after;
} class_total;

static void print_classes(const class_total *c)
{
    printf("\n%-10s %7s %9s %12s %12s %12s %7s\n", "class", "tensors", "quantized",
           "before MB", "after MB", "saved MB", "saved");
    for (int k = 0; k < CLASS_COUNT; k++) {
        if (!c[k].tensors)
            continue;
        const double saved = (double)c[k].before - (double)c[k].after;
        printf("%-10s %7zu %9zu %12.3f %12.3f %12.3f %6.1f%%\n", class_names[k], c[k].tensors,
               c[k].quantized, (double)c[k].before / 1e6, (double)c[k].after / 1e6, saved / 1e6,
               c[k].before ? 100.0 * saved / (double)c[k].before : 0.0);
    }
}

int cmd_model_info(int argc, char **argv)
{
    const char *cmd = "info", *in = NULL, *against = NULL, *v = NULL, *error = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(help, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "-q") == 0) {
            cli_quiet = true;
        } else if (cli_take_option(argc, argv, &i, "--against", &v, &error)) {
            if (error)
                return cli_usage_error(cmd, "--against %s", error);
            against = v;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_usage_error(cmd, "more than one input ('%s')", a);
        }
    }
    if (!in)
        return cli_usage_error(cmd, "no input model");
    sgfp4_model *m = NULL, *ref = NULL;
    if (!model_cli_open(cmd, in, &m))
        return CLI_EXIT_FAIL;
    if (against && !model_cli_open(cmd, against, &ref)) {
        sgfp4_model_close(m);
        return CLI_EXIT_FAIL;
    }
    /* For a model that is not quantized yet: what `encode` would do with the default policy. */
    sgfp4_model_policy *plan = NULL;
    if (!sgfp4_model_is_quantized(m) && sgfp4_model_policy_create(&plan) != SGFP4_OK)
        plan = NULL;
    json_t *root = json_object(), *rows = json_array();
    const size_t n = sgfp4_model_tensor_count(m);
    uint64_t before = 0, after = 0, q_bytes = 0, q_weights = 0, all_weights = 0;
    size_t quantized = 0;
    class_total classes[CLASS_COUNT] = {{0}};
    double err_sum = 0;
    bool ok = true;
    int width = 6; /* the name column fits the longest name (up to 80) */
    for (size_t k = 0; k < n; k++) {
        const int len = (int)strlen(sgfp4_model_tensor_at(m, k)->name);
        width = len > width ? (len < 80 ? len : 80) : width;
    }
    if (!json)
        printf("%-*s %-16s %-5s %8s %12s%s%s\n", width, "tensor", "shape", "kind", "bits/w",
               "bytes", ref ? "   rel-L2   SNR dB" : "", plan ? "  encode would" : "");
    for (size_t k = 0; k < n && ok; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_quant *q = t->quant;
        const uint64_t *shape = q ? q->original_shape : t->shape;
        const size_t rank = q ? q->original_rank : t->rank;
        const uint64_t weights = q ? q->rows * q->cols : t->elements;
        const sgfp4_st_dtype dt = q ? q->source_dtype : t->dtype;
        const double bpw = weights ? 8.0 * (double)t->nbytes / (double)weights : 0;
        char shape_text[96];
        model_cli_shape(shape_text, sizeof shape_text, shape, rank);
        const char *kind = q ? (q->profile == SGFP4_PROFILE_V1 ? "v1" : "v2")
                             : sgfp4_st_dtype_name(t->dtype);
        error_stats es = {0};
        sgfp4_model_decision decision;
        if (plan)
            sgfp4_model_policy_decide(plan, t, &decision);
        if (q && ref)
            ok = compare(cmd, m, t, sgfp4_model_tensor_find(ref, t->name), &es);
        before += weights * sgfp4_st_dtype_size(dt);
        after += t->nbytes;
        class_total *ct = &classes[class_of(t->name)];
        ct->tensors++;
        ct->quantized += q != NULL;
        ct->before += weights * sgfp4_st_dtype_size(dt);
        ct->after += t->nbytes;
        all_weights += weights;
        if (q) {
            quantized++;
            q_bytes += t->nbytes;
            q_weights += weights;
            err_sum += es.have ? es.rel_l2 : 0;
        }
        if (json) {
            json_t *r = json_pack("{s:s,s:o,s:s,s:s,s:f,s:I}", "name", t->name, "shape",
                                  json_array(), "kind", kind, "source_dtype",
                                  sgfp4_st_dtype_name(dt), "bits_per_weight", bpw, "bytes",
                                  (json_int_t)t->nbytes);
            for (size_t d = 0; d < rank; d++)
                json_array_append_new(json_object_get(r, "shape"),
                                      json_integer((json_int_t)shape[d]));
            if (es.have) {
                json_object_set_new(r, "rel_l2", json_real(es.rel_l2));
                json_object_set_new(r, "snr_db", isfinite(es.snr_db) ? json_real(es.snr_db)
                                                                     : json_null());
            }
            if (plan)
                json_object_set_new(r, "plan", json_pack("{s:b,s:s}", "quantize",
                                                         decision.quantize, "reason",
                                                         decision.reason));
            json_array_append_new(rows, r);
        } else {
            printf("%-*s %-16s %-5s %8.3f %12llu", width, t->name, shape_text, kind, bpw,
                   (unsigned long long)t->nbytes);
            if (es.have)
                printf("  %8.5f %8.2f", es.rel_l2, es.snr_db);
            if (plan)
                printf("  %s (%s)", decision.quantize ? "quantize" : "pass", decision.reason);
            printf("\n");
        }
        sgfp4_model_tensor_evict(m, t);
    }
    const double avg_q = q_weights ? 8.0 * (double)q_bytes / (double)q_weights : 0;
    const double avg_all = all_weights ? 8.0 * (double)after / (double)all_weights : 0;
    if (ok && json) {
        json_object_set_new(root, "file", json_string(in));
        json_object_set_new(root, "tensors", rows);
        json_t *sum = json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f}", "tensors", (json_int_t)n,
                                "quantized", (json_int_t)quantized, "bytes_before",
                                (json_int_t)before, "bytes_after", (json_int_t)after,
                                "file_bytes", (json_int_t)sgfp4_model_file_bytes(m),
                                "bits_per_weight_quantized", avg_q, "bits_per_weight_all", avg_all);
        if (ref && quantized)
            json_object_set_new(sum, "mean_rel_l2", json_real(err_sum / (double)quantized));
        json_object_set_new(root, "summary", sum);
        json_t *by_class = json_object();
        for (int c = 0; c < CLASS_COUNT; c++)
            if (classes[c].tensors)
                json_object_set_new(by_class, class_names[c],
                                    json_pack("{s:I,s:I,s:I,s:I}", "tensors",
                                              (json_int_t)classes[c].tensors, "quantized",
                                              (json_int_t)classes[c].quantized, "bytes_before",
                                              (json_int_t)classes[c].before, "bytes_after",
                                              (json_int_t)classes[c].after));
        json_object_set_new(root, "classes", by_class);
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text)
            puts(text);
        free(text);
    } else if (ok) {
        json_decref(rows);
        print_classes(classes);
        printf("\n%zu tensors, %zu quantized\n", n, quantized);
        printf("tensor bytes: %llu before, %llu after, %llu saved (%.1f%%)\n",
               (unsigned long long)before, (unsigned long long)after,
               (unsigned long long)(before > after ? before - after : 0),
               before ? 100.0 * (double)(before > after ? before - after : 0) / (double)before : 0);
        if (quantized)
            printf("bits per weight: %.3f over quantized tensors, %.3f over the whole model\n",
                   avg_q, avg_all);
        if (ref && quantized)
            printf("mean rel-L2 over quantized tensors: %.5f\n", err_sum / (double)quantized);
        printf("file: %llu bytes%s\n", (unsigned long long)sgfp4_model_file_bytes(m),
               sgfp4_model_was_compressed(m) ? " (decompressed from zstd)" : "");
    } else {
        json_decref(rows);
    }
    json_decref(root);
    sgfp4_model_policy_free(plan);
    sgfp4_model_close(ref);
    sgfp4_model_close(m);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
