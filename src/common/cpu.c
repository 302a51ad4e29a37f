/* The CPU level probe (common/cpu.h): CPUID and XGETBV on x86-64 (an instruction set counts
 * only where the operating system also saves its registers), the kernel's hardware
 * capabilities on AArch64.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdint.h>

#include "common/cpu.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <cpuid.h>

/* XCR0: which register states the operating system saves (bit 1 SSE, bit 2 AVX, bits 5..7
 * opmask, upper halves of zmm0-15, zmm16-31). */
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static sgfp4_cpu_level probe(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return SGFP4_CPU_BASELINE;
    const bool fma = (c >> 12) & 1u, osxsave = (c >> 27) & 1u, avx = (c >> 28) & 1u,
               f16c = (c >> 29) & 1u;
    if (!(fma && osxsave && avx && f16c) || (read_xcr0() & 6u) != 6u)
        return SGFP4_CPU_BASELINE;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return SGFP4_CPU_BASELINE;
    const bool bmi1 = (b >> 3) & 1u, avx2 = (b >> 5) & 1u, bmi2 = (b >> 8) & 1u;
    if (!(avx2 && bmi1 && bmi2))
        return SGFP4_CPU_BASELINE;
    const bool f = (b >> 16) & 1u, dq = (b >> 17) & 1u, bw = (b >> 30) & 1u, vl = (b >> 31) & 1u;
    if (!(f && dq && bw && vl) || (read_xcr0() & 0xE6u) != 0xE6u)
        return SGFP4_CPU_AVX2;
    return (c >> 11) & 1u ? SGFP4_CPU_AVX512_VNNI : SGFP4_CPU_AVX512;
}

static bool same_architecture(sgfp4_cpu_level level)
{
    return level >= SGFP4_CPU_AVX2 && level <= SGFP4_CPU_AVX512_VNNI;
}

#elif defined(SGFP4_HAVE_NEON_KERNELS)
#include <sys/auxv.h>

static sgfp4_cpu_level probe(void)
{
    /* DotProd: HWCAP_ASIMDDP, bit 20 */
    return (getauxval(AT_HWCAP) >> 20) & 1u ? SGFP4_CPU_NEON_DOT : SGFP4_CPU_NEON;
}

static bool same_architecture(sgfp4_cpu_level level)
{
    return level == SGFP4_CPU_NEON || level == SGFP4_CPU_NEON_DOT;
}

#else

static sgfp4_cpu_level probe(void) { return SGFP4_CPU_BASELINE; }

static bool same_architecture(sgfp4_cpu_level level)
{
    (void)level;
    return false;
}

#endif

sgfp4_cpu_level sgfp4_cpu_level_here(void)
{
    /* A benign race: every thread computes the same answer. -1: not probed yet. */
    static atomic_int level = -1;
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        l = (int)probe();
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return (sgfp4_cpu_level)l;
}

bool sgfp4_cpu_runs(sgfp4_cpu_level level)
{
    return level == SGFP4_CPU_BASELINE ||
           (same_architecture(level) && level <= sgfp4_cpu_level_here());
}
