/* The NEON matvec kernel set without the DotProd extension (the dot products by SMULL and
 * pairwise adds): every AArch64 CPU runs it. The code is matvec/neon_body.h's.
 * SPDX-License-Identifier: MIT */
#include "common/cpu.h"

#ifdef SGFP4_HAVE_NEON_KERNELS
#define MV_DOT 0
#define MV_ATTR
#define MV_SET_NAME "neon"
#define MV_SET sgfp4_matvec_kernels_neon
#include "matvec/neon_body.h"
#endif
