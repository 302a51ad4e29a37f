/* A caller-owned pool of worker threads (sgfp4_thread_pool), so that calls made many times a
 * second (the products of token generation) neither start threads nor allocate.
 *
 * One run at a time (concurrent callers take turns on `call`). A run posts a job under
 * `lock`: its generation number, function, context and item count. Items are claimed from
 * `claim`, which packs the generation with the next item index, so that a worker that wakes
 * late, after its run finished and the next one was posted, cannot claim an item of a run it
 * did not read the function and context of (its compare-and-swap fails on the generation).
 * The caller runs items too and returns once every item is done (`done`), which is when
 * no worker can touch the job's context again. Idle workers spin for up to SPIN_NS on
 * `posted` (back-to-back calls find them awake), then sleep on `wake`.
 * SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

#include "common/pool.h"

/* Item indices take the low ITEM_BITS bits of `claim`, the generation the rest (modulo
 * 2^24: a worker would have to stall between reading a job and claiming from it while
 * 2^24 further runs complete for a stale claim to succeed). */
#define ITEM_BITS 40
#define ITEM_MASK ((UINT64_C(1) << ITEM_BITS) - 1)
/* How long an idle worker (or a waiting caller) spins before it sleeps: about the gap
 * between two products of one token, so that back-to-back calls find the workers awake.
 * Timed by the clock, not by a count of pauses (a pause takes 10 to 150 cycles by CPU). */
#define SPIN_NS 50000
#define SPIN_CHECK 32 /* pauses between two readings of the clock */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Spins until *word equals `value` (reached) or differs from it (!reached), or *quit (if
 * given) is set, or SPIN_NS pass; true if one of the conditions was met. */
static bool spin_until(const _Atomic uint64_t *word, bool reached, uint64_t value,
                       const _Atomic bool *quit)
{
    const uint64_t start = now_ns();
    for (;;) {
        for (unsigned i = 0; i < SPIN_CHECK; i++) {
            const uint64_t v = atomic_load_explicit(word, memory_order_acquire);
            if (reached ? v == value : v != value)
                return true;
            if (quit && atomic_load_explicit(quit, memory_order_relaxed))
                return true;
            CPU_RELAX();
        }
        if (now_ns() - start > SPIN_NS)
            return false;
    }
}

typedef struct worker {
    sgfp4_thread_pool *pool;
    unsigned index; /* 1 .. workers; the caller is 0 */
    pthread_t id;
} worker;

struct sgfp4_thread_pool {
    unsigned workers; /* started threads (the caller not counted) */
    worker *threads;
    pthread_mutex_t call; /* held by the run in progress */
    pthread_mutex_t lock; /* the job fields, sleepers; posted and quit change under it */
    pthread_cond_t wake, finished;
    /* the job of generation `posted` */
    sgfp4_work_fn fn;
    void *context;
    uint64_t count;
    unsigned wanted; /* threads in all this run uses: workers 1 .. wanted - 1 join */
    unsigned sleepers;
    _Atomic uint64_t posted; /* the current run's generation (spinning workers read it) */
    _Atomic uint64_t claim;  /* generation << ITEM_BITS | next item */
    _Atomic uint64_t done;   /* items of the current run finished */
    _Atomic bool quit;
};

/* Claims the next item of generation `gen`; false when its items are all claimed or the
 * run is over. */
static bool claim_item(sgfp4_thread_pool *p, uint64_t gen, uint64_t count, uint64_t *item)
{
    uint64_t c = atomic_load_explicit(&p->claim, memory_order_relaxed);
    for (;;) {
        if (c >> ITEM_BITS != (gen & (UINT64_MAX >> ITEM_BITS)) || (c & ITEM_MASK) >= count)
            return false;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            *item = c & ITEM_MASK;
            return true;
        }
    }
}

/* Runs items of the given run until none is left; the one that finishes the last item
 * wakes the caller. */
static void drain(sgfp4_thread_pool *p, uint64_t gen, sgfp4_work_fn fn, void *context,
                  uint64_t count, unsigned index)
{
    uint64_t item;
    while (claim_item(p, gen, count, &item)) {
        fn(context, item, index);
        if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 == count) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->finished);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

static void *worker_main(void *arg)
{
    worker *self = arg;
    sgfp4_thread_pool *p = self->pool;
    uint64_t seen = 0;
    for (;;) {
        spin_until(&p->posted, false, seen, &p->quit);
        pthread_mutex_lock(&p->lock);
        while (atomic_load(&p->posted) == seen && !atomic_load(&p->quit)) {
            p->sleepers++;
            pthread_cond_wait(&p->wake, &p->lock);
            p->sleepers--;
        }
        if (atomic_load(&p->quit)) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        seen = atomic_load(&p->posted);
        const bool joins = self->index < p->wanted;
        const sgfp4_work_fn fn = p->fn;
        void *const context = p->context;
        const uint64_t count = p->count;
        pthread_mutex_unlock(&p->lock);
        if (joins)
            drain(p, seen, fn, context, count, self->index);
    }
}

sgfp4_status sgfp4_thread_pool_create(unsigned threads, sgfp4_thread_pool **out)
{
    if (!out)
        return SGFP4_ERR_ARGUMENT;
    *out = NULL;
    if (threads > SGFP4_MAX_THREADS)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_thread_pool *p = calloc(1, sizeof *p);
    if (!p)
        return SGFP4_ERR_NOMEM;
    const unsigned workers = threads > 1 ? threads - 1 : 0;
    p->threads = workers ? calloc(workers, sizeof *p->threads) : NULL;
    if (workers && !p->threads) {
        free(p);
        return SGFP4_ERR_NOMEM;
    }
    pthread_mutex_init(&p->call, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->finished, NULL);
    atomic_init(&p->posted, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->quit, false);
    for (unsigned k = 0; k < workers; k++) {
        p->threads[k] = (worker){p, k + 1, 0};
        if (pthread_create(&p->threads[k].id, NULL, worker_main, &p->threads[k]) != 0) {
            p->workers = k;
            sgfp4_thread_pool_free(p);
            return SGFP4_ERR_NOMEM;
        }
    }
    p->workers = workers;
    *out = p;
    return SGFP4_OK;
}

void sgfp4_thread_pool_free(sgfp4_thread_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->quit, true);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned k = 0; k < pool->workers; k++)
        pthread_join(pool->threads[k].id, NULL);
    pthread_cond_destroy(&pool->finished);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->call);
    free(pool->threads);
    free(pool);
}

unsigned sgfp4_thread_pool_threads(const sgfp4_thread_pool *pool)
{
    return pool ? pool->workers + 1 : 0;
}

void sgfp4_pool_run(sgfp4_thread_pool *p, unsigned threads, uint64_t count, sgfp4_work_fn fn,
                    void *context)
{
    if (count == 0)
        return;
    if (count > ITEM_MASK) /* beyond any caller's item count: run here, in order */
        threads = 1;
    if (threads > p->workers + 1)
        threads = p->workers + 1;
    if ((uint64_t)threads > count)
        threads = (unsigned)count;
    pthread_mutex_lock(&p->call);
    if (threads <= 1) { /* no worker needed: not even woken */
        for (uint64_t i = 0; i < count; i++)
            fn(context, i, 0);
        pthread_mutex_unlock(&p->call);
        return;
    }
    pthread_mutex_lock(&p->lock);
    const uint64_t gen = atomic_load_explicit(&p->posted, memory_order_relaxed) + 1;
    p->fn = fn;
    p->context = context;
    p->count = count;
    p->wanted = threads;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->claim, (gen & (UINT64_MAX >> ITEM_BITS)) << ITEM_BITS,
                          memory_order_release);
    atomic_store_explicit(&p->posted, gen, memory_order_release);
    if (p->sleepers)
        pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    drain(p, gen, fn, context, count, 0);
    if (!spin_until(&p->done, true, count, NULL)) {
        pthread_mutex_lock(&p->lock);
        while (atomic_load_explicit(&p->done, memory_order_acquire) != count)
            pthread_cond_wait(&p->finished, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&p->call);
}
