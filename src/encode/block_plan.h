/* The encoder's vocabulary (docs/encoder.md): the quadtree of a macroblock, the valid part
 * of an edge block, a fitted leaf and the plan of one record. The encoder's pieces are
 * declared by responsibility beside it (leaf_fit.h, quantize.h, error_metric.h, block_io.h,
 * block_policy.h, block_write.h, error_weights.h); every function there is a pure function
 * of its arguments, so the encoder's output does not depend on threads (DECISIONS D7).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_BLOCK_PLAN_H
#define SGFP4_ENCODE_BLOCK_PLAN_H

#include <stdint.h>

#include "sgfp4.h"

#define SGFP4_HALF_MAX 65504.0f
/* Quadtree nodes of one macroblock: 1 + 4 + 16 + 64 + 256. Node (level l, row r, col c) of a
 * 2^l x 2^l grid of edge 64 >> l is at index sgfp4_node_base[l] + r * 2^l + c. */
#define SGFP4_NODES 341u
#define SGFP4_LEVELS 5u
extern const unsigned sgfp4_node_base[SGFP4_LEVELS];

/* Padding (docs/encoder.md, "Edge padding"): the weights of an edge macroblock beyond the
 * tensor (rows >= O or cols >= I of the 64-multiple grid) are cropped by every decoder, so
 * they carry no weight anywhere in the encoder. The valid part of a block is its top-left
 * valid_rows x valid_cols rectangle, and so is the valid part of each of its leaves: the
 * fits, errors and mode choices run on that rectangle alone, gathered densely
 * (sgfp4_gather_leaf_valid); a leaf with no valid weight has error 0 and the cheapest
 * parameters (S = 0, B = 0, T158 where that is cheaper). The writers quantize the whole
 * leaf, so a padding weight (zero) gets the code nearest -B/S: deterministic, never read. */
/* Rows (or columns) of a leaf starting at `at` with edge `size` that lie inside the first
 * `valid` rows (columns) of its block. */
static inline unsigned sgfp4_valid_extent(unsigned valid, unsigned at, unsigned size)
{
    return valid <= at ? 0u : valid - at < size ? valid - at : size;
}

/* A fitted leaf as it will be stored: fp16 scale bits, fp16 bias bits (v2: low 4 bits zero)
 * and the squared error of the decoded leaf against the input. */
typedef struct sgfp4_leaf_params {
    uint16_t scale, bias;
    uint8_t mode;
    float sse;
} sgfp4_leaf_params;

/* One leaf of a block plan. */
typedef struct sgfp4_plan_leaf {
    uint8_t y, x, size, mode;
    uint16_t scale, bias;
} sgfp4_plan_leaf;

/* What one macroblock record will hold: the layout, the split map (MIXED only) and the
 * leaves in storage order. A v1 block is a plan with one 64x64 leaf. */
typedef struct sgfp4_block_plan {
    uint8_t layout;
    uint8_t error_hint; /* v1 only: the mode was chosen by the Laplacian-weighted rule */
    uint16_t count;
    uint32_t split[3];
    sgfp4_plan_leaf leaves[256];
} sgfp4_block_plan;

/* Scratch floats a worker needs for any of the calls above (16-byte aligned). */
#define SGFP4_ENCODE_SCRATCH (4096u * 4u)

#endif
