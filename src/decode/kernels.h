/* The CPU decode kernels and their dispatch table (libwebp style: a portable C version of
 * every kernel, overridden by SIMD versions the CPU supports, chosen once at run time).
 *
 * A kernel decodes a set of rows of one macroblock row, block after block: a block's
 * leaves are decoded leaf by leaf into a 64x64 float tile that stays in L1 (the per-leaf
 * work is then paid once per leaf, not once per leaf row), and each tile row goes out to
 * the caller's memory as one contiguous run (256 bytes for f32), converted to the output
 * dtype on the way. Every kernel gives the
 * bits of the scalar oracle (decode/scalar.c): w = fl32(S * q + B) with an exact product and
 * one rounding (DECISIONS D1), f16 / bf16 rounded to nearest even from that f32.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_DECODE_KERNELS_H
#define SGFP4_DECODE_KERNELS_H

#include <stdbool.h>

#include "decode/decode_internal.h"
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

/* Fills out[] with the leaves of block b (b < t->blocks) exactly as sgfp4_block_leaf_refs()
 * does, faster (decode/leaf_parse.c); returns the count. */
unsigned sgfp4_decode_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out);
/* A leaf's position as the listings carry it: size class (log2(edge / 4), 0..4) in bits
 * 16.., its top-left corner's offset y * 64 + x in a 64x64 tile below. */
static inline uint32_t sgfp4_leaf_descriptor(unsigned cls, unsigned y, unsigned x)
{
    return (uint32_t)cls << 16 | (uint32_t)(y * SGFP4_MB + x);
}
/* The leaves of v2 record b of t in storage order as descriptors: *desc points to a constant
 * table (uniform layouts) or to `buffer` (MIXED; SGFP4_MAX_LEAVES + 16 entries, the walk
 * writes 16 at a time); *desc has 16 readable entries past the count. Sets where the leaf
 * headers start; returns the leaf count. The layout and split map come from the view's copy
 * of them (container/tensor.h). */
unsigned sgfp4_decode_record_positions(const sgfp4_tensor *t, uint64_t b, uint32_t *buffer,
                                       const uint32_t **desc, const uint8_t **headers);
/* The mask of a leaf's rows [y, y + size) within a block. */
static inline uint64_t sgfp4_leaf_row_mask(unsigned y, unsigned size)
{
    return (size >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << size) - 1) << y;
}

/* Exact fp16 -> f32 of a finite value, subnormals included, whatever the FPU modes. */
float sgfp4_half_to_float_finite(uint32_t half);

/* The portable C kernels (decode/kernels_generic.c): always available. */
extern const sgfp4_decode_kernels sgfp4_kernels_generic;
#if defined(__x86_64__) && defined(__GNUC__) /* GCC and Clang: target attributes, cpuid.h */
#define SGFP4_HAVE_X86_KERNELS 1
/* AVX2 + FMA + F16C kernels (decode/kernels_avx2.c); run them only where the CPU has them. */
extern const sgfp4_decode_kernels sgfp4_kernels_avx2;
/* AVX-512 F/BW/DQ/VL kernels (decode/kernels_avx512.c); likewise. */
extern const sgfp4_decode_kernels sgfp4_kernels_avx512;
#endif

/* GCC and Clang on little-endian AArch64 (vector lanes in memory order; always_inline,
 * __builtin_ctzll). Advanced SIMD is part of the base AArch64 ISA, so nothing is detected. */
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__) &&                        \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SGFP4_HAVE_NEON_KERNELS 1
/* Advanced SIMD (NEON) kernels (decode/kernels_neon.c); every AArch64 CPU runs them. */
extern const sgfp4_decode_kernels sgfp4_kernels_neon;
#endif

/* Leaf kinds: (size, mode) as 2 * log2(size / 4) + mode, 0..9. */
#define SGFP4_LEAF_KINDS 10u

/* A block's leaves as the x86 SIMD kernels list them: arrays in storage order, 16 entries
 * of slack each (listings may write 16 at a time), and the indices of each kind (2 * size
 * class + mode, size class = log2(edge / 4)) in storage order. */
typedef struct sgfp4_leaf_list {
    unsigned count;
    unsigned kind_count[SGFP4_LEAF_KINDS];
    const uint8_t *payload; /* leaf i's payload is payload + offset[i] */
    const uint32_t *modes;  /* v2: the record's leaf modes (sgfp4_leaf_modes.t158) */
    const uint32_t *desc;   /* class << 16 | y * 64 + x (a constant table or desc_buffer) */
    uint32_t desc_buffer[SGFP4_MAX_LEAVES + 16];
    uint32_t mode[SGFP4_MAX_LEAVES + 16];
    uint32_t offset[SGFP4_MAX_LEAVES + 16];
    float scale[SGFP4_MAX_LEAVES + 16];
    float bias[SGFP4_MAX_LEAVES + 16];
    uint8_t by_kind[SGFP4_LEAF_KINDS][SGFP4_MAX_LEAVES + 16];
} sgfp4_leaf_list;

/* Lists v1 block b (its one 64x64 leaf) into *list (leaf_parse.c); returns 1. */
unsigned sgfp4_list_v1_block(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* What every listing of block b starts with (leaf_parse.c): a v1 block listed whole (sets
 * *headers to NULL); for a v2 record, list->desc, list->payload and list->modes set and
 * *headers where its leaf headers start. Returns the leaf count. */
unsigned sgfp4_list_begin(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list,
                          const uint8_t **headers);
/* With list->desc and list->modes set for a v2 record's n leaves: fills each leaf's mode,
 * payload offset (an exclusive sum of the padded payload sizes), the kind groups and the
 * count (leaf_parse.c). The SIMD listings convert scales and biases themselves. */
void sgfp4_list_group(sgfp4_leaf_list *list, unsigned n);

#ifdef SGFP4_HAVE_X86_KERNELS
/* Lists block b of t (b < t->blocks) into *list, 8 headers at a time (decode/leaves_avx2.c;
 * AVX2 CPUs only); returns the count. */
unsigned sgfp4_avx2_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* The AVX2 listing's fp16 -> f32 of finite halves, 8 at a time (AVX2 CPUs only). */
void sgfp4_avx2_halves_to_floats(const uint16_t *halves, size_t count, float *out);
/* The same, 16 headers at a time (decode/leaves_avx512.c; AVX-512 CPUs only). */
unsigned sgfp4_avx512_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* The AVX-512 listing's fp16 -> f32 of finite halves, 16 at a time (AVX-512 CPUs only). */
void sgfp4_avx512_halves_to_floats(const uint16_t *halves, size_t count, float *out);
#endif

#ifdef SGFP4_HAVE_NEON_KERNELS
/* Lists block b of t (b < t->blocks) into *list, 4 headers at a time (decode/kernels_neon.c);
 * returns the count. */
unsigned sgfp4_neon_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* The NEON kernels' fp16 -> f32 of finite halves, 4 at a time. */
void sgfp4_neon_halves_to_floats(const uint16_t *halves, size_t count, float *out);
/* The NEON row writer's f32 -> f16 or bf16 (`dtype`) of finite floats, round to nearest
 * even, as 16-bit patterns. */
void sgfp4_neon_floats_to_16bit(const float *in, size_t count, sgfp4_dtype dtype,
                                uint16_t *out);
#endif

/* CPU features the kernels need (decode/cpu_features.c). */
bool sgfp4_cpu_has_avx2_fma_f16c(void);
/* AVX-512 F, BW, DQ and VL with the opmask and upper-register state saved by the OS, plus
 * everything sgfp4_cpu_has_avx2_fma_f16c() checks. */
bool sgfp4_cpu_has_avx512(void);

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
