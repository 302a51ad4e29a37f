/* Running independent work items on several threads. Items are claimed in increasing order
 * from a shared counter, so which thread runs an item is not fixed; callers make every
 * item's result independent of that (each item writes its own output), which keeps outputs
 * identical for any thread count (DECISIONS D7).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_PARALLEL_H
#define SGFP4_COMMON_PARALLEL_H

#include <stdint.h>

/* Work on item `item` (0 <= item < count). `worker` is the calling thread's index in
 * [0, threads), for per-thread scratch memory. */
typedef void (*sgfp4_work_fn)(void *context, uint64_t item, unsigned worker);

/* Runs fn for every item in [0, count) on up to `threads` threads (the calling thread is one
 * of them; 0 or 1 means run everything on the calling thread). Returns when all items are
 * done. If threads cannot be started, the calling thread does the remaining work. */
void sgfp4_parallel_for(uint64_t count, unsigned threads, sgfp4_work_fn fn, void *context);

/* Number of online CPUs (at least 1). */
unsigned sgfp4_cpu_count(void);

#endif
