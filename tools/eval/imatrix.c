/* Writing the importance file: the Fisher factors of fisher.c as mean squares per token,
 * float32 vectors keyed by tensor name (NAME: columns, NAME:rows: rows) in a safetensors
 * file. The calibration text is sampled from the float32 model itself with its own seed
 * (kept apart from the evaluation's). A shared classifier's factors are stored under the
 * token embedding's name.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define BOS 1

static const char *const slot_names[SLOT_COUNT] = {
    "layers.%d.attention.wq.weight",    "layers.%d.attention.wk.weight",
    "layers.%d.attention.wv.weight",    "layers.%d.attention.wo.weight",
    "layers.%d.feed_forward.w1.weight", "layers.%d.feed_forward.w2.weight",
    "layers.%d.feed_forward.w3.weight"};

static int slot_inputs(const llama_config *c, int slot)
{
    return slot == SLOT_W2 ? c->hidden : c->dim;
}

/* The vectors of the file, in order: name and values. */
typedef struct entry_list {
    char (*names)[96];
    float **values;
    uint64_t *sizes;
    size_t count, cap;
} entry_list;

static int add_entry(entry_list *e, const char *name, const double *sum, uint64_t n,
                     double divide)
{
    if (e->count == e->cap)
        return -1;
    snprintf(e->names[e->count], sizeof e->names[0], "%s", name);
    e->values[e->count] = malloc((size_t)n * sizeof(float));
    if (!e->values[e->count])
        return -1;
    for (uint64_t j = 0; j < n; j++)
        e->values[e->count][j] = (float)(sum[j] / divide);
    e->sizes[e->count++] = n;
    return 0;
}

static int write_entries(const entry_list *e, sgfp4_model_output *out, const char *path)
{
    sgfp4_st_entry *entries = calloc(e->count ? e->count : 1, sizeof *entries);
    if (!entries)
        return fprintf(stderr, "sgfp4-eval: out of memory\n"), -1;
    for (size_t i = 0; i < e->count; i++)
        entries[i] = (sgfp4_st_entry){e->names[i], SGFP4_ST_F32, 1, &e->sizes[i]};
    const sgfp4_sink sink = sgfp4_model_output_sink(out);
    sgfp4_st_writer *w = NULL;
    sgfp4_diag diag;
    const char *key = "sgfp4-eval",
               *value = "importance: NAME = mean squared input activation per column; "
                        "NAME:rows = output-side sensitivity per row";
    sgfp4_status s = sgfp4_st_writer_begin(entries, e->count, &key, &value, 1, &sink, &w, &diag);
    for (size_t i = 0; s == SGFP4_OK && i < e->count; i++)
        s = sgfp4_st_writer_write(w, e->values[i], (size_t)e->sizes[i] * sizeof(float));
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_finish(w, &diag);
    sgfp4_st_writer_free(w);
    free(entries);
    if (s != SGFP4_OK)
        return fprintf(stderr, "sgfp4-eval: %s: cannot write: %s\n", path, sgfp4_status_str(s)),
               -1;
    if (sgfp4_model_output_commit(out, &diag) != SGFP4_OK)
        return fprintf(stderr, "sgfp4-eval: %s\n", diag.message), -1;
    return 0;
}

static int slot_outputs(const llama_config *c, int slot)
{
    const int kv = c->dim / c->heads * c->kv_heads;
    return slot == SLOT_WK || slot == SLOT_WV ? kv : slot == SLOT_W1 || slot == SLOT_W3 ? c->hidden
                                                                                      : c->dim;
}

static int build_entries(const llama_model *m, const llama_act_stats *st, entry_list *e)
{
    const llama_config *c = &m->c;
    const double tokens = st->tokens ? (double)st->tokens : 1.0;
    char name[96];
    double *values = calloc((size_t)(c->vocab > c->hidden ? c->vocab : c->hidden) + 1,
                            sizeof *values);
    int rc = values ? 0 : -1;
    for (int l = 0; rc == 0 && l < c->layers; l++)
        for (int slot = 0; rc == 0 && slot < SLOT_COUNT; slot++) {
            snprintf(name, sizeof name, slot_names[slot], l);
            const int in = slot_inputs(c, slot), out = slot_outputs(c, slot);
            rc = add_entry(e, name, st->sum[slot] + (size_t)l * (size_t)in, (uint64_t)in, tokens);
            char rows[112];
            snprintf(rows, sizeof rows, "%s:rows", name);
            if (rc == 0)
                rc = add_entry(e, rows, st->out[slot] + (size_t)l * (size_t)out, (uint64_t)out,
                               tokens);
        }
    const int shared = m->classifier == m->tok_embeddings;
    const char *cls = shared ? "tok_embeddings.weight" : "output.weight";
    if (rc == 0)
        rc = add_entry(e, cls, st->classifier, (uint64_t)c->dim, tokens);
    if (rc == 0) {
        /* A shared embedding's rows: the classifier's factor, plus the lookup's in units of
         * the classifier's mean column factor (the columns are the classifier's). */
        double mean_col = 0;
        for (int j = 0; j < c->dim; j++)
            mean_col += st->classifier[j] / tokens / c->dim;
        for (int i = 0; i < c->vocab; i++)
            values[i] = st->classifier_out[i] +
                        (shared && mean_col > 0 ? st->lookup_out[i] / mean_col : 0.0);
        snprintf(name, sizeof name, "%s:rows", cls);
        rc = add_entry(e, name, values, (uint64_t)c->vocab, tokens);
    }
    free(values);
    return rc;
}

int eval_imatrix_write(const eval_run *run, const llama_config *c, uint64_t seed,
                       int sequences, int length, sgfp4_model_output *out, const char *path)
{
    llama_act_stats st;
    memset(&st, 0, sizeof st);
    int rc = 0;
    for (int slot = 0; slot < SLOT_COUNT; slot++)
        if (!(st.sum[slot] = calloc((size_t)c->layers * (size_t)slot_inputs(c, slot),
                                    sizeof(double))) ||
            !(st.out[slot] = calloc((size_t)c->layers * (size_t)slot_outputs(c, slot),
                                    sizeof(double))))
            rc = -1;
    if (!(st.classifier = calloc((size_t)c->dim, sizeof(double))) ||
        !(st.classifier_out = calloc((size_t)c->vocab, sizeof(double))) ||
        !(st.lookup_out = calloc((size_t)c->vocab, sizeof(double))))
        rc = -1;
    if (rc == 0)
        rc = eval_fisher_collect(run->model, seed, sequences, length, &st);
    entry_list e = {0};
    e.cap = (size_t)c->layers * SLOT_COUNT * 2 + 2;
    e.names = calloc(e.cap, sizeof *e.names);
    e.values = calloc(e.cap, sizeof *e.values);
    e.sizes = calloc(e.cap, sizeof *e.sizes);
    if (rc == 0)
        rc = e.names && e.values && e.sizes ? build_entries(run->model, &st, &e) : -1;
    if (rc == 0)
        rc = write_entries(&e, out, path);
    for (size_t i = 0; i < e.count; i++)
        free(e.values[i]);
    free(e.names);
    free(e.values);
    free(e.sizes);
    for (int slot = 0; slot < SLOT_COUNT; slot++) {
        free(st.sum[slot]);
        free(st.out[slot]);
    }
    free(st.classifier);
    free(st.classifier_out);
    free(st.lookup_out);
    return rc;
}
