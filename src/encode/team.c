/* A team of worker threads kept for the whole of one encode call (team.h).
 * SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "container/tensor.h"

#include "encode/team.h"

typedef struct slot {
    struct sgfp4_team *team;
    unsigned index;
} slot;

struct sgfp4_team {
    const sgfp4_allocator *alloc;
    unsigned threads; /* the caller included */
    pthread_t ids[SGFP4_MAX_THREADS];
    slot slots[SGFP4_MAX_THREADS];
    unsigned started;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    /* the job: written under lock, published by generation (release) */
    _Atomic uint64_t generation; /* bumped for every job; workers run each generation once */
    int quit;
    _Atomic unsigned busy;       /* workers still on the current job */
    sgfp4_work_fn fn;
    void *context;
    uint64_t count;
    _Atomic uint64_t next; /* the next item to claim */
};

static void drain(sgfp4_team *t, unsigned index)
{
    for (;;) {
        const uint64_t item = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
        if (item >= t->count)
            return;
        t->fn(t->context, item, index);
    }
}

/* Jobs come back to back (rate control runs one per bisection step, a fraction of a
 * millisecond each): a worker that has finished one, and the caller waiting for the end of
 * one, look again this many times before sleeping, so that a short job does not end before
 * the other thread wakes up. Each look yields the processor: on a machine with other work
 * that work runs meanwhile, on an idle one the yield returns at once. */
#define SPIN_ROUNDS 200u

static inline void relax(void) { sched_yield(); }

static void *worker_main(void *p)
{
    const slot *s = p;
    sgfp4_team *t = s->team;
    const unsigned index = s->index;
    uint64_t seen = 0;
    for (;;) {
        for (unsigned i = 0; i < SPIN_ROUNDS; i++) {
            if (atomic_load_explicit(&t->generation, memory_order_acquire) != seen)
                break;
            relax();
        }
        pthread_mutex_lock(&t->lock);
        while (!t->quit && atomic_load_explicit(&t->generation, memory_order_acquire) == seen)
            pthread_cond_wait(&t->wake, &t->lock);
        const int quit = t->quit;
        pthread_mutex_unlock(&t->lock);
        if (quit)
            break;
        seen = atomic_load_explicit(&t->generation, memory_order_acquire);
        drain(t, index);
        if (atomic_fetch_sub_explicit(&t->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&t->lock);
            pthread_cond_signal(&t->done);
            pthread_mutex_unlock(&t->lock);
        }
    }
    return NULL;
}

sgfp4_team *sgfp4_team_create(unsigned threads, const sgfp4_allocator *alloc)
{
    sgfp4_team *t = sgfp4_alloc_with(alloc, sizeof *t);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->alloc = alloc;
    t->threads = threads < 1 ? 1 : threads > SGFP4_MAX_THREADS ? SGFP4_MAX_THREADS : threads;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        sgfp4_free_with(alloc, t);
        return NULL;
    }
    if (pthread_cond_init(&t->wake, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        sgfp4_free_with(alloc, t);
        return NULL;
    }
    if (pthread_cond_init(&t->done, NULL) != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        sgfp4_free_with(alloc, t);
        return NULL;
    }
    /* Workers that cannot be started are done without: the caller's thread does the rest. */
    for (unsigned k = 1; k < t->threads; k++) {
        t->slots[t->started] = (slot){t, k};
        if (pthread_create(&t->ids[t->started], NULL, worker_main, &t->slots[t->started]) != 0)
            break;
        t->started++;
    }
    return t;
}

void sgfp4_team_run(sgfp4_team *t, uint64_t count, sgfp4_work_fn fn, void *context)
{
    if (!t || t->started == 0 || count < 2) {
        for (uint64_t i = 0; i < count; i++)
            fn(context, i, 0);
        return;
    }
    pthread_mutex_lock(&t->lock);
    t->fn = fn;
    t->context = context;
    t->count = count;
    atomic_store_explicit(&t->next, 0, memory_order_relaxed);
    atomic_store_explicit(&t->busy, t->started, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->generation, 1, memory_order_release);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    drain(t, 0);
    for (unsigned i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load_explicit(&t->busy, memory_order_acquire) == 0)
            return;
        relax();
    }
    pthread_mutex_lock(&t->lock);
    while (atomic_load_explicit(&t->busy, memory_order_acquire) > 0)
        pthread_cond_wait(&t->done, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

void sgfp4_team_free(sgfp4_team *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->quit = 1;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (unsigned k = 0; k < t->started; k++)
        pthread_join(t->ids[k], NULL);
    pthread_cond_destroy(&t->wake);
    pthread_cond_destroy(&t->done);
    pthread_mutex_destroy(&t->lock);
    sgfp4_free_with(t->alloc, t);
}
