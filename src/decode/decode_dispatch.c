/* Choosing the decode kernels: the fastest set this CPU runs, detected once.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <string.h>

#include "decode/kernels.h"

/* Every kernel set, fastest first, with whether this CPU runs it. */
static bool runs_here(const sgfp4_decode_kernels *k)
{
#ifdef SGFP4_HAVE_NEON_KERNELS
    if (k == &sgfp4_kernels_neon)
        return true; /* Advanced SIMD is part of the base AArch64 ISA */
#endif
#ifdef SGFP4_HAVE_X86_KERNELS
    if (k == &sgfp4_kernels_avx512)
        return sgfp4_cpu_has_avx512();
    if (k == &sgfp4_kernels_avx2)
        return sgfp4_cpu_has_avx2_fma_f16c();
#endif
    return k == &sgfp4_kernels_generic;
}

static const sgfp4_decode_kernels *const all_kernels[] = {
#ifdef SGFP4_HAVE_NEON_KERNELS
    &sgfp4_kernels_neon,
#endif
#ifdef SGFP4_HAVE_X86_KERNELS
    &sgfp4_kernels_avx512,
    &sgfp4_kernels_avx2,
#endif
    &sgfp4_kernels_generic,
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
        if (runs_here(all_kernels[i]))
            k = all_kernels[i];
    atomic_store_explicit(&chosen, k, memory_order_release);
    return k;
}

const sgfp4_decode_kernels *sgfp4_decode_kernels_named(const char *name)
{
    for (size_t i = 0; i < KERNEL_SETS; i++)
        if (strcmp(all_kernels[i]->name, name) == 0 && runs_here(all_kernels[i]))
            return all_kernels[i];
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
