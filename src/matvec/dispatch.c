/* Choosing the matvec kernels. In this version the scalar reference is the only kernel set:
 * AUTO and CPU select it, and every forced SIMD set is unavailable. Faster sets join the
 * list below (fastest first) with the CPU features they need, and the tests run each one
 * against the reference.
 * SPDX-License-Identifier: MIT */
#include "matvec/matvec_internal.h"
#include "sgfp4_experimental.h"

static const sgfp4_matvec_kernels *const all_kernels[] = {
    &sgfp4_matvec_kernels_generic,
    &sgfp4_matvec_kernels_scalar,
};

#define KERNEL_SETS (sizeof all_kernels / sizeof all_kernels[0])

const sgfp4_matvec_kernels *sgfp4_matvec_kernels_best(void)
{
    return all_kernels[0];
}

unsigned sgfp4_matvec_kernel_sets(const sgfp4_matvec_kernels **out, unsigned cap)
{
    unsigned n = 0;
    for (size_t i = KERNEL_SETS; i-- > 0;) /* the reference, listed last above, first here */
        if (n < cap)
            out[n++] = all_kernels[i];
    return n;
}

const sgfp4_matvec_kernels *sgfp4_matvec_kernels_for(sgfp4_backend backend, int *known)
{
    *known = 1;
    switch (backend) {
    case SGFP4_BACKEND_AUTO:
    case SGFP4_BACKEND_CPU: return sgfp4_matvec_kernels_best();
    case SGFP4_BACKEND_SCALAR: return &sgfp4_matvec_kernels_scalar;
    case SGFP4_BACKEND_GENERIC: return &sgfp4_matvec_kernels_generic;
    case SGFP4_BACKEND_AVX2:
    case SGFP4_BACKEND_AVX512:
    case SGFP4_BACKEND_NEON: return NULL; /* no such matvec kernel set yet */
    default: *known = 0; return NULL;
    }
}

const char *sgfp4_matvec_backend_name(sgfp4_backend backend)
{
    int known;
    const sgfp4_matvec_kernels *k = sgfp4_matvec_kernels_for(backend, &known);
    return k ? k->name : NULL;
}
