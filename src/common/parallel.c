/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/parallel.h"
#include "sgfp4.h"

#define MAX_THREADS SGFP4_MAX_THREADS

typedef struct shared_work {
    _Atomic uint64_t next;
    uint64_t count;
    sgfp4_work_fn fn;
    void *context;
} shared_work;

typedef struct worker_arg {
    shared_work *work;
    unsigned index;
} worker_arg;

static void drain(shared_work *w, unsigned index)
{
    for (;;) {
        const uint64_t item = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed);
        if (item >= w->count)
            return;
        w->fn(w->context, item, index);
    }
}

static void *worker_main(void *p)
{
    worker_arg *a = p;
    drain(a->work, a->index);
    return NULL;
}

void sgfp4_parallel_for(uint64_t count, unsigned threads, sgfp4_work_fn fn, void *context)
{
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if ((uint64_t)threads > count)
        threads = (unsigned)count;
    shared_work work = {0, count, fn, context};
    if (threads <= 1) {
        drain(&work, 0);
        return;
    }
    pthread_t ids[MAX_THREADS];
    worker_arg args[MAX_THREADS];
    unsigned started = 0;
    for (unsigned k = 1; k < threads; k++) {
        args[k] = (worker_arg){&work, k};
        if (pthread_create(&ids[k], NULL, worker_main, &args[k]) != 0)
            break;
        started = k;
    }
    drain(&work, 0);
    for (unsigned k = 1; k <= started; k++)
        pthread_join(ids[k], NULL);
}

unsigned sgfp4_cpu_count(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}
