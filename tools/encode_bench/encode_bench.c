/* Encode speed and quality on real weights (docs/benchmarks.md, "Encode speed", "Encode quality").
 *
 *   sgfp4-encode-bench [--bpw X,Y,...] [--threshold] [--threshold-scale T] [--v1]
 *                      [--threads N] [--every K] [--min-dim D] [--fit best|fast|reference]
 *                      [--metric sse|row]
 *                      FILE.safetensors...
 *
 * Takes every 2-D F32 tensor with both dimensions >= D (default 64) of the models (read with
 * the model API), encodes it at each setting with the library, opens the container strictly,
 * compares its decode with the weights (sgfp4_tensor_compare), and prints a Markdown table:
 * per tensor relative L2 error ||w - w_hat|| / ||w|| and bits per weight, then the pooled
 * error sqrt(sum of squared errors / sum of squared weights) and the encode speed: weights
 * per CPU-second of the process (the per-core rate, robust on a shared machine) and per
 * wall-clock second.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgfp4.h"
#include "sgfp4_model.h"
#include "tool_clock.h"

#define MAX_TENSORS 256
#define MAX_SETTINGS 16

typedef struct tensor {
    char name[160];
    uint64_t rows, cols;
    float *data;
} tensor;

typedef struct setting {
    char label[32];
    sgfp4_encode_options o;
    double sse, ref, bytes, weights, seconds, cpu_seconds;
} setting;

/* Appends the 2-D F32 tensors of a model with both dimensions >= min_dim to out[count..];
 * returns the new count, or -1 when the file cannot be read. */
static int load_file(const char *path, tensor *out, int count, uint64_t min_dim)
{
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_open(path, &m, NULL, &diag) != SGFP4_OK)
        return fprintf(stderr, "%s: %s\n", path, diag.message), -1;
    for (size_t k = 0; k < sgfp4_model_tensor_count(m) && count < MAX_TENSORS; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        if (t->dtype != SGFP4_ST_F32 || t->rank != 2 || t->shape[0] < min_dim ||
            t->shape[1] < min_dim)
            continue;
        tensor *d = &out[count];
        snprintf(d->name, sizeof d->name, "%s", t->name);
        d->rows = t->shape[0];
        d->cols = t->shape[1];
        d->data = malloc((size_t)t->nbytes);
        if (!d->data ||
            sgfp4_model_tensor_to_f32(t, 0, d->data, (size_t)t->nbytes, &diag) != SGFP4_OK) {
            free(d->data);
            continue;
        }
        count++;
    }
    sgfp4_model_close(m);
    return count;
}

/* Encodes t with s; adds to the setting's totals; returns the relative L2 (or -1). */
static double run_one(const tensor *t, setting *s, double *bpw)
{
    void *bytes = NULL;
    size_t size = 0;
    const double t0 = tool_now();
    const double c0 = tool_cpu_now();
    if (sgfp4_encode_alloc(t->data, t->rows, t->cols, 0, &bytes, &size, &s->o, NULL) != SGFP4_OK)
        return -1;
    s->seconds += tool_now() - t0;
    s->cpu_seconds += tool_cpu_now() - c0;
    sgfp4_tensor *view = NULL;
    sgfp4_quality q;
    sgfp4_quality_init(&q);
    const bool ok =
        sgfp4_tensor_open(bytes, size, s->o.profile, t->rows, t->cols, &view, NULL, NULL) ==
            SGFP4_OK &&
        sgfp4_tensor_compare(view, t->data, 0, &q, NULL) == SGFP4_OK;
    sgfp4_tensor_close(view);
    sgfp4_free(bytes);
    if (!ok)
        return -1;
    s->sse += q.sse;
    s->ref += q.reference_sq;
    s->bytes += (double)size;
    s->weights += (double)q.count;
    *bpw = size * 8.0 / (double)q.count;
    return q.rel_l2;
}

int main(int argc, char **argv)
{
    static tensor tensors[MAX_TENSORS];
    setting settings[MAX_SETTINGS];
    int nt = 0, ns = 0, every = 1;
    unsigned threads = 1;
    char bpw_list[256] = "2.5,3.0,3.5,4.0,4.5,5.0";
    int threshold = 0, v1 = 0;
    double threshold_scale = 1.0;
    uint64_t min_dim = 64;
    sgfp4_fit fit = SGFP4_FIT_BEST;
    sgfp4_error_metric metric = SGFP4_METRIC_SSE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bpw") == 0 && i + 1 < argc)
            snprintf(bpw_list, sizeof bpw_list, "%s", argv[++i]);
        else if (strcmp(argv[i], "--threshold") == 0)
            threshold = 1;
        else if (strcmp(argv[i], "--threshold-scale") == 0 && i + 1 < argc)
            threshold_scale = atof(argv[++i]), threshold = 1;
        else if (strcmp(argv[i], "--v1") == 0)
            v1 = 1;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
            every = atoi(argv[++i]);
        else if (strcmp(argv[i], "--fit") == 0 && i + 1 < argc) {
            const char *f = argv[++i];
            fit = strcmp(f, "fast") == 0        ? SGFP4_FIT_FAST
                  : strcmp(f, "reference") == 0 ? SGFP4_FIT_REFERENCE
                                                : SGFP4_FIT_BEST;
        } else if (strcmp(argv[i], "--metric") == 0 && i + 1 < argc) {
            metric = strcmp(argv[++i], "row") == 0 ? SGFP4_METRIC_ROW_RELATIVE : SGFP4_METRIC_SSE;
        } else if (strcmp(argv[i], "--min-dim") == 0 && i + 1 < argc)
            min_dim = (uint64_t)atoll(argv[++i]);
        else {
            const int got = load_file(argv[i], tensors, nt, min_dim);
            if (got < 0)
                return 1;
            nt = got;
        }
    }
    for (char *p = strtok(bpw_list, ","); p && ns < MAX_SETTINGS - 2; p = strtok(NULL, ",")) {
        if (strlen(p) == 0)
            continue;
        setting *s = &settings[ns++];
        memset(s, 0, sizeof *s);
        sgfp4_encode_options_init(&s->o);
        s->o.target_bpw = atof(p);
        s->o.threads = threads;
        s->o.fit = fit;
        s->o.metric = metric;
        snprintf(s->label, sizeof s->label, "bpw %s", p);
    }
    if (threshold) {
        setting *s = &settings[ns++];
        memset(s, 0, sizeof *s);
        sgfp4_encode_options_init(&s->o);
        s->o.policy = SGFP4_POLICY_THRESHOLD;
        s->o.threshold = threshold_scale;
        s->o.threads = threads;
        snprintf(s->label, sizeof s->label, "threshold %g", threshold_scale);
    }
    if (v1) {
        setting *s = &settings[ns++];
        memset(s, 0, sizeof *s);
        sgfp4_encode_options_init(&s->o);
        s->o.profile = SGFP4_PROFILE_V1;
        s->o.threads = threads;
        snprintf(s->label, sizeof s->label, "v1");
    }
    printf("| tensor | shape |");
    for (int k = 0; k < ns; k++)
        printf(" %s: rel-L2 (bpw) |", settings[k].label);
    printf("\n|---|---|");
    for (int k = 0; k < ns; k++)
        printf("---|");
    printf("\n");
    for (int i = 0; i < nt; i += every) {
        printf("| %s | %llux%llu |", tensors[i].name, (unsigned long long)tensors[i].rows,
               (unsigned long long)tensors[i].cols);
        for (int k = 0; k < ns; k++) {
            double bpw = 0;
            const double rel = run_one(&tensors[i], &settings[k], &bpw);
            if (rel < 0) {
                printf(" FAILED |");
                continue;
            }
            printf(" %.4f (%.3f) |", rel, bpw);
        }
        printf("\n");
        fflush(stdout);
    }
    printf("| **pooled** | |");
    for (int k = 0; k < ns; k++)
        printf(" **%.5f** (%.4f) |", sqrt(settings[k].sse / settings[k].ref),
               settings[k].bytes * 8 / settings[k].weights);
    printf("\n| speed, M weights per CPU-second (%u thread%s) | |", threads,
           threads > 1 ? "s" : "");
    for (int k = 0; k < ns; k++)
        printf(" %.2f |", settings[k].weights / settings[k].cpu_seconds / 1e6);
    printf("\n| speed, M weights per wall-second (%u thread%s) | |", threads,
           threads > 1 ? "s" : "");
    for (int k = 0; k < ns; k++)
        printf(" %.2f |", settings[k].weights / settings[k].seconds / 1e6);
    printf("\n");
    for (int i = 0; i < nt; i++)
        free(tensors[i].data);
    return 0;
}
