/* Running work items on a pool of threads (sgfp4_thread_pool, include/sgfp4.h), with the
 * contract of sgfp4_parallel_for (common/parallel.h): items claimed in increasing order by
 * whichever thread is free, any item on any thread, every item done when the call returns.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_POOL_H
#define SGFP4_COMMON_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/parallel.h"
#include "sgfp4.h"

/* Starts a pool of `threads` threads in all (the caller's included; at most
 * SGFP4_MAX_THREADS), its memory from alloc (NULL: malloc). When a thread cannot be
 * started: SGFP4_ERR_NOMEM if `all`, else the pool has the threads that could be started.
 * *out is NULL on failure. Free with sgfp4_thread_pool_free(). */
sgfp4_status sgfp4_pool_create(unsigned threads, const sgfp4_allocator *alloc, bool all,
                               sgfp4_thread_pool **out);

/* Runs fn for every item in [0, count) on at most `threads` threads of `pool` (the calling
 * thread is one of them; at most the pool's own count). One run at a time per pool: a
 * concurrent caller waits for the run in progress. Starts no thread and allocates nothing. */
void sgfp4_pool_run(sgfp4_thread_pool *pool, unsigned threads, uint64_t count, sgfp4_work_fn fn,
                    void *context);

/* A check the calling thread makes before each item it runs: true stops the run (the items
 * not begun are not run; those begun are finished before the run returns). */
typedef struct sgfp4_pool_stop {
    bool (*check)(void *user);
    void *user;
} sgfp4_pool_stop;

/* sgfp4_pool_run() that stops when `stop` (NULL: never) says so; true if it stopped. */
bool sgfp4_pool_run_until(sgfp4_thread_pool *pool, unsigned threads, uint64_t count,
                          sgfp4_work_fn fn, void *context, const sgfp4_pool_stop *stop);

#endif
