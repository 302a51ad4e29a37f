/* The kernel sets of encode/gemm.h: a portable one (vectors of 16 bytes, which every target
 * of GCC and Clang lowers to its registers or to scalars) and, on x86-64, AVX2 and AVX-512
 * ones chosen by the CPU at run time. They run the same operations in the same order.
 * SPDX-License-Identifier: MIT */
#include "encode/gemm.h"

#include "common/cpu.h"

#define GEMM_SET generic
#define GEMM_NAME "generic"
#define GEMM_TARGET
#define GEMM_FLOATS 4
#define GEMM_DOUBLES 2
#include "encode/gemm_body.h"
#undef GEMM_SET
#undef GEMM_NAME
#undef GEMM_TARGET
#undef GEMM_FLOATS
#undef GEMM_DOUBLES

#ifdef SGFP4_HAVE_X86_KERNELS
#define GEMM_SET avx2
#define GEMM_NAME "avx2"
#define GEMM_TARGET __attribute__((target("avx2")))
#define GEMM_FLOATS 8
#define GEMM_DOUBLES 4
#include "encode/gemm_body.h"
#undef GEMM_SET
#undef GEMM_NAME
#undef GEMM_TARGET
#undef GEMM_FLOATS
#undef GEMM_DOUBLES

#define GEMM_SET avx512
#define GEMM_NAME "avx512"
#define GEMM_TARGET __attribute__((target("avx512f")))
#define GEMM_FLOATS 16
#define GEMM_DOUBLES 8
#include "encode/gemm_body.h"
#undef GEMM_SET
#undef GEMM_NAME
#undef GEMM_TARGET
#undef GEMM_FLOATS
#undef GEMM_DOUBLES
#endif

unsigned sgfp4_gemm_kernels_all(const sgfp4_gemm_kernels *sets[SGFP4_GEMM_SETS])
{
    unsigned n = 0;
#ifdef SGFP4_HAVE_X86_KERNELS
    if (sgfp4_cpu_runs(SGFP4_CPU_AVX512))
        sets[n++] = &gemm_set_avx512;
    if (sgfp4_cpu_runs(SGFP4_CPU_AVX2))
        sets[n++] = &gemm_set_avx2;
#endif
    sets[n++] = &gemm_set_generic;
    return n;
}

const sgfp4_gemm_kernels *sgfp4_gemm_kernels_best(void)
{
    const sgfp4_gemm_kernels *sets[SGFP4_GEMM_SETS];
    sgfp4_gemm_kernels_all(sets);
    return sets[0];
}
