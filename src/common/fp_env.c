/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "common/fp_env.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#endif

/* Whether the calling thread is already in the default environment. Where the control
 * register cannot be read cheaply, the answer is "no", and the scope always switches. */
static bool fp_env_is_default(void)
{
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
    /* MXCSR: rounding control (bits 13..14) nearest, no flush-to-zero (15), no
     * denormals-are-zero (6); the library does no x87 arithmetic */
    return (_mm_getcsr() & 0xE040u) == 0;
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    /* RMode (bits 22..23) nearest, no FZ (24), no FZ16 (19) */
    return (fpcr & (UINT64_C(3) << 22 | UINT64_C(1) << 24 | UINT64_C(1) << 19)) == 0;
#else
    return false;
#endif
}

void sgfp4_fp_scope_enter(sgfp4_fp_scope *scope)
{
    scope->switched = !fp_env_is_default() && fegetenv(&scope->saved) == 0;
    if (scope->switched)
        fesetenv(FE_DFL_ENV);
}

void sgfp4_fp_scope_leave(sgfp4_fp_scope *scope)
{
    if (scope->switched)
        fesetenv(&scope->saved);
}
