/* Gathering a macroblock from the tensor, and a leaf from its block (block_io.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_BLOCK_IO_H
#define SGFP4_ENCODE_BLOCK_IO_H

#include <stddef.h>
#include <stdint.h>

/* Copies macroblock (by, bx) of the tensor into block[64*64], zero padded, clipped to the
 * fp16 range. */
void sgfp4_gather_block(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                        uint64_t by, uint64_t bx, float *block);
/* Copies the size x size leaf at (y, x) of a block into leaf[] row-major. */
void sgfp4_gather_leaf(const float *block, unsigned y, unsigned x, unsigned size, float *leaf);
/* Copies the valid rows x cols top-left part of the leaf at (y, x) into leaf[] densely
 * (row-major with stride cols); the same as sgfp4_gather_leaf when rows = cols = size. */
void sgfp4_gather_leaf_valid(const float *block, unsigned y, unsigned x, unsigned rows,
                             unsigned cols, float *leaf);

#endif
