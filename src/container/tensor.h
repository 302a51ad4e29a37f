/* The opened-tensor view shared by the container, decode and vulkan layers.
 * A view exists only after sgfp4_tensor_open() accepted every rule, so code that reads
 * through it needs no bounds checks (see docs/format.md, "Acceptance").
 *
 * The caller's bytes may change after the open (a file rewritten under its mapping): what a
 * read's place depends on was therefore copied into the view from the bytes the open
 * validated, and code after the open locates every read through that copy (the accessors
 * below), never by the caller's bytes again. From the caller's bytes it reads values only:
 * codes, scales and biases. A change of them changes values, never a place; so no change
 * of the caller's bytes can move a read out of the container.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CONTAINER_TENSOR_H
#define SGFP4_CONTAINER_TENSOR_H

#include <stdbool.h>

#include "sgfp4.h"
#include "common/alloc.h" /* a view keeps its allocator; what it owns is freed through it */
#include "format/bits.h"

/* Where v2 record b lies and what places its leaves and payloads, as the open validated it:
 * its layout, its split map and each leaf's mode (a T158 payload is half the size of an FP4
 * one, so the modes place the payloads after it). */
typedef struct sgfp4_record_place {
    uint32_t at;     /* offset from record_base (a multiple of 16) | layout (bits 0-2) */
    uint32_t map[3]; /* MIXED: the split map; zero for the uniform layouts */
    uint32_t modes;  /* its leaves' modes: t->modes[modes] (0: every leaf FP4) */
} sgfp4_record_place;

/* The modes of a record's leaves: bit i % 32 of word i / 32 is set when leaf i (storage
 * order) is T158. */
typedef struct sgfp4_leaf_modes {
    uint32_t t158[8];
} sgfp4_leaf_modes;

struct sgfp4_tensor {
    sgfp4_profile profile;
    const uint8_t *data;
    size_t size;
    uint64_t rows, cols;
    uint64_t tiles_y, tiles_x, blocks;
    uint64_t record_base; /* v2: align16(16 + 4B); v1: unused */
    sgfp4_tensor_info info;
    sgfp4_allocator allocator;
    /* The places, copied at open (see the top of this file; the view owns them): */
    uint32_t *v1_offsets;          /* v1: offsets[b] as validated (payload offset | flags) */
    sgfp4_record_place *records;   /* v2: one per block */
    sgfp4_leaf_modes *modes;       /* v2: [0] all FP4, then one per record with a T158 leaf */
    uint8_t *owned;                /* the copy of the container (sgfp4_open_options.copy) */
};

/* v1 block b: its payload and its mode. */
static inline const uint8_t *sgfp4_v1_payload(const sgfp4_tensor *t, uint64_t b)
{
    return t->data + 8 * t->blocks + (t->v1_offsets[b] & ~UINT32_C(0xF));
}
static inline unsigned sgfp4_v1_mode(const sgfp4_tensor *t, uint64_t b)
{
    return t->v1_offsets[b] & 1u;
}

/* v2 record b: its offset from record_base, its first byte, its layout, its split map
 * (MIXED) and its leaves' modes (sgfp4_leaf_modes.t158). */
static inline uint32_t sgfp4_record_offset(const sgfp4_tensor *t, uint64_t b)
{
    return t->records[b].at & ~UINT32_C(0xF);
}
static inline const uint8_t *sgfp4_record_start(const sgfp4_tensor *t, uint64_t b)
{
    return t->data + t->record_base + sgfp4_record_offset(t, b);
}
static inline unsigned sgfp4_record_layout(const sgfp4_tensor *t, uint64_t b)
{
    return t->records[b].at & 7u;
}
static inline const uint32_t *sgfp4_record_map(const sgfp4_tensor *t, uint64_t b)
{
    return t->records[b].map;
}
static inline const uint32_t *sgfp4_record_modes(const sgfp4_tensor *t, uint64_t b)
{
    return t->modes[t->records[b].modes].t158;
}
/* Whether every leaf of v2 record b is FP4. */
static inline bool sgfp4_record_all_fp4(const sgfp4_tensor *t, uint64_t b)
{
    return t->records[b].modes == 0;
}
/* Leaf i's mode (sgfp4_mode) from its record's modes. */
static inline unsigned sgfp4_leaf_mode(const uint32_t *modes, unsigned i)
{
    return modes[i / 32] >> (i % 32) & 1u;
}
/* Where the leaf headers of a record of `layout` start, from the record's first byte. */
static inline unsigned sgfp4_record_headers_at(unsigned layout)
{
    return layout == SGFP4_LAYOUT_MIXED ? 16u : 4u;
}

/* One leaf of a validated block, with its payload located. */
typedef struct sgfp4_leaf_ref {
    uint8_t y, x, size, mode;
    uint32_t header;        /* packed half2 word as stored */
    float scale, bias;      /* exact S and Bias (v2 bias masked with 0xFFF0) */
    const uint8_t *payload; /* points into the container */
} sgfp4_leaf_ref;

/* Fills out[0..n) with the leaves of block b of a validated tensor in storage order and
 * returns n (1..256). b must be < t->blocks. */
unsigned sgfp4_block_leaf_refs(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out);

/* Exact S and Bias of a header word; v2 masks the bias's low 4 bits (the flags). */
static inline float sgfp4_header_scale(uint32_t header)
{
    return sgfp4_half_to_float((uint16_t)(header >> 16));
}
static inline float sgfp4_header_bias(uint32_t header, sgfp4_profile profile)
{
    const uint32_t mask = profile == SGFP4_PROFILE_V2 ? 0xFFF0u : 0xFFFFu;
    return sgfp4_half_to_float((uint16_t)(header & mask));
}

#endif
