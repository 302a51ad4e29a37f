/* Writing the importance file (docs/encoder.md, "The importance file"): the Fisher factors
 * of fisher.c as mean squares per token, float32 vectors keyed by tensor name (NAME:
 * columns, NAME:rows: rows), and the second moment of every matrix's input, E[x x^T], as
 * NAME:hessian, stored once per distinct input (the other matrices that read it name it in
 * the metadata), all in a safetensors file. The calibration text is sampled from the
 * float32 model itself with its own seed (kept apart from the evaluation's: the metadata
 * records it, and the benchmark refuses a file sampled with its own seed). A shared
 * classifier's statistics are stored under the token embedding's name.
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
    return llama_input_size(c, llama_slot_input(slot));
}

/* The tensors of the file, in order: name, shape and values; and its metadata. */
typedef struct entry_list {
    char (*names)[112];
    float **values;
    uint64_t (*shapes)[2];
    size_t *ranks;
    size_t count, cap;
    const char **meta_keys, **meta_values;
    size_t meta_count, meta_cap;
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
    e->shapes[e->count][0] = n;
    e->ranks[e->count++] = 1;
    return 0;
}

/* An n x n matrix from the upper triangle of `upper` (sums), mirrored, so that it is exactly
 * symmetric. */
static int add_symmetric(entry_list *e, const char *name, const double *upper, uint64_t n,
                         double divide)
{
    if (e->count == e->cap)
        return -1;
    snprintf(e->names[e->count], sizeof e->names[0], "%s", name);
    float *m = malloc((size_t)(n * n) * sizeof(float));
    if (!(e->values[e->count] = m))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = i; j < n; j++)
            m[i * n + j] = m[j * n + i] = (float)(upper[i * n + j] / divide);
    e->shapes[e->count][0] = e->shapes[e->count][1] = n;
    e->ranks[e->count++] = 2;
    return 0;
}

/* A metadata pair; both strings are copied. */
static int add_meta(entry_list *e, const char *key, const char *value)
{
    if (e->meta_count == e->meta_cap)
        return -1;
    e->meta_keys[e->meta_count] = strdup(key);
    e->meta_values[e->meta_count] = strdup(value);
    if (!e->meta_keys[e->meta_count] || !e->meta_values[e->meta_count]) {
        free((void *)e->meta_keys[e->meta_count]);
        free((void *)e->meta_values[e->meta_count]);
        return -1;
    }
    e->meta_count++;
    return 0;
}

static int write_entries(const entry_list *e, sgfp4_model_output *out, const char *path)
{
    sgfp4_st_entry *entries = calloc(e->count ? e->count : 1, sizeof *entries);
    if (!entries)
        return fprintf(stderr, "sgfp4-eval: out of memory\n"), -1;
    for (size_t i = 0; i < e->count; i++)
        entries[i] = (sgfp4_st_entry){e->names[i], SGFP4_ST_F32, e->ranks[i], e->shapes[i]};
    const sgfp4_sink sink = sgfp4_model_output_sink(out);
    sgfp4_st_writer *w = NULL;
    sgfp4_diag diag;
    sgfp4_status s = sgfp4_st_writer_begin(entries, e->count, e->meta_keys, e->meta_values,
                                           e->meta_count, &sink, &w, &diag);
    for (size_t i = 0; s == SGFP4_OK && i < e->count; i++) {
        const size_t n = (size_t)(e->ranks[i] == 2 ? e->shapes[i][0] * e->shapes[i][1]
                                                   : e->shapes[i][0]);
        s = sgfp4_st_writer_write(w, e->values[i], n * sizeof(float));
    }
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

/* Layer l's matrices: the column and row factors of each, the Hessian of each distinct input
 * under its first reader's name, and for the other readers a metadata alias to it. */
static int build_layer(const llama_model *m, const llama_act_stats *st, int l, double tokens,
                       entry_list *e)
{
    const llama_config *c = &m->c;
    char name[96], key[112], target[112];
    int rc = 0;
    for (int slot = 0; rc == 0 && slot < SLOT_COUNT; slot++) {
        snprintf(name, sizeof name, slot_names[slot], l);
        const int in = slot_inputs(c, slot), out = slot_outputs(c, slot);
        rc = add_entry(e, name, st->sum[slot] + (size_t)l * (size_t)in, (uint64_t)in, tokens);
        snprintf(key, sizeof key, "%s:rows", name);
        if (rc == 0)
            rc = add_entry(e, key, st->out[slot] + (size_t)l * (size_t)out, (uint64_t)out,
                           tokens);
        const int input = llama_slot_input(slot), owner = llama_input_owner(input);
        snprintf(key, sizeof key, "%s:hessian", name);
        if (rc == 0 && owner == slot) {
            const size_t n = (size_t)in;
            rc = add_symmetric(e, key, st->hessian[input] + (size_t)l * n * n, (uint64_t)n,
                               tokens);
        } else if (rc == 0) {
            snprintf(name, sizeof name, slot_names[owner], l);
            snprintf(target, sizeof target, "%s:hessian", name);
            rc = add_meta(e, key, target);
        }
    }
    return rc;
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
        rc = build_layer(m, st, l, tokens, e);
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
    /* The classifier's input; a shared embedding as a matrix is the classifier. */
    snprintf(name, sizeof name, "%s:hessian", cls);
    if (rc == 0)
        rc = add_symmetric(e, name, st->classifier_hessian, (uint64_t)c->dim, tokens);
    free(values);
    return rc;
}

/* The file's own metadata: what it holds, over how many tokens, from which text. */
static int add_description(entry_list *e, uint64_t tokens, uint64_t seed, int sequences,
                           int length)
{
    char text[256];
    int rc = add_meta(e, "sgfp4-eval",
                      "importance: NAME = mean squared input activation per column; "
                      "NAME:rows = output-side sensitivity per row; NAME:hessian = mean of "
                      "x x^T over the inputs x (docs/encoder.md)");
    snprintf(text, sizeof text, "%llu", (unsigned long long)tokens);
    if (rc == 0)
        rc = add_meta(e, "tokens", text);
    if (rc == 0)
        rc = add_meta(e, "calibration.source", "sgfp4-eval");
    snprintf(text, sizeof text, "%llu", (unsigned long long)seed);
    if (rc == 0)
        rc = add_meta(e, "calibration.seed", text);
    snprintf(text, sizeof text, "%d", sequences);
    if (rc == 0)
        rc = add_meta(e, "calibration.sequences", text);
    snprintf(text, sizeof text, "%d", length);
    if (rc == 0)
        rc = add_meta(e, "calibration.length", text);
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
    for (int in = 0; in < INPUT_COUNT; in++) {
        const size_t n = (size_t)llama_input_size(c, in);
        if (!(st.hessian[in] = calloc((size_t)c->layers * n * n, sizeof(double))))
            rc = -1;
    }
    if (!(st.classifier = calloc((size_t)c->dim, sizeof(double))) ||
        !(st.classifier_out = calloc((size_t)c->vocab, sizeof(double))) ||
        !(st.lookup_out = calloc((size_t)c->vocab, sizeof(double))) ||
        !(st.classifier_hessian = calloc((size_t)c->dim * (size_t)c->dim, sizeof(double))))
        rc = -1;
    if (rc == 0)
        rc = eval_fisher_collect(run->model, seed, sequences, length, &st);
    entry_list e = {0};
    e.cap = (size_t)c->layers * SLOT_COUNT * 3 + 3;
    e.names = calloc(e.cap, sizeof *e.names);
    e.values = calloc(e.cap, sizeof *e.values);
    e.shapes = calloc(e.cap, sizeof *e.shapes);
    e.ranks = calloc(e.cap, sizeof *e.ranks);
    e.meta_cap = (size_t)c->layers * SLOT_COUNT + 6;
    e.meta_keys = calloc(e.meta_cap, sizeof *e.meta_keys);
    e.meta_values = calloc(e.meta_cap, sizeof *e.meta_values);
    if (rc == 0 && !(e.names && e.values && e.shapes && e.ranks && e.meta_keys && e.meta_values))
        rc = -1;
    if (rc == 0)
        rc = add_description(&e, st.tokens, seed, sequences, length);
    if (rc == 0)
        rc = build_entries(run->model, &st, &e);
    if (rc == 0)
        rc = write_entries(&e, out, path);
    for (size_t i = 0; i < e.count; i++)
        free(e.values[i]);
    for (size_t i = 0; i < e.meta_count; i++) {
        free((void *)e.meta_keys[i]);
        free((void *)e.meta_values[i]);
    }
    free(e.names);
    free(e.values);
    free(e.shapes);
    free(e.ranks);
    free(e.meta_keys);
    free(e.meta_values);
    for (int slot = 0; slot < SLOT_COUNT; slot++) {
        free(st.sum[slot]);
        free(st.out[slot]);
    }
    for (int in = 0; in < INPUT_COUNT; in++)
        free(st.hessian[in]);
    free(st.classifier);
    free(st.classifier_out);
    free(st.lookup_out);
    free(st.classifier_hessian);
    return rc;
}
