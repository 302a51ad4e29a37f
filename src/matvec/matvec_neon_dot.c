/* The NEON matvec kernel set with the Armv8.2 DotProd extension (the dot products by SDOT):
 * Neoverse N1 / V1 and later, Cortex-A76 and later, Apple M1 and later. The code is
 * matvec/neon_body.h's, compiled here with a per-function target; matvec_dispatch.c runs
 * it only where the kernel reports the extension (HWCAP_ASIMDDP, common/cpu.c).
 * SPDX-License-Identifier: MIT */
#include "common/cpu.h"

#ifdef SGFP4_HAVE_NEON_KERNELS
#define MV_DOT 1
#define MV_ATTR __attribute__((target(SGFP4_TARGET_NEON_DOT)))
#define MV_SET_NAME "neondot"
#define MV_SET sgfp4_matvec_kernels_neondot
#include "matvec/neon_body.h"
#endif
