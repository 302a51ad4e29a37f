/* Running work items on a caller-owned thread pool (sgfp4_thread_pool, include/sgfp4.h),
 * with the contract of sgfp4_parallel_for (common/parallel.h): items claimed in increasing
 * order, any item on any thread, every item done when the call returns.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_POOL_H
#define SGFP4_COMMON_POOL_H

#include <stdint.h>

#include "common/parallel.h"
#include "sgfp4.h"

/* Runs fn for every item in [0, count) on at most `threads` threads of `pool` (the calling
 * thread is one of them; at most the pool's own count). One run at a time per pool: a
 * concurrent caller waits for the run in progress. Starts no thread and allocates nothing. */
void sgfp4_pool_run(sgfp4_thread_pool *pool, unsigned threads, uint64_t count, sgfp4_work_fn fn,
                    void *context);

#endif
