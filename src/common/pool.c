/* A pool of worker threads (sgfp4_thread_pool, and the encoder's team on top of it), so that
 * calls made many times a second (the products of token generation, the passes of one
 * encode) neither start threads nor allocate.
 *
 * One run at a time (concurrent callers take turns on `call`). A run posts a job: its
 * function, context, item count and thread count, then its generation number in
 * `announced`. Items are claimed one at a time from `claim`, which packs the generation
 * with the next item index, by whichever thread runs next, the caller's included: a worker
 * that gets no processor during a run (a busy machine) claims nothing and the others do
 * its share, so a run waits only for items a thread has already begun. A worker that reads
 * the job late, while the next one is being posted, may read a mix of two jobs, but it
 * cannot claim an item with it: its compare-and-swap fails on the generation.
 *
 * Waits block, and waking never waits: each thread that may sleep (every worker, and the
 * caller waiting for the last items) has a semaphore and an `asleep` flag. It sets the flag,
 * looks at what it waits for once more, then sleeps; whoever changes that clears the flag
 * and, if it was set, posts the semaphore. (A condition variable would do, but glibc's
 * signal can wait for an earlier waiter that was woken and has not run yet: on a busy
 * machine, a whole time slice of another process.) Nothing yields the processor in a loop
 * either, which on a busy machine hands it to another process for a whole time slice.
 * Before sleeping, a thread spins for at most SPIN_NS on pause instructions, so that
 * back-to-back runs on an idle machine find the workers awake.
 * SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu, pthread_setaffinity_np */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

#include "common/alloc.h"
#include "common/clock.h"
#include "common/pool.h"

/* Item indices take the low ITEM_BITS bits of `claim`, the generation the rest (modulo
 * 2^24: a worker would have to stall between reading a job and claiming from it while
 * 2^24 further runs complete for a stale claim to succeed). */
#define ITEM_BITS 40
#define ITEM_MASK ((UINT64_C(1) << ITEM_BITS) - 1)
#define GEN_MASK (UINT64_MAX >> ITEM_BITS)
/* How long an idle worker, or a caller waiting for the last items, spins before it sleeps:
 * about the gap between two products of one token. Timed by the clock, not by a count of
 * pauses (a pause takes 10 to 150 cycles by CPU). */
#define SPIN_NS 50000
#define SPIN_CHECK 32 /* pauses between two readings of the clock */

/* Whether *word equals `value` (reached) or differs from it (!reached). */
static bool holds(const _Atomic uint64_t *word, bool reached, uint64_t value)
{
    const uint64_t v = atomic_load(word);
    return reached ? v == value : v != value;
}

/* Spins until holds(word, reached, value), or SPIN_NS pass; whether it holds. */
static bool spin_until(const _Atomic uint64_t *word, bool reached, uint64_t value)
{
    const uint64_t start = sgfp4_now_ns();
    for (;;) {
        for (unsigned i = 0; i < SPIN_CHECK; i++) {
            if (holds(word, reached, value))
                return true;
            CPU_RELAX();
        }
        if (sgfp4_now_ns() - start > SPIN_NS)
            return false;
    }
}

/* A thread that may sleep until another changes a word it watches. */
typedef struct sleeper {
    sem_t wake;
    _Atomic bool asleep;
} sleeper;

/* Sleeps until holds(word, reached, value) or *quit (if given). The flag is set before the
 * word is read, and the waker changes the word before it reads the flag (every access
 * sequentially consistent): one of them sees the other's change, so no wake is lost. A
 * wake left over from an earlier sleep only makes the loop look again. */
static void doze(sleeper *s, const _Atomic uint64_t *word, bool reached, uint64_t value,
                 const _Atomic bool *quit)
{
    for (;;) {
        atomic_store(&s->asleep, true);
        if (holds(word, reached, value) || (quit && atomic_load(quit)))
            break;
        while (sem_wait(&s->wake) != 0 && errno == EINTR) {
        }
    }
    atomic_store(&s->asleep, false);
}

/* Wakes the sleeper if it sleeps, after the caller changed the word it watches. */
static void wake_up(sleeper *s)
{
    if (atomic_exchange(&s->asleep, false))
        sem_post(&s->wake);
}

typedef struct worker {
    sgfp4_thread_pool *pool;
    unsigned index; /* 1 .. workers; the caller is 0 */
    pthread_t id;
    sleeper idle;
} worker;

struct sgfp4_thread_pool {
    sgfp4_allocator alloc; /* the pool's memory */
    unsigned workers;      /* started threads (the caller not counted) */
    unsigned slots;        /* threads[] made, with their semaphores: workers or more */
    worker *threads;
    pthread_mutex_t call; /* held by the run in progress */
    sleeper caller;       /* the run's caller, waiting for its last items */
    /* the job of generation `announced` (atomic: a late worker may read them while the next
     * job is posted; see above) */
    _Atomic(sgfp4_work_fn) fn;
    _Atomic(void *) context;
    _Atomic uint64_t count;
    _Atomic unsigned wanted;    /* threads in all the run uses: workers 1 .. wanted - 1 join */
    _Atomic uint64_t announced; /* the generation of the posted job */
    _Atomic uint64_t claim;     /* generation << ITEM_BITS | next item */
    _Atomic uint64_t done;      /* items of the current run finished (or skipped) */
    _Atomic uint64_t caller_ran; /* the last generation in which the caller ran an item */
    _Atomic int caller_cpu;      /* the processor the caller posted the current job from */
    _Atomic bool quit;
};

/* Claims the next item of generation `gen`; false when its items are all claimed or the
 * run is over. */
static bool claim_item(sgfp4_thread_pool *p, uint64_t gen, uint64_t count, uint64_t *item)
{
    uint64_t c = atomic_load_explicit(&p->claim, memory_order_relaxed);
    for (;;) {
        if (c >> ITEM_BITS != (gen & GEN_MASK) || (c & ITEM_MASK) >= count)
            return false;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            *item = c & ITEM_MASK;
            return true;
        }
    }
}

/* Counts n items of the run as finished; the thread that completes the run wakes the
 * caller. */
static void finish_items(sgfp4_thread_pool *p, uint64_t n, uint64_t count)
{
    if (atomic_fetch_add(&p->done, n) + n == count)
        wake_up(&p->caller);
}

/* Claims every item of run `gen` not claimed yet, so that no thread starts one, and counts
 * them as finished. */
static void close_run(sgfp4_thread_pool *p, uint64_t gen, uint64_t count)
{
    uint64_t c = atomic_load_explicit(&p->claim, memory_order_relaxed);
    for (;;) {
        if (c >> ITEM_BITS != (gen & GEN_MASK) || (c & ITEM_MASK) >= count)
            return;
        const uint64_t closed = (c & ~ITEM_MASK) | count;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &c, closed, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            finish_items(p, count - (c & ITEM_MASK), count);
            return;
        }
    }
}

/* Runs items of run `gen` until none is left, or (the caller, with a stop check) until
 * stop(stop_user) says so; true if stopped. */
static bool drain(sgfp4_thread_pool *p, uint64_t gen, sgfp4_work_fn fn, void *context,
                  uint64_t count, unsigned index, const sgfp4_pool_stop *stop)
{
    uint64_t item;
    for (;;) {
        if (stop && stop->check(stop->user)) {
            close_run(p, gen, count);
            return true;
        }
        if (!claim_item(p, gen, count, &item))
            return false;
        if (index == 0)
            atomic_store_explicit(&p->caller_ran, gen, memory_order_relaxed);
        fn(context, item, index);
        finish_items(p, 1, count);
    }
}

/* The processor the calling thread runs on, or -1 where that cannot be asked. */
static int current_cpu(void)
{
#ifdef __linux__
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Moves the calling thread off processor `cpu` to another one it may run on (its allowed
 * set narrowed for a moment, then restored: afterwards it is allowed what it was before);
 * false where there is no other or the system cannot be asked. */
static bool move_off(int cpu)
{
#ifdef __linux__
    cpu_set_t allowed, others;
    if (cpu >= CPU_SETSIZE ||
        pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0)
        return false;
    others = allowed;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0 ||
        pthread_setaffinity_np(pthread_self(), sizeof others, &others) != 0)
        return false;
    pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
    return true;
#else
    (void)cpu;
    return false;
#endif
}

/* A worker waits for a job (spinning first only after a run in which the caller ran items
 * too, so that it is not spinning on the caller's processor), then joins it. On a busy
 * machine, with no idle processor, the kernel may wake it on the processor the caller
 * posted from, where it stops the caller and would only share that processor with it
 * (and, once woken there, it is woken there again): it moves to another processor first,
 * or, if it cannot, leaves this job to the caller. */
static void *worker_main(void *arg)
{
    worker *self = arg;
    sgfp4_thread_pool *p = self->pool;
    uint64_t seen = 0;
    bool spin = false;
    for (;;) {
        if (!spin || !spin_until(&p->announced, false, seen))
            doze(&self->idle, &p->announced, false, seen, &p->quit);
        if (atomic_load(&p->quit))
            return NULL;
        seen = atomic_load(&p->announced);
        const sgfp4_work_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
        void *const context = atomic_load_explicit(&p->context, memory_order_relaxed);
        const uint64_t count = atomic_load_explicit(&p->count, memory_order_relaxed);
        const int cpu = current_cpu();
        spin = false;
        if (self->index >= atomic_load_explicit(&p->wanted, memory_order_relaxed) ||
            (cpu >= 0 && cpu == atomic_load_explicit(&p->caller_cpu, memory_order_relaxed) &&
             !move_off(cpu)))
            continue;
        drain(p, seen, fn, context, count, self->index, NULL);
        spin = atomic_load_explicit(&p->caller_ran, memory_order_relaxed) == seen;
    }
}

static void pool_release(sgfp4_thread_pool *p, unsigned started)
{
    atomic_store(&p->quit, true);
    for (unsigned k = 0; k < started; k++) {
        sem_post(&p->threads[k].idle.wake);
        pthread_join(p->threads[k].id, NULL);
    }
    for (unsigned k = 0; k < p->slots; k++)
        sem_destroy(&p->threads[k].idle.wake);
    sem_destroy(&p->caller.wake);
    pthread_mutex_destroy(&p->call);
    const sgfp4_allocator alloc = p->alloc;
    sgfp4_free_with(&alloc, p->threads);
    sgfp4_free_with(&alloc, p);
}

sgfp4_status sgfp4_pool_create(unsigned threads, const sgfp4_allocator *alloc, bool all,
                               sgfp4_thread_pool **out)
{
    *out = NULL;
    sgfp4_thread_pool *p = sgfp4_alloc_with(alloc, sizeof *p);
    if (!p)
        return SGFP4_ERR_NOMEM;
    memset(p, 0, sizeof *p);
    if (alloc)
        p->alloc = *alloc;
    const unsigned workers = threads > 1 ? threads - 1 : 0;
    p->threads = workers ? sgfp4_alloc_with(alloc, workers * sizeof *p->threads) : NULL;
    if (workers && !p->threads) {
        sgfp4_free_with(alloc, p);
        return SGFP4_ERR_NOMEM;
    }
    /* Linux's (glibc, musl) initialisers of these cannot fail. */
    pthread_mutex_init(&p->call, NULL);
    sem_init(&p->caller.wake, 0, 0);
    atomic_init(&p->caller.asleep, false);
    atomic_init(&p->fn, NULL);
    atomic_init(&p->context, NULL);
    atomic_init(&p->count, 0);
    atomic_init(&p->wanted, 0);
    atomic_init(&p->announced, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->caller_ran, 0);
    atomic_init(&p->caller_cpu, -1);
    atomic_init(&p->quit, false);
    for (unsigned k = 0; k < workers; k++) {
        p->threads[k].pool = p;
        p->threads[k].index = k + 1;
        sem_init(&p->threads[k].idle.wake, 0, 0);
        atomic_init(&p->threads[k].idle.asleep, false);
    }
    p->slots = workers;
    unsigned started = 0;
    while (started < workers &&
           pthread_create(&p->threads[started].id, NULL, worker_main, &p->threads[started]) == 0)
        started++;
    if (started < workers && all) {
        pool_release(p, started);
        return SGFP4_ERR_NOMEM;
    }
    p->workers = started;
    *out = p;
    return SGFP4_OK;
}

sgfp4_status sgfp4_thread_pool_create(unsigned threads, sgfp4_thread_pool **out)
{
    if (!out)
        return SGFP4_ERR_ARGUMENT;
    *out = NULL;
    if (threads > SGFP4_MAX_THREADS)
        return SGFP4_ERR_ARGUMENT;
    return sgfp4_pool_create(threads, NULL, true, out);
}

void sgfp4_thread_pool_free(sgfp4_thread_pool *pool)
{
    if (pool)
        pool_release(pool, pool->workers);
}

unsigned sgfp4_thread_pool_threads(const sgfp4_thread_pool *pool)
{
    return pool ? pool->workers + 1 : 0;
}

bool sgfp4_pool_run_until(sgfp4_thread_pool *p, unsigned threads, uint64_t count,
                          sgfp4_work_fn fn, void *context, const sgfp4_pool_stop *stop)
{
    if (count == 0)
        return false;
    if (count > ITEM_MASK) /* beyond any caller's item count: run here, in order */
        threads = 1;
    if (threads > p->workers + 1)
        threads = p->workers + 1;
    if ((uint64_t)threads > count)
        threads = (unsigned)count;
    pthread_mutex_lock(&p->call);
    if (threads <= 1) { /* no worker needed: not even woken */
        bool stopped = false;
        for (uint64_t i = 0; i < count && !stopped; i++) {
            if (stop && stop->check(stop->user))
                stopped = true;
            else
                fn(context, i, 0);
        }
        pthread_mutex_unlock(&p->call);
        return stopped;
    }
    const uint64_t gen = atomic_load_explicit(&p->announced, memory_order_relaxed) + 1;
    atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->context, context, memory_order_relaxed);
    atomic_store_explicit(&p->count, count, memory_order_relaxed);
    atomic_store_explicit(&p->wanted, threads, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->claim, (gen & GEN_MASK) << ITEM_BITS, memory_order_relaxed);
    atomic_store_explicit(&p->caller_cpu, current_cpu(), memory_order_relaxed);
    atomic_store(&p->announced, gen); /* publishes the fields above */
    for (unsigned k = 0; k + 1 < threads; k++)
        wake_up(&p->threads[k].idle);

    const bool stopped = drain(p, gen, fn, context, count, 0, stop);
    if (!spin_until(&p->done, true, count))
        doze(&p->caller, &p->done, true, count, NULL);
    pthread_mutex_unlock(&p->call);
    return stopped;
}

void sgfp4_pool_run(sgfp4_thread_pool *pool, unsigned threads, uint64_t count, sgfp4_work_fn fn,
                    void *context)
{
    sgfp4_pool_run_until(pool, threads, count, fn, context, NULL);
}
