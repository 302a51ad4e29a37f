/* The clocks of the programs (the sgfp4 tool, its benchmarks, sgfp4-encode-bench) and of the
 * tests that time something: one place that reads them. (The library has its own,
 * src/common/clock.h: the programs use the public API only.) Only differences of two
 * readings mean anything.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TOOL_CLOCK_H
#define SGFP4_TOOL_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: wall time. */
static inline double tool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of CPU time of this process (all its threads): less disturbed than wall time by
 * other work on the machine. */
static inline double tool_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
