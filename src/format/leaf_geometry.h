/* Leaf geometry of a v2 macroblock: where each leaf of a record sits, in storage order.
 * Uniform layouts store leaves in row-major raster order of their grid; MIXED stores them
 * in the pre-order DFS order of its split map (DECISIONS D5).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_FORMAT_LEAF_GEOMETRY_H
#define SGFP4_FORMAT_LEAF_GEOMETRY_H

#include <stdint.h>

typedef struct sgfp4_leaf_pos {
    uint8_t y, x, size;
} sgfp4_leaf_pos;

typedef enum sgfp4_split_result {
    SGFP4_SPLIT_OK = 0,
    SGFP4_SPLIT_OVERRUN,  /* a bit past bit 84 would be read (cannot happen for 64x64) */
    SGFP4_SPLIT_TRAILING  /* a bit after the last consumed one is set */
} sgfp4_split_result;

/* Edge of every leaf of a uniform layout (0,1,2,3,5), or 0 for MIXED / invalid layouts. */
unsigned sgfp4_uniform_leaf_size(unsigned layout);

/* Fills out[0..n) with the raster-order leaves of uniform `layout`; returns n (0 if not
 * uniform). out must hold 256 entries. */
unsigned sgfp4_uniform_leaves(unsigned layout, sgfp4_leaf_pos *out);

/* Walks the split map words[3] (bit k = bit k%32 of words[k/32]); fills out[0..*count) in
 * DFS order (out must hold 256 entries), *bits_used with the number of bits consumed, and
 * checks that no later bit is set. */
sgfp4_split_result sgfp4_split_walk(const uint32_t words[3], sgfp4_leaf_pos *out,
                                    unsigned *count, unsigned *bits_used);

#endif
