/* The C side of python/benchmarks/decode_overhead.py: times sgfp4_decode() called from C,
 * in the same process, on the same tensor view and output buffer as the Python calls it is
 * compared with. Built by the benchmark with the system compiler against the library.
 *
 * SPDX-License-Identifier: MIT
 */
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
 * included), allocated as numpy allocates large arrays on Linux: aligned to 2 MiB and
 * advised for transparent huge pages (numpy's default there), so that the comparison is of
 * the binding, not of two allocation policies. */
int decode_timer_fresh(const sgfp4_tensor *t, int dtype, size_t cap,
                       const sgfp4_decode_options *options, int calls, double *seconds)
{
    const size_t huge = (size_t)2 << 20;
    for (int i = 0; i < calls; i++) {
        const double t0 = now();
        void *dst = NULL;
        if (posix_memalign(&dst, huge, cap) != 0)
            return SGFP4_ERR_NOMEM;
#ifdef MADV_HUGEPAGE
        (void)madvise(dst, cap, MADV_HUGEPAGE);
#endif
        const sgfp4_status s = sgfp4_decode(t, (sgfp4_dtype)dtype, dst, 0, cap, options);
        free(dst);
        seconds[i] = now() - t0;
        if (s != SGFP4_OK)
            return s;
    }
    return SGFP4_OK;
}
