/* Timing helpers of `sgfp4 bench`: medians (the clock: tools/common/clock.h), and the memory ceilings
 * (memset, memcpy) run on several threads the way a threaded decode splits its output.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_BENCH_TIMING_H
#define SGFP4_BENCH_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Median of values[0..n) (sorts them). */
double bench_median(double *values, size_t n);
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
