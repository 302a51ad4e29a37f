/* Sequences are scored on several threads; each writes only its own results, so the sums
 * (taken afterwards in sequence order) do not depend on the thread count.
 * SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "eval.h"

typedef struct pool {
    int count;
    atomic_int next;
    void (*fn)(void *ctx, int item, llama_state *state);
    void *ctx;
    const llama_config *config;
    atomic_int failed;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    llama_state *s = llama_state_create(p->config);
    if (!s) {
        atomic_store(&p->failed, 1);
        return NULL;
    }
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->count;)
        p->fn(p->ctx, i, s);
    llama_state_free(s);
    return NULL;
}

int eval_parallel(const eval_run *run, int count, void (*fn)(void *, int, llama_state *),
                  void *ctx)
{
    pool p = {count, 0, fn, ctx, &run->model->c, 0};
    int threads = run->threads < 1 ? 1 : run->threads > 64 ? 64 : run->threads;
    pthread_t ids[64];
    int started = 0;
    for (; started < threads - 1; started++)
        if (pthread_create(&ids[started], NULL, worker, &p) != 0)
            break;
    worker(&p);
    for (int i = 0; i < started; i++)
        pthread_join(ids[i], NULL);
    return atomic_load(&p.failed) ? -1 : 0;
}
