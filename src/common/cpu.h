/* Which SIMD kernel sets this build compiles, and whether the CPU runs them
 * (decode/cpu_features.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_DECODE_CPU_H
#define SGFP4_DECODE_CPU_H

#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__) /* GCC and Clang: target attributes, cpuid.h */
#define SGFP4_HAVE_X86_KERNELS 1
#endif

/* GCC and Clang on little-endian AArch64 (vector lanes in memory order; always_inline,
 * __builtin_ctzll). Advanced SIMD is part of the base AArch64 ISA, so nothing is detected. */
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__) &&                        \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SGFP4_HAVE_NEON_KERNELS 1
#endif

/* CPU features the kernels need (decode/cpu_features.c). */
bool sgfp4_cpu_has_avx2_fma_f16c(void);
/* AVX-512 F, BW, DQ and VL with the opmask and upper-register state saved by the OS, plus
 * everything sgfp4_cpu_has_avx2_fma_f16c() checks. */
bool sgfp4_cpu_has_avx512(void);

#endif
