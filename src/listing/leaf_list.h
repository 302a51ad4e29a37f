/* The listings: a block's leaves as the fast kernels read them, the same leaves as
 * sgfp4_block_leaf_refs() (tests compare them) computed with less work per leaf
 * (listing/leaf_parse.c, and per SIMD set listing/leaves_avx2.c, leaves_avx512.c,
 * leaves_neon.c). The layer between container/ and the two kernel layers built on it,
 * decode/ and matvec/, which include nothing of each other.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_LISTING_LEAF_LIST_H
#define SGFP4_LISTING_LEAF_LIST_H

#include "common/cpu.h"
#include "container/tensor.h"

/* Fills out[] with the leaves of block b (b < t->blocks) exactly as sgfp4_block_leaf_refs()
 * does, faster (listing/leaf_parse.c); returns the count. */
unsigned sgfp4_list_block_refs(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out);
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
unsigned sgfp4_list_record_positions(const sgfp4_tensor *t, uint64_t b, uint32_t *buffer,
                                     const uint32_t **desc, const uint8_t **headers);

/* Exact fp16 -> f32 of a finite value, subnormals included, whatever the FPU modes. */
float sgfp4_half_to_float_finite(uint32_t half);

/* Leaf kinds: (size, mode) as 2 * log2(size / 4) + mode, 0..9. */
#define SGFP4_LEAF_KINDS 10u

/* A block's leaves as the SIMD kernels list them: arrays in storage order, 16 entries
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
/* Lists block b of t (b < t->blocks) into *list, 8 headers at a time (listing/leaves_avx2.c;
 * AVX2 CPUs only); returns the count. */
unsigned sgfp4_avx2_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* The AVX2 listing's fp16 -> f32 of finite halves, 8 at a time (AVX2 CPUs only). */
void sgfp4_avx2_halves_to_floats(const uint16_t *halves, size_t count, float *out);
/* The same, 16 headers at a time (listing/leaves_avx512.c; AVX-512 CPUs only). */
unsigned sgfp4_avx512_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* The AVX-512 listing's fp16 -> f32 of finite halves, 16 at a time (AVX-512 CPUs only). */
void sgfp4_avx512_halves_to_floats(const uint16_t *halves, size_t count, float *out);
#endif

#ifdef SGFP4_HAVE_NEON_KERNELS
/* Lists block b of t (b < t->blocks) into *list, 4 headers at a time (listing/leaves_neon.c);
 * returns the count. */
unsigned sgfp4_neon_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list);
/* The NEON listing's fp16 -> f32 of finite halves, 4 at a time. */
void sgfp4_neon_halves_to_floats(const uint16_t *halves, size_t count, float *out);
#endif

#endif
