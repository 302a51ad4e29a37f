/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_timing.h"

#define MAX_THREADS 256

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

typedef struct part {
    uint8_t *dst;
    const uint8_t *src; /* NULL: memset */
    size_t bytes;
} part;

static void *run_part(void *p)
{
    const part *w = p;
    if (w->src)
        memcpy(w->dst, w->src, w->bytes);
    else
        memset(w->dst, 0, w->bytes);
    return NULL;
}

static void run_parts(void *dst, const void *src, size_t bytes, unsigned threads)
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
                          bytes - at < chunk ? bytes - at : chunk};
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
    run_parts(dst, NULL, bytes, threads);
}

void bench_memcpy(void *dst, const void *src, size_t bytes, unsigned threads)
{
    run_parts(dst, src, bytes, threads);
}

/* The last-level cache size: sysfs first (glibc's sysconf reports a host-wide figure on
 * some virtual machines), then sysconf; 0 if neither says. */
static uint64_t llc_bytes(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        unsigned long long n = 0;
        char unit = 0;
        const int got = fscanf(f, "%llu%c", &n, &unit);
        fclose(f);
        if (got >= 1 && n > 0)
            return n << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc > 0)
        return (uint64_t)llc;
#endif
    return 0;
}

size_t bench_llc_bytes(void)
{
    const uint64_t llc = llc_bytes();
    return llc ? (size_t)llc : (size_t)32 << 20;
}
