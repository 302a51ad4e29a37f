/* The AVX-512 matvec kernel set without VNNI (the dot products by vpmaddubsw + vpmaddwd),
 * for AVX-512 cores that lack it (Skylake-X and its server parts). The code is
 * matvec/avx512_units.h's and its four other parts', compiled here with per-function target
 * attributes; matvec_dispatch.c runs it only where the CPU and the operating system support
 * it.
 * SPDX-License-Identifier: MIT */
#include "common/cpu.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#define MV_VNNI 0
#define MV_TARGET SGFP4_TARGET_AVX512
#define MV_SET_NAME "avx512"
#define MV_SET sgfp4_matvec_kernels_avx512
#include "matvec/avx512_units.h"
#include "matvec/avx512_tile.h"
#include "matvec/avx512_group.h"
#include "matvec/avx512_paths.h"
#include "matvec/avx512_block.h"
#endif
