/* Run-time CPU feature detection for the decode kernels.
 * SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "common/cpu.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <cpuid.h>

/* XCR0: which register states the operating system saves (bit 1 SSE, bit 2 AVX). */
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

bool sgfp4_cpu_has_avx2_fma_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return false;
    const bool fma = (c >> 12) & 1u, osxsave = (c >> 27) & 1u, avx = (c >> 28) & 1u,
               f16c = (c >> 29) & 1u;
    if (!(fma && osxsave && avx && f16c) || (read_xcr0() & 6u) != 6u)
        return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    return (b >> 5) & 1u; /* AVX2 */
}

bool sgfp4_cpu_has_avx512(void)
{
    unsigned a, b, c, d;
    if (!sgfp4_cpu_has_avx2_fma_f16c() || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    const bool f = (b >> 16) & 1u, dq = (b >> 17) & 1u, bw = (b >> 30) & 1u, vl = (b >> 31) & 1u;
    /* XCR0 bits 5..7: opmask, upper halves of zmm0-15, zmm16-31 */
    return f && dq && bw && vl && (read_xcr0() & 0xE6u) == 0xE6u;
}

#else

bool sgfp4_cpu_has_avx2_fma_f16c(void) { return false; }
bool sgfp4_cpu_has_avx512(void) { return false; }

#endif
