/* The float32 model's behaviour that candidates are compared with: sequences sampled from
 * it (temperature 1, one random stream per sequence, so any thread count gives the same
 * text), its log-probabilities along them, and its greedy text.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define BOS 1

typedef struct build_ctx {
    const llama_model *m;
    eval_reference *ref;
    uint64_t seed;
    atomic_int failed;
} build_ctx;

void eval_greedy(const llama_model *m, llama_state *s, const int *tokens, int count, int steps,
                 int *out)
{
    const float *logits = NULL;
    for (int pos = 0; pos < count; pos++)
        logits = llama_forward(m, s, tokens[pos], pos);
    for (int k = 0; k < steps; k++) {
        out[k] = eval_argmax(logits, m->c.vocab);
        if (k + 1 < steps)
            logits = llama_forward(m, s, out[k], count + k);
    }
}

static void build_one(void *arg, int seq, llama_state *s)
{
    build_ctx *b = arg;
    eval_reference *ref = b->ref;
    const int vocab = b->m->c.vocab, len = ref->length;
    int *tokens = ref->tokens + (size_t)seq * (size_t)len;
    float *logp = ref->logp + (size_t)seq * (size_t)(len - 1) * (size_t)vocab;
    double *lp = malloc((size_t)vocab * sizeof *lp);
    if (!lp) {
        atomic_store(&b->failed, 1);
        return;
    }
    eval_rng rng;
    eval_rng_seed(&rng, b->seed, (uint64_t)seq);
    tokens[0] = BOS;
    for (int pos = 0; pos + 1 < len; pos++) {
        const float *logits = llama_forward(b->m, s, tokens[pos], pos);
        eval_log_softmax(logits, vocab, lp);
        for (int i = 0; i < vocab; i++)
            logp[(size_t)pos * (size_t)vocab + (size_t)i] = (float)lp[i];
        tokens[pos + 1] = eval_sample(logits, vocab, &rng);
    }
    free(lp);
    eval_greedy(b->m, s, tokens, ref->prompt, ref->continuation,
                ref->prompted + (size_t)seq * (size_t)ref->continuation);
}

int eval_reference_build(const eval_run *run, uint64_t seed, int sequences, int length,
                         int greedy_steps, int prompt, int continuation, eval_reference *ref)
{
    memset(ref, 0, sizeof *ref);
    const llama_config *c = &run->model->c;
    if (length < 2 || length > c->seq_len || prompt < 1 || prompt > length ||
        prompt + continuation > c->seq_len || greedy_steps + 1 > c->seq_len || sequences < 1)
        return -1;
    ref->sequences = sequences;
    ref->length = length;
    ref->greedy_steps = greedy_steps;
    ref->prompt = prompt;
    ref->continuation = continuation;
    ref->tokens = calloc((size_t)sequences * (size_t)length, sizeof *ref->tokens);
    ref->logp = malloc((size_t)sequences * (size_t)(length - 1) * (size_t)c->vocab *
                       sizeof *ref->logp);
    ref->greedy = calloc((size_t)greedy_steps + 1, sizeof *ref->greedy);
    ref->prompted = calloc((size_t)sequences * (size_t)(continuation ? continuation : 1),
                           sizeof *ref->prompted);
    llama_state *s = llama_state_create(c);
    build_ctx b = {run->model, ref, seed, 0};
    int rc = ref->tokens && ref->logp && ref->greedy && ref->prompted && s ? 0 : -1;
    if (rc == 0)
        rc = eval_parallel(run, sequences, build_one, &b) || atomic_load(&b.failed) ? -1 : 0;
    if (rc == 0) {
        ref->greedy[0] = BOS;
        eval_greedy(run->model, s, ref->greedy, 1, greedy_steps, ref->greedy + 1);
    }
    llama_state_free(s);
    if (rc != 0)
        eval_reference_free(ref);
    return rc;
}

void eval_reference_free(eval_reference *ref)
{
    free(ref->tokens);
    free(ref->logp);
    free(ref->greedy);
    free(ref->prompted);
    memset(ref, 0, sizeof *ref);
}
