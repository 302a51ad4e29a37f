/* The importance file (imatrix-style): for every matrix, the mean square of each input
 * activation over calibration text, as float32 vectors keyed by the tensor's name in a
 * safetensors file. The calibration text is sampled from the float32 model itself with its
 * own seed (kept apart from the evaluation's). A shared classifier's statistics are stored
 * under the token embedding's name (its columns are the classifier's inputs).
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static sgfp4_status file_write(void *user, const void *data, size_t size)
{
    return fwrite(data, 1, size, user) == size ? SGFP4_OK : SGFP4_ERR_IO;
}

static int collect(const eval_run *run, uint64_t seed, int sequences, int length,
                   llama_act_stats *st)
{
    const llama_config *c = &run->model->c;
    llama_state *s = llama_state_create(c);
    if (!s)
        return -1;
    for (int k = 0; k < sequences; k++) {
        eval_rng rng;
        eval_rng_seed(&rng, seed, (uint64_t)k);
        int token = BOS;
        for (int pos = 0; pos < length; pos++) {
            const float *logits = llama_forward(run->model, s, token, pos, st);
            token = eval_sample(logits, c->vocab, &rng);
        }
    }
    llama_state_free(s);
    return 0;
}

static int write_file(const llama_config *c, const llama_act_stats *st, const char *path,
                      const char *classifier_name)
{
    const size_t count = (size_t)c->layers * SLOT_COUNT + 1;
    sgfp4_st_entry *entries = calloc(count, sizeof *entries);
    uint64_t *shapes = calloc(count, sizeof *shapes);
    char (*names)[96] = calloc(count, sizeof *names);
    float *vec = malloc((size_t)(c->hidden > c->dim ? c->hidden : c->dim) * sizeof *vec);
    char temp[4096];
    snprintf(temp, sizeof temp, "%s.partial", path);
    FILE *f = entries && shapes && names && vec ? fopen(temp, "wb") : NULL;
    int rc = f ? 0 : -1;
    size_t n = 0;
    for (int l = 0; rc == 0 && l < c->layers; l++)
        for (int slot = 0; slot < SLOT_COUNT; slot++, n++) {
            snprintf(names[n], sizeof names[n], slot_names[slot], l);
            shapes[n] = (uint64_t)slot_inputs(c, slot);
            entries[n] = (sgfp4_st_entry){names[n], SGFP4_ST_F32, 1, &shapes[n]};
        }
    if (rc == 0) {
        snprintf(names[n], sizeof names[n], "%s", classifier_name);
        shapes[n] = (uint64_t)c->dim;
        entries[n] = (sgfp4_st_entry){names[n], SGFP4_ST_F32, 1, &shapes[n]};
    }
    sgfp4_sink sink = {file_write, f};
    sgfp4_st_writer *w = NULL;
    sgfp4_diag diag;
    const char *key = "sgfp4-eval", *value = "mean squared input activation per column";
    if (rc == 0 && sgfp4_st_writer_begin(entries, count, &key, &value, 1, &sink, &w, &diag) !=
                       SGFP4_OK)
        rc = -1;
    const double tokens = st->tokens ? (double)st->tokens : 1.0;
    for (int l = 0; rc == 0 && l < c->layers; l++)
        for (int slot = 0; rc == 0 && slot < SLOT_COUNT; slot++) {
            const int in = slot_inputs(c, slot);
            for (int j = 0; j < in; j++)
                vec[j] = (float)(st->sum[slot][(size_t)l * (size_t)in + (size_t)j] / tokens);
            rc = sgfp4_st_writer_write(w, vec, (size_t)in * sizeof *vec) == SGFP4_OK ? 0 : -1;
        }
    for (int j = 0; rc == 0 && j < c->dim; j++)
        vec[j] = (float)(st->classifier[j] / tokens);
    if (rc == 0)
        rc = sgfp4_st_writer_write(w, vec, (size_t)c->dim * sizeof *vec) == SGFP4_OK &&
                     sgfp4_st_writer_finish(w, &diag) == SGFP4_OK
                 ? 0
                 : -1;
    sgfp4_st_writer_free(w);
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(temp, path) != 0)
        rc = -1;
    if (rc != 0) {
        if (f)
            unlink(temp);
        fprintf(stderr, "sgfp4-eval: cannot write %s\n", path);
    }
    free(entries);
    free(shapes);
    free(names);
    free(vec);
    return rc;
}

int eval_imatrix_write(const eval_run *run, const llama_config *c, uint64_t seed,
                       int sequences, int length, const char *path)
{
    llama_act_stats st;
    memset(&st, 0, sizeof st);
    int rc = 0;
    for (int slot = 0; slot < SLOT_COUNT; slot++)
        if (!(st.sum[slot] = calloc((size_t)c->layers * (size_t)slot_inputs(c, slot),
                                    sizeof(double))))
            rc = -1;
    if (!(st.classifier = calloc((size_t)c->dim, sizeof(double))))
        rc = -1;
    if (rc == 0)
        rc = collect(run, seed, sequences, length, &st);
    const int shared = run->model->classifier == run->model->tok_embeddings;
    if (rc == 0)
        rc = write_file(c, &st, path, shared ? "tok_embeddings.weight" : "output.weight");
    for (int slot = 0; slot < SLOT_COUNT; slot++)
        free(st.sum[slot]);
    free(st.classifier);
    return rc;
}
