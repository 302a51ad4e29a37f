/* The CPU decode kernels and their dispatch table (libwebp style: a portable C version of
 * every kernel, overridden by SIMD versions the CPU supports, chosen once at run time).
 *
 * A kernel decodes a set of rows of one macroblock row, block after block: a block's
 * leaves are decoded leaf by leaf into a 64x64 float tile that stays in L1 (the per-leaf
 * work is then paid once per leaf, not once per leaf row), and each tile row goes out to
 * the caller's memory as one contiguous run (256 bytes for f32), converted to the output
 * dtype on the way. Every kernel gives the
 * bits of the scalar oracle (decode/decode_scalar.c): w = fl32(S * q + B) with an exact product and
 * one rounding (DECISIONS D1), f16 / bf16 rounded to nearest even from that f32.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_DECODE_KERNELS_H
#define SGFP4_DECODE_KERNELS_H

#include <stdbool.h>

#include "common/cpu.h"
#include "decode/decode_internal.h"
#include "listing/leaf_list.h"
#include "sgfp4_experimental.h"

typedef struct sgfp4_decode_kernels {
    const char *name; /* "generic", "avx2", ... (shown by `sgfp4 bench`) */
    /* Decodes the rows of macroblock row `by` of t whose bits are set in `rows` (bit y =
     * block row y; at least one), every column, as `dtype`: block row y lands at dst[y].
     * `streaming` allows non-temporal stores (the caller then calls finish() before its
     * results are used). `scratch` is this thread's scratch_bytes of working memory. */
    void (*decode_rows)(const sgfp4_tensor *t, uint64_t by, uint64_t rows,
                        uint8_t *const dst[SGFP4_MB], sgfp4_dtype dtype, bool streaming,
                        void *scratch);
    /* Orders this thread's streaming stores before what follows (a no-op where none exist). */
    void (*finish)(void);
    /* Bytes of 64-byte aligned scratch memory decode_rows() needs (one per thread). */
    size_t scratch_bytes;
} sgfp4_decode_kernels;

/* The mask of a leaf's rows [y, y + size) within a block. */
static inline uint64_t sgfp4_leaf_row_mask(unsigned y, unsigned size)
{
    return (size >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << size) - 1) << y;
}

/* The portable C kernels (decode/decode_generic.c): always available. */
extern const sgfp4_decode_kernels sgfp4_kernels_generic;
#ifdef SGFP4_HAVE_X86_KERNELS
/* AVX2 + FMA + F16C kernels (decode/decode_avx2.c); run them only where the CPU has them. */
extern const sgfp4_decode_kernels sgfp4_kernels_avx2;
/* AVX-512 F/BW/DQ/VL kernels (decode/decode_avx512.c); likewise. */
extern const sgfp4_decode_kernels sgfp4_kernels_avx512;
#endif

#ifdef SGFP4_HAVE_NEON_KERNELS
/* Advanced SIMD (NEON) kernels (decode/decode_neon.c); every AArch64 CPU runs them. */
extern const sgfp4_decode_kernels sgfp4_kernels_neon;
/* The NEON row writer's f32 -> f16 or bf16 (`dtype`) of finite floats, round to nearest
 * even, as 16-bit patterns. */
void sgfp4_neon_floats_to_16bit(const float *in, size_t count, sgfp4_dtype dtype,
                                uint16_t *out);
#endif

/* The fastest kernels this CPU runs (detected once; thread-safe). */
const sgfp4_decode_kernels *sgfp4_decode_kernels_best(void);

/* Looks kernels up by name among those this CPU runs; NULL if unknown or unavailable
 * (tests use it to run every kernel set the machine has). */
const sgfp4_decode_kernels *sgfp4_decode_kernels_named(const char *name);

/* The kernel-driven decoder (decode/tiled.c): the same contract as the scalar oracle's
 * functions in decode_internal.h, on `threads` threads (0 or 1: the calling thread), with
 * non-temporal stores if `streaming`. */
void sgfp4_tiled_decode_rows(const sgfp4_tensor *t, uint64_t row_begin, uint64_t row_end,
                             const sgfp4_output *out, const sgfp4_decode_kernels *k,
                             unsigned threads, bool streaming);
void sgfp4_tiled_decode_gather(const sgfp4_tensor *t, const uint64_t *rows, size_t count,
                               const sgfp4_output *out, const sgfp4_decode_kernels *k,
                               unsigned threads, bool streaming);

/* The kernel set a forcing backend (SGFP4_BACKEND_GENERIC ...) names, if this build and
 * CPU run it; NULL otherwise. */
const sgfp4_decode_kernels *sgfp4_decode_kernels_forced(sgfp4_backend backend);

#endif
