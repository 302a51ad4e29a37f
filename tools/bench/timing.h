/* The timing module of every benchmark of `sgfp4 bench`, CPU and GPU: the clock (tool_now,
 * tools/common/tool_clock.h), medians and the statistics of repeated timings, and the CPU's
 * memory ceilings (memset, memcpy, non-temporal fill) run on several threads the way a
 * threaded decode splits its output. (The GPU's copy ceiling needs a device: bench_vulkan.h.)
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_BENCH_TIMING_H
#define SGFP4_BENCH_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tool_clock.h"

/* Median of values[0..n) (sorts them; n >= 1; the mean of the middle two for even n). */
double bench_median(double *values, size_t n);

/* A repetition slower than this factor times the fastest is a slow outlier. */
#define BENCH_SLOW_FACTOR 1.5

/* The statistics of n timings, in seconds: the fastest, the median (bench_median), the
 * slowest, and how many took more than BENCH_SLOW_FACTOR times the fastest. */
typedef struct bench_stats {
    int n;
    double best, median, max;
    int slow;
} bench_stats;
/* The statistics of samples[0..n) (left as they are); all zero for n < 1. False (and zeros)
 * when out of memory. */
bool bench_stats_of(const double *samples, int n, bench_stats *out);
/* {"n", "best_us", "median_us", "max_us", "slow"}. */
json_t *bench_stats_json(const bench_stats *s);
/* Runs `step` until `seconds` have passed (a warm-up: the clocks up, the caches and the
 * driver's lazily made state filled before anything is measured); false as soon as a step
 * fails. */
bool bench_warm_up(bool (*step)(void *), void *arg, double seconds);

/* memset(dst, 0, bytes) / memcpy(dst, src, bytes) split into `threads` contiguous parts,
 * each on its own thread (the calling thread takes the first). */
void bench_memset(void *dst, size_t bytes, unsigned threads);
void bench_memcpy(void *dst, const void *src, size_t bytes, unsigned threads);
/* A third, informative ceiling: filling dst with 16-byte non-temporal vector stores, the
 * fastest way vector code (a decoder) can write memory it does not read; returns false where
 * the machine has no such stores (then nothing is written). */
bool bench_stream_fill(void *dst, size_t bytes, unsigned threads);
/* Size of the last-level cache in bytes (32 MiB if the system does not say). */
size_t bench_llc_bytes(void);

/* The ring of output buffers a timed round writes: at least 4x the LLC in all, at least 2
 * buffers of `bytes`, each starting `offset` bytes past a 64-byte boundary, pages faulted in
 * (so no round measures the cache or first-touch faults). */
typedef struct bench_ring {
    uint8_t **buffers, **allocs; /* allocs: what to free */
    size_t count, bytes;
} bench_ring;
bool bench_ring_make(bench_ring *r, size_t bytes, unsigned offset);
void bench_ring_free(bench_ring *r);

#endif
