/* The monotonic clock, read in one place for the whole library: the thread pool's spin
 * bound, the encode team's cancel pacing, the model jobs' progress reports and the Vulkan
 * backend's submission timings. Only differences of two readings mean anything.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_CLOCK_H
#define SGFP4_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t sgfp4_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double sgfp4_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
