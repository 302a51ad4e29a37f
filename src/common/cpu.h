/* The CPU floor under the kernels: which SIMD kernel sets this build compiles, the target
 * attribute each instruction-set level's code is compiled with, and one probe that says
 * which level the CPU (and its operating system) runs. The decode and matvec dispatchers
 * both ask it; nothing else detects CPU features.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_CPU_H
#define SGFP4_COMMON_CPU_H

#include <stdbool.h>

/* x86-64 with GCC or Clang: target attributes, cpuid.h. */
#if defined(__x86_64__) && defined(__GNUC__)
#define SGFP4_HAVE_X86_KERNELS 1
/* What code for each x86 level may use: exactly what sgfp4_cpu_level() checks for it. */
#define SGFP4_TARGET_AVX2 "avx2,fma,f16c,bmi,bmi2"
#define SGFP4_TARGET_AVX512 "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2"
#define SGFP4_TARGET_AVX512_VNNI                                                               \
    "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c,bmi,bmi2"
#endif

/* GCC and Clang on little-endian AArch64 (vector lanes in memory order; always_inline,
 * __builtin_ctzll). Advanced SIMD is part of the base AArch64 ISA. */
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__) &&                        \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SGFP4_HAVE_NEON_KERNELS 1
#define SGFP4_TARGET_NEON_DOT "arch=armv8.2-a+dotprod"
#endif

/* Instruction-set levels. On each architecture a level includes every level before it. */
typedef enum sgfp4_cpu_level {
    SGFP4_CPU_BASELINE,    /* what the compiler targets by default: the portable kernels */
    SGFP4_CPU_AVX2,        /* x86-64: AVX2, FMA, F16C, BMI1, BMI2; the OS saves ymm state */
    SGFP4_CPU_AVX512,      /* and AVX-512 F, BW, DQ, VL; the OS saves opmask and zmm state */
    SGFP4_CPU_AVX512_VNNI, /* and AVX-512 VNNI */
    SGFP4_CPU_NEON,        /* AArch64: Advanced SIMD, on every AArch64 CPU */
    SGFP4_CPU_NEON_DOT,    /* and the DotProd extension (SDOT), as the kernel reports it */
} sgfp4_cpu_level;

/* The highest level this CPU runs (probed once; thread-safe). */
sgfp4_cpu_level sgfp4_cpu_level_here(void);

/* Whether this CPU runs code built for `level`: the baseline always; another level when it
 * is of this CPU's architecture and not above sgfp4_cpu_level_here(). */
bool sgfp4_cpu_runs(sgfp4_cpu_level level);

#endif
