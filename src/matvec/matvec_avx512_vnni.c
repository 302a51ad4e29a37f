/* The AVX-512 matvec kernel set with VNNI (the dot products by vpdpbusd): Cascade Lake, Ice
 * Lake and later Intel cores, AMD Zen 4 and later. The code is matvec/avx512_units.h's and
 * its four other parts', compiled here with per-function target attributes;
 * matvec_dispatch.c runs it only where the CPU and the operating system support it.
 * SPDX-License-Identifier: MIT */
#include "common/cpu.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#define MV_VNNI 1
#define MV_TARGET SGFP4_TARGET_AVX512_VNNI
#define MV_SET_NAME "avx512vnni"
#define MV_SET sgfp4_matvec_kernels_avx512vnni
#include "matvec/avx512_units.h"
#include "matvec/avx512_tile.h"
#include "matvec/avx512_group.h"
#include "matvec/avx512_paths.h"
#include "matvec/avx512_block.h"
#endif
