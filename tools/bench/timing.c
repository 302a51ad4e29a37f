/* The timing module of the benchmarks (timing.h).
 * SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "timing.h"
#include "sgfp4_experimental.h"

#define MAX_THREADS SGFP4_MAX_THREADS

static int compare_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *values, size_t n)
{
    qsort(values, n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool bench_stats_of(const double *samples, int n, bench_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return true;
    double *v = malloc(sizeof *v * (size_t)n);
    if (!v)
        return false;
    memcpy(v, samples, sizeof *v * (size_t)n);
    out->n = n;
    out->median = bench_median(v, (size_t)n); /* sorts */
    out->best = v[0];
    out->max = v[n - 1];
    for (int i = 0; i < n; i++)
        out->slow += v[i] > BENCH_SLOW_FACTOR * v[0];
    free(v);
    return true;
}

json_t *bench_stats_json(const bench_stats *s)
{
    return json_pack("{s:i,s:f,s:f,s:f,s:i}", "n", s->n, "best_us", s->best * 1e6, "median_us",
                     s->median * 1e6, "max_us", s->max * 1e6, "slow", s->slow);
}

bool bench_warm_up(bool (*step)(void *), void *arg, double seconds)
{
    const double end = tool_now() + seconds;
    while (tool_now() < end)
        if (!step(arg))
            return false;
    return true;
}

typedef enum part_kind { PART_MEMSET, PART_MEMCPY, PART_STREAM } part_kind;

typedef struct part {
    uint8_t *dst;
    const uint8_t *src;
    size_t bytes;
    part_kind kind;
} part;

static void stream_fill(uint8_t *dst, size_t bytes)
{
#if defined(__x86_64__)
    const __m128i v = _mm_set1_epi32(0x3c3c3c3c);
    size_t i = 0;
    for (; i < bytes && ((uintptr_t)(dst + i) & 15u); i++)
        dst[i] = 0x3c;
    for (; i + 64 <= bytes; i += 64) {
        _mm_stream_si128((__m128i *)(dst + i), v);
        _mm_stream_si128((__m128i *)(dst + i + 16), v);
        _mm_stream_si128((__m128i *)(dst + i + 32), v);
        _mm_stream_si128((__m128i *)(dst + i + 48), v);
    }
    _mm_sfence();
    memset(dst + i, 0x3c, bytes - i);
#else
    (void)dst;
    (void)bytes;
#endif
}

static void *run_part(void *p)
{
    const part *w = p;
    if (w->kind == PART_MEMCPY)
        memcpy(w->dst, w->src, w->bytes);
    else if (w->kind == PART_MEMSET)
        memset(w->dst, 0, w->bytes);
    else
        stream_fill(w->dst, w->bytes);
    return NULL;
}

static void run_parts(void *dst, const void *src, size_t bytes, unsigned threads,
                      part_kind kind)
{
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    part parts[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    const size_t chunk = (bytes / threads + 63) & ~(size_t)63;
    unsigned n = 0;
    for (size_t at = 0; at < bytes && n < threads; at += chunk, n++)
        parts[n] = (part){(uint8_t *)dst + at, src ? (const uint8_t *)src + at : NULL,
                          bytes - at < chunk ? bytes - at : chunk, kind};
    bool started[MAX_THREADS] = {false};
    for (unsigned k = 1; k < n; k++)
        started[k] = pthread_create(&ids[k], NULL, run_part, &parts[k]) == 0;
    for (unsigned k = 0; k < n; k++)
        if (!started[k])
            run_part(&parts[k]); /* the calling thread's part, and any that got no thread */
    for (unsigned k = 1; k < n; k++)
        if (started[k])
            pthread_join(ids[k], NULL);
}

void bench_memset(void *dst, size_t bytes, unsigned threads)
{
    run_parts(dst, NULL, bytes, threads, PART_MEMSET);
}

void bench_memcpy(void *dst, const void *src, size_t bytes, unsigned threads)
{
    run_parts(dst, src, bytes, threads, PART_MEMCPY);
}

bool bench_stream_fill(void *dst, size_t bytes, unsigned threads)
{
#if defined(__x86_64__)
    run_parts(dst, NULL, bytes, threads, PART_STREAM);
    return true;
#else
    (void)dst;
    (void)bytes;
    (void)threads;
    return false;
#endif
}

size_t bench_llc_bytes(void)
{
    const uint64_t llc = sgfp4_llc_bytes();
    return llc ? (size_t)llc : (size_t)32 << 20;
}

bool bench_ring_make(bench_ring *r, size_t bytes, unsigned offset)
{
    const size_t want = 4 * bench_llc_bytes();
    r->bytes = bytes;
    r->count = (want + bytes - 1) / bytes;
    if (r->count < 2)
        r->count = 2;
    r->buffers = calloc(r->count, sizeof *r->buffers);
    r->allocs = calloc(r->count, sizeof *r->allocs);
    if (!r->buffers || !r->allocs)
        return false;
    for (size_t i = 0; i < r->count; i++) {
        r->allocs[i] = aligned_alloc(64, (bytes + offset + 63) & ~(size_t)63);
        if (!r->allocs[i])
            return false;
        r->buffers[i] = r->allocs[i] + offset;
        memset(r->buffers[i], 1, bytes); /* fault the pages in now */
    }
    return true;
}

void bench_ring_free(bench_ring *r)
{
    for (size_t i = 0; r->allocs && i < r->count; i++)
        free(r->allocs[i]);
    free(r->allocs);
    free(r->buffers);
}
