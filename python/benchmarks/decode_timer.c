/* The C side of python/benchmarks/decode_overhead.py: times sgfp4_decode() called from C,
 * in the same process, on the same tensor view and output buffer as the Python calls it is
 * compared with. Built by the benchmark with the system compiler against the library.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include <sgfp4.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Decodes `calls` times into dst (capacity `cap` bytes), writing each call's seconds to
 * seconds[]; returns the first failing status, or SGFP4_OK. */
int decode_timer_into(const sgfp4_tensor *t, int dtype, void *dst, size_t cap,
                      const sgfp4_decode_options *options, int calls, double *seconds)
{
    for (int i = 0; i < calls; i++) {
        const double t0 = now();
        const sgfp4_status s = sgfp4_decode(t, (sgfp4_dtype)dtype, dst, 0, cap, options);
        seconds[i] = now() - t0;
        if (s != SGFP4_OK)
            return s;
    }
    return SGFP4_OK;
}

/* The same with a fresh output each call (allocation, first-touch page faults and free
 * included), allocated as numpy 1.24 allocates a large array on Linux: malloc, then
 * madvise(MADV_HUGEPAGE) from the first page boundary on (numpy's indicate_hugepages), so
 * that the comparison is of the binding, not of two allocation policies. */
int decode_timer_fresh(const sgfp4_tensor *t, int dtype, size_t cap,
                       const sgfp4_decode_options *options, int calls, double *seconds)
{
    for (int i = 0; i < calls; i++) {
        const double t0 = now();
        unsigned char *dst = malloc(cap);
        if (!dst)
            return SGFP4_ERR_NOMEM;
#ifdef MADV_HUGEPAGE
        const size_t skip = 4096 - (size_t)((uintptr_t)dst % 4096);
        if (cap >= ((size_t)4 << 20) && skip < cap)
            (void)madvise(dst + skip, cap - skip, MADV_HUGEPAGE);
#endif
        const sgfp4_status s = sgfp4_decode(t, (sgfp4_dtype)dtype, dst, 0, cap, options);
        free(dst);
        seconds[i] = now() - t0;
        if (s != SGFP4_OK)
            return s;
    }
    return SGFP4_OK;
}
