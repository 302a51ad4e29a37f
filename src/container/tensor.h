/* The opened-tensor view shared by the container, decode and vulkan layers.
 * A view exists only after sgfp4_tensor_open() accepted every rule, so code that reads
 * through it needs no bounds checks (see docs/format.md, "Acceptance").
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CONTAINER_TENSOR_H
#define SGFP4_CONTAINER_TENSOR_H

#include "sgfp4.h"
#include "common/alloc.h" /* a view keeps its allocator; what it owns is freed through it */
#include "format/bits.h"

struct sgfp4_tensor {
    sgfp4_profile profile;
    const uint8_t *data;
    size_t size;
    uint64_t rows, cols;
    uint64_t tiles_y, tiles_x, blocks;
    uint64_t record_base; /* v2: align16(16 + 4B); v1: unused */
    sgfp4_tensor_info info;
    sgfp4_allocator allocator;
};

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
