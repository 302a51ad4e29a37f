/* Rate-controlled analysis of one macroblock: both modes fitted at every quadtree node
 * (341 nodes, 5 sizes), so that pruning for any lambda needs no further fitting. With best
 * fitting, the 16x16, 8x8 and 4x4 nodes are fitted 16 at a time (fit_batch.c); the 64x64 and
 * 32x32 ones one by one (their loops are long enough on their own).
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "encode/block_io.h"
#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "encode/fit_batch.h"
#include "encode/leaf_fit.h"

/* The first level fitted in batches, and the levels' leaf counts are multiples of 16. */
#define FIRST_BATCH_LEVEL 2u

/* The error weights of the valid rows x cols part of the leaf at (y, x), dense. */
static void gather_weights(const float *row_weight, const float *col_weight, unsigned y,
                           unsigned x, unsigned rows, unsigned cols, float *h)
{
    for (unsigned r = 0; r < rows; r++)
        for (unsigned c = 0; c < cols; c++)
            h[r * cols + c] = row_weight[y + r] * col_weight[x + c];
}

/* Parameters of a leaf that lies wholly in the padding: error 0 with S = B = 0 (all codes
 * 0); the pruning then keeps the cheapest leaf, T158 where it is smaller. */
static void padding_leaf(unsigned size, sgfp4_leaf_params p[2])
{
    p[0] = (sgfp4_leaf_params){0, 0, SGFP4_MODE_FP4, 0.0f};
    p[1] = (sgfp4_leaf_params){0, 0, SGFP4_MODE_T158, size > 4 ? 0.0f : INFINITY};
}

static void analyze_one(const float *block, unsigned valid_rows, unsigned valid_cols,
                        const float *row_weight, const float *col_weight, sgfp4_fit fit,
                        sgfp4_profile profile, float *scratch, unsigned level, unsigned r,
                        unsigned c, sgfp4_leaf_params *p)
{
    float *leaf = scratch, *centred = scratch + 4096;
    float *h = row_weight ? scratch + 8192 : NULL;
    const unsigned size = 64u >> level;
    const unsigned rows = sgfp4_valid_extent(valid_rows, r * size, size);
    const unsigned cols = sgfp4_valid_extent(valid_cols, c * size, size);
    const unsigned n = rows * cols;
    if (n == 0) {
        padding_leaf(size, p);
        return;
    }
    sgfp4_leaf_stats st;
    sgfp4_gather_leaf_valid(block, r * size, c * size, rows, cols, leaf);
    if (h)
        gather_weights(row_weight, col_weight, r * size, c * size, rows, cols, h);
    sgfp4_leaf_center(leaf, h, n, centred, &st);
    sgfp4_fit_fp4(leaf, centred, h, &st, n, fit, profile, &p[0]);
    if (size > 4)
        sgfp4_fit_t158(leaf, centred, h, &st, n, fit, profile, &p[1]);
    else /* A 4x4 T158 payload pads to the same 16 bytes as FP4, and the FP4 grid contains
          * every T158 grid (codes -1, 0, 1): never better, not fitted. */
        p[1] = (sgfp4_leaf_params){0, 0, SGFP4_MODE_T158, INFINITY};
}

/* Leaves first .. first + 15 (raster order) of a level into b: weights, error weights
 * (NULL when every slot is valid and unweighted) and valid counts. Returns whether any
 * leaf has a valid weight. */
static int gather_batch(const float *block, unsigned valid_rows, unsigned valid_cols,
                        const float *row_weight, const float *col_weight, unsigned level,
                        unsigned first, float *scratch, sgfp4_batch *b)
{
    const unsigned size = 64u >> level, grid = 1u << level, n = size * size;
    const int full = valid_rows == 64 && valid_cols == 64;
    b->n = n;
    b->w = scratch;
    b->c = scratch + 4096;
    b->h = row_weight || !full ? scratch + 8192 : NULL;
    int any = 0;
    for (unsigned j = 0; j < SGFP4_LANES; j++) {
        const unsigned t = first + j, y0 = t / grid * size, x0 = t % grid * size;
        const unsigned rows = sgfp4_valid_extent(valid_rows, y0, size);
        const unsigned cols = sgfp4_valid_extent(valid_cols, x0, size);
        b->count[j] = rows * cols;
        any |= rows * cols > 0;
        for (unsigned y = 0; y < size; y++) {
            const float *src = block + (y0 + y) * 64 + x0;
            float *w = b->w + y * size * SGFP4_LANES + j;
            for (unsigned x = 0; x < size; x++)
                w[x * SGFP4_LANES] = src[x]; /* padding slots hold the block's zeros */
            if (!b->h)
                continue;
            float *h = b->h + y * size * SGFP4_LANES + j;
            for (unsigned x = 0; x < size; x++)
                h[x * SGFP4_LANES] = y >= rows || x >= cols ? 0.0f
                                     : row_weight ? row_weight[y0 + y] * col_weight[x0 + x]
                                                  : 1.0f;
        }
    }
    (void)n;
    return any;
}

static void analyze_batches(const float *block, unsigned valid_rows, unsigned valid_cols,
                            const float *row_weight, const float *col_weight, sgfp4_fit fit,
                            float *scratch, unsigned level,
                            sgfp4_leaf_params params[SGFP4_NODES * 2])
{
    const unsigned grid = 1u << level, size = 64u >> level;
    for (unsigned first = 0; first < grid * grid; first += SGFP4_LANES) {
        sgfp4_batch b;
        if (!gather_batch(block, valid_rows, valid_cols, row_weight, col_weight, level, first,
                          scratch, &b)) {
            for (unsigned j = 0; j < SGFP4_LANES; j++)
                padding_leaf(size, &params[(sgfp4_node_base[level] + first + j) * 2]);
            continue;
        }
        sgfp4_leaf_params fp4[SGFP4_LANES], t158[SGFP4_LANES];
        sgfp4_batch_center(&b);
        sgfp4_batch_fit(&b, SGFP4_MODE_FP4, fit, fp4);
        if (size > 4)
            sgfp4_batch_fit(&b, SGFP4_MODE_T158, fit, t158);
        for (unsigned j = 0; j < SGFP4_LANES; j++) {
            sgfp4_leaf_params *p = &params[(sgfp4_node_base[level] + first + j) * 2];
            if (b.count[j] == 0) {
                padding_leaf(size, p);
                continue;
            }
            p[0] = fp4[j];
            p[1] = size > 4 ? t158[j]
                            : (sgfp4_leaf_params){0, 0, SGFP4_MODE_T158, INFINITY};
        }
    }
}

void sgfp4_analyze_block(const float *block, unsigned valid_rows, unsigned valid_cols,
                         const float *row_weight, const float *col_weight, sgfp4_fit fit,
                         sgfp4_profile profile, float *scratch,
                         sgfp4_leaf_params params[SGFP4_NODES * 2])
{
    const int batched = fit != SGFP4_FIT_REFERENCE && profile == SGFP4_PROFILE_V2;
    for (unsigned level = 0; level < SGFP4_LEVELS; level++) {
        if (batched && level >= FIRST_BATCH_LEVEL) {
            analyze_batches(block, valid_rows, valid_cols, row_weight, col_weight, fit, scratch,
                            level, params);
            continue;
        }
        const unsigned grid = 1u << level;
        for (unsigned r = 0; r < grid; r++)
            for (unsigned c = 0; c < grid; c++)
                analyze_one(block, valid_rows, valid_cols, row_weight, col_weight, fit,
                            profile, scratch, level, r, c,
                            &params[(sgfp4_node_base[level] + r * grid + c) * 2]);
    }
}
