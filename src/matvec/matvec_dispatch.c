/* Choosing the matvec kernels: the fastest set this CPU runs, detected once, and the sets
 * the experimental tier's backends force. Every set gives the oracle's bits; the tests run
 * each one the CPU runs against it (sgfp4_matvec_kernel_sets).
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <string.h>

#include "common/cpu.h"
#include "matvec/matvec_internal.h"
#include "sgfp4_experimental.h"

/* Every kernel set, fastest first, with the CPU level it needs. */
static const struct {
    const sgfp4_matvec_kernels *kernels;
    sgfp4_cpu_level level;
} all_kernels[] = {
#ifdef SGFP4_HAVE_X86_KERNELS
    {&sgfp4_matvec_kernels_avx512vnni, SGFP4_CPU_AVX512_VNNI},
    {&sgfp4_matvec_kernels_avx512, SGFP4_CPU_AVX512},
    {&sgfp4_matvec_kernels_avx2, SGFP4_CPU_AVX2},
#endif
#ifdef SGFP4_HAVE_NEON_KERNELS
    {&sgfp4_matvec_kernels_neondot, SGFP4_CPU_NEON_DOT},
    {&sgfp4_matvec_kernels_neon, SGFP4_CPU_NEON},
#endif
    {&sgfp4_matvec_kernels_generic, SGFP4_CPU_BASELINE},
    {&sgfp4_matvec_kernels_scalar, SGFP4_CPU_BASELINE},
};

#define KERNEL_SETS (sizeof all_kernels / sizeof all_kernels[0])

static bool runs_here(const sgfp4_matvec_kernels *k)
{
    for (size_t i = 0; i < KERNEL_SETS; i++)
        if (all_kernels[i].kernels == k)
            return sgfp4_cpu_runs(all_kernels[i].level);
    return false;
}

const sgfp4_matvec_kernels *sgfp4_matvec_kernels_best(void)
{
    /* A benign race: every thread computes the same answer. */
    static _Atomic(const sgfp4_matvec_kernels *) chosen = NULL;
    const sgfp4_matvec_kernels *k = atomic_load_explicit(&chosen, memory_order_acquire);
    if (k)
        return k;
    for (size_t i = 0; i < KERNEL_SETS && !k; i++)
        if (sgfp4_cpu_runs(all_kernels[i].level))
            k = all_kernels[i].kernels;
    atomic_store_explicit(&chosen, k, memory_order_release);
    return k;
}

unsigned sgfp4_matvec_kernel_sets(const sgfp4_matvec_kernels **out, unsigned cap)
{
    unsigned n = 0;
    for (size_t i = KERNEL_SETS; i-- > 0;) /* the reference, listed last above, first here */
        if (n < cap && sgfp4_cpu_runs(all_kernels[i].level))
            out[n++] = all_kernels[i].kernels;
    return n;
}

/* The first set of `sets` (fastest first) this CPU runs. */
static const sgfp4_matvec_kernels *first_running(const sgfp4_matvec_kernels *const *sets,
                                                 unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (sets[i] && runs_here(sets[i]))
            return sets[i];
    return NULL;
}

const sgfp4_matvec_kernels *sgfp4_matvec_kernels_for(sgfp4_backend backend, int *known)
{
    *known = 1;
    switch (backend) {
    case SGFP4_BACKEND_AUTO: return sgfp4_matvec_kernels_best();
    case SGFP4_BACKEND_SCALAR: return &sgfp4_matvec_kernels_scalar;
    case SGFP4_BACKEND_GENERIC: return &sgfp4_matvec_kernels_generic;
    case SGFP4_BACKEND_AVX512: {
#ifdef SGFP4_HAVE_X86_KERNELS
        /* the AVX-512 set with VNNI where the CPU has it */
        const sgfp4_matvec_kernels *const sets[] = {&sgfp4_matvec_kernels_avx512vnni,
                                                    &sgfp4_matvec_kernels_avx512};
        return first_running(sets, 2);
#else
        return NULL;
#endif
    }
    case SGFP4_BACKEND_AVX2:
#ifdef SGFP4_HAVE_X86_KERNELS
        return runs_here(&sgfp4_matvec_kernels_avx2) ? &sgfp4_matvec_kernels_avx2 : NULL;
#else
        return NULL;
#endif
    case SGFP4_BACKEND_NEON: {
#ifdef SGFP4_HAVE_NEON_KERNELS
        /* the DotProd set where the CPU has it */
        const sgfp4_matvec_kernels *const sets[] = {&sgfp4_matvec_kernels_neondot,
                                                    &sgfp4_matvec_kernels_neon};
        return first_running(sets, 2);
#else
        return NULL;
#endif
    }
    default: *known = 0; return NULL;
    }
}

const sgfp4_matvec_kernels *sgfp4_matvec_kernels_named(const char *name)
{
    for (size_t i = 0; i < KERNEL_SETS; i++)
        if (strcmp(all_kernels[i].kernels->name, name) == 0 &&
            sgfp4_cpu_runs(all_kernels[i].level))
            return all_kernels[i].kernels;
    return NULL;
}

const char *sgfp4_matvec_backend_name(sgfp4_backend backend)
{
    int known;
    const sgfp4_matvec_kernels *k = sgfp4_matvec_kernels_for(backend, &known);
    return k ? k->name : NULL;
}
