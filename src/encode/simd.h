/* Vectorization support for the encoder's hot loops. The loops are plain C over 8
 * independent lanes (no reordered floating-point sums, so no fast-math is needed and the
 * results are the same on every path); SGFP4_VECTOR_CLONES additionally compiles an AVX2
 * clone of a function, chosen at load time on CPUs that have it. AVX2 without FMA changes
 * only the register width, never a result (-ffp-contract=off).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_SIMD_H
#define SGFP4_ENCODE_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(SGFP4_NO_CLONES)
#define SGFP4_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SGFP4_VECTOR_CLONES
#endif

/* Marks a loop over the lanes of a group (independent accumulators, one per lane) nested in a
 * loop over elements. The compiler must keep it a loop: the vectorizer then maps the lanes
 * onto one vector register, at every optimisation level. Without it GCC at -O3 first unrolls
 * the lane loop completely (a code-growing unroll that -O2 does not make), then vectorizes
 * the element loop across elements with permutes and stack spills, which made a Release
 * (-O3) encoder slower than one built at -O2 (docs/notes/2026-12-benchmarks.md). */
#define SGFP4_LANE_LOOP _Pragma("GCC unroll 1")

/* Lets the compiler evaluate both sides of a floating-point select (and so vectorize a loop
 * with selects): with traps masked, as the encoder runs them (common/fp_env.h), that changes
 * only which exception flags are raised, never a value. */
#if defined(__GNUC__) && !defined(__clang__)
#define SGFP4_NO_TRAPS __attribute__((optimize("no-trapping-math")))
#else
#define SGFP4_NO_TRAPS
#endif

/* Adding and subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest
 * integer, ties to even, in the default rounding mode. */
#define SGFP4_ROUND_MAGIC 12582912.0f

#endif
