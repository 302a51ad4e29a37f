/* Compiler hints for the few hot loops that need them; each is a no-op where the compiler
 * does not offer it, and none changes a result.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_COMPILER_H
#define SGFP4_COMMON_COMPILER_H

/* SGFP4_VECTOR_CLONES before a function: GCC also compiles an AVX2 clone of it and picks one
 * at load time by the CPU (an ifunc), for plain-C loops over independent lanes that the
 * compiler vectorises; the clone changes only the register width. Nothing on other compilers
 * and targets, or with SGFP4_NO_CLONES. A cloned function is not inlined. */
#ifndef SGFP4_VECTOR_CLONES
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(SGFP4_NO_CLONES)
#define SGFP4_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SGFP4_VECTOR_CLONES
#endif
#endif

/* Asks for the cache line at p to be read ahead of its use (p must point into an object).
 * Written in the loop that uses it: GCC treats a function that only prefetches as having no
 * effect and drops the call. */
#if defined(__GNUC__)
#define SGFP4_PREFETCH(p) __builtin_prefetch(p)
#else
#define SGFP4_PREFETCH(p) ((void)(p))
#endif

#endif
