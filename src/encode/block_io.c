/* Moving weights between the row-major input and 64x64 macroblock / leaf buffers.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "encode/block_io.h"
#include "encode/block_plan.h"
#include "encode/simd.h"

/* One row of n weights clipped to the fp16 range. */
static inline void clip_row(const float *restrict row, float *restrict out, unsigned n)
{
    for (unsigned x = 0; x < n; x++) {
        float v = row[x];
        v = v > SGFP4_HALF_MAX ? SGFP4_HALF_MAX : v;
        v = v < -SGFP4_HALF_MAX ? -SGFP4_HALF_MAX : v;
        out[x] = v;
    }
}

/* A whole row of 64 (a constant count, so that it runs on vectors). */
SGFP4_VECTOR_CLONES SGFP4_NO_TRAPS
static void clip_row64(const float *restrict row, float *restrict out)
{
    clip_row(row, out, 64);
}

void sgfp4_gather_block(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                        uint64_t by, uint64_t bx, float *block)
{
    const uint64_t r0 = by * 64, c0 = bx * 64;
    const unsigned h = (unsigned)(rows - r0 < 64 ? rows - r0 : 64);
    const unsigned wd = (unsigned)(cols - c0 < 64 ? cols - c0 : 64);
    if (h < 64 || wd < 64)
        memset(block, 0, 64 * 64 * sizeof *block);
    for (unsigned y = 0; y < h; y++) {
        const float *row = src + (r0 + y) * stride + c0;
        if (wd == 64)
            clip_row64(row, block + y * 64);
        else
            clip_row(row, block + y * 64, wd);
    }
}

void sgfp4_gather_leaf(const float *block, unsigned y, unsigned x, unsigned size, float *leaf)
{
    for (unsigned r = 0; r < size; r++)
        memcpy(leaf + r * size, block + (y + r) * 64 + x, size * sizeof *leaf);
}

void sgfp4_gather_leaf_valid(const float *block, unsigned y, unsigned x, unsigned rows,
                             unsigned cols, float *leaf)
{
    for (unsigned r = 0; r < rows; r++)
        memcpy(leaf + r * cols, block + (y + r) * 64 + x, cols * sizeof *leaf);
}
