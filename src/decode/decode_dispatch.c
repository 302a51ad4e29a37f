/* Choosing the decode kernels: the fastest set this CPU runs, detected once.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <string.h>

#include "common/cpu.h"
#include "decode/kernels.h"

/* Every kernel set, fastest first, with the CPU level it needs. */
static const struct {
    const sgfp4_decode_kernels *kernels;
    sgfp4_cpu_level level;
} all_kernels[] = {
#ifdef SGFP4_HAVE_NEON_KERNELS
    {&sgfp4_kernels_neon, SGFP4_CPU_NEON},
#endif
#ifdef SGFP4_HAVE_X86_KERNELS
    {&sgfp4_kernels_avx512, SGFP4_CPU_AVX512},
    {&sgfp4_kernels_avx2, SGFP4_CPU_AVX2},
#endif
    {&sgfp4_kernels_generic, SGFP4_CPU_BASELINE},
};

#define KERNEL_SETS (sizeof all_kernels / sizeof all_kernels[0])

const sgfp4_decode_kernels *sgfp4_decode_kernels_best(void)
{
    /* A benign race: every thread computes the same answer. */
    static _Atomic(const sgfp4_decode_kernels *) chosen = NULL;
    const sgfp4_decode_kernels *k = atomic_load_explicit(&chosen, memory_order_acquire);
    if (k)
        return k;
    for (size_t i = 0; i < KERNEL_SETS && !k; i++)
        if (sgfp4_cpu_runs(all_kernels[i].level))
            k = all_kernels[i].kernels;
    atomic_store_explicit(&chosen, k, memory_order_release);
    return k;
}

const sgfp4_decode_kernels *sgfp4_decode_kernels_named(const char *name)
{
    for (size_t i = 0; i < KERNEL_SETS; i++)
        if (strcmp(all_kernels[i].kernels->name, name) == 0 &&
            sgfp4_cpu_runs(all_kernels[i].level))
            return all_kernels[i].kernels;
    return NULL;
}

const sgfp4_decode_kernels *sgfp4_decode_kernels_forced(sgfp4_backend backend)
{
    switch (backend) {
    case SGFP4_BACKEND_GENERIC: return sgfp4_decode_kernels_named("generic");
    case SGFP4_BACKEND_AVX2: return sgfp4_decode_kernels_named("avx2");
    case SGFP4_BACKEND_AVX512: return sgfp4_decode_kernels_named("avx512");
    case SGFP4_BACKEND_NEON: return sgfp4_decode_kernels_named("neon");
    default: return NULL;
    }
}
