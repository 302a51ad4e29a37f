/* Scoring a model against the float32 reference, teacher-forced along the reference's
 * sampled sequences: at every position the KL divergence KL(P_f32 || P_model) of the
 * next-token distributions, whether both put the same token first, and the model's
 * log-likelihood of the token the float32 model sampled; then greedy text from BOS and from
 * each sequence's prompt, compared with the float32 model's. Sums are taken in sequence order
 * after the threads finish (any thread count gives the same numbers).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

typedef struct seq_result {
    double kl, nll;
    int top1, prompted_match;
} seq_result;

typedef struct score_ctx {
    const llama_model *m;
    const eval_reference *ref;
    seq_result *results;
    atomic_int failed;
} score_ctx;

static int common_prefix(const int *a, const int *b, int n)
{
    int k = 0;
    while (k < n && a[k] == b[k])
        k++;
    return k;
}

static void score_one(void *arg, int seq, llama_state *s)
{
    score_ctx *x = arg;
    const eval_reference *ref = x->ref;
    const int vocab = x->m->c.vocab, len = ref->length;
    const int *tokens = ref->tokens + (size_t)seq * (size_t)len;
    const float *logp = ref->logp + (size_t)seq * (size_t)(len - 1) * (size_t)vocab;
    double *lq = malloc((size_t)vocab * sizeof *lq);
    int *cont = malloc((size_t)(ref->continuation ? ref->continuation : 1) * sizeof *cont);
    if (!lq || !cont) {
        free(lq);
        free(cont);
        atomic_store(&x->failed, 1);
        return;
    }
    seq_result r = {0, 0, 0, 0};
    for (int pos = 0; pos + 1 < len; pos++) {
        const float *logits = llama_forward(x->m, s, tokens[pos], pos);
        eval_log_softmax(logits, vocab, lq);
        const float *lp = logp + (size_t)pos * (size_t)vocab;
        double kl = 0;
        int best_p = 0, best_q = 0;
        for (int i = 0; i < vocab; i++) {
            /* lq rounded as the reference's lp was: a model equal to the reference scores 0 */
            kl += exp((double)lp[i]) * ((double)lp[i] - (double)(float)lq[i]);
            best_p = lp[i] > lp[best_p] ? i : best_p;
            best_q = lq[i] > lq[best_q] ? i : best_q;
        }
        r.kl += kl;
        r.top1 += best_p == best_q;
        r.nll -= lq[tokens[pos + 1]];
    }
    eval_greedy(x->m, s, tokens, ref->prompt, ref->continuation, cont);
    r.prompted_match = common_prefix(cont, ref->prompted + (size_t)seq * (size_t)ref->continuation,
                                     ref->continuation);
    x->results[seq] = r;
    free(lq);
    free(cont);
}

int eval_score_model(const eval_run *run, const eval_reference *ref, eval_score *score)
{
    memset(score, 0, sizeof *score);
    const int n = ref->sequences;
    score_ctx x = {run->model, ref, calloc((size_t)n, sizeof(seq_result)), 0};
    score->sequence_kl = calloc((size_t)n, sizeof *score->sequence_kl);
    int *greedy = calloc((size_t)ref->greedy_steps + 1, sizeof *greedy);
    llama_state *s = llama_state_create(&run->model->c);
    int rc = x.results && score->sequence_kl && greedy && s ? 0 : -1;
    if (rc == 0)
        rc = eval_parallel(run, n, score_one, &x) || atomic_load(&x.failed) ? -1 : 0;
    if (rc == 0) {
        const double positions = (double)n * (ref->length - 1);
        double kl = 0, nll = 0, top1 = 0, prompted = 0;
        for (int k = 0; k < n; k++) {
            kl += x.results[k].kl;
            nll += x.results[k].nll;
            top1 += x.results[k].top1;
            prompted += x.results[k].prompted_match;
            score->sequence_kl[k] = x.results[k].kl / (ref->length - 1);
        }
        score->mean_kl = kl / positions;
        score->top1 = top1 / positions;
        score->perplexity = exp(nll / positions);
        score->prompted_match = prompted / n;
        greedy[0] = ref->greedy[0];
        eval_greedy(run->model, s, greedy, 1, ref->greedy_steps, greedy + 1);
        score->greedy_match = common_prefix(greedy + 1, ref->greedy + 1, ref->greedy_steps);
    }
    llama_state_free(s);
    free(greedy);
    free(x.results);
    if (rc != 0) {
        free(score->sequence_kl);
        score->sequence_kl = NULL;
    }
    return rc;
}
