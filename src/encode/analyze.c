/* Rate-controlled analysis of one macroblock: both modes fitted at every quadtree node
 * (341 nodes, 5 sizes), so that pruning for any lambda needs no further fitting.
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "encode/encode_internal.h"

void sgfp4_analyze_block(const float *block, unsigned valid_rows, unsigned valid_cols,
                         sgfp4_fit fit, sgfp4_profile profile, float *scratch,
                         sgfp4_leaf_params params[SGFP4_NODES * 2])
{
    float *leaf = scratch, *centred = scratch + 4096;
    for (unsigned level = 0; level < SGFP4_LEVELS; level++) {
        const unsigned size = 64u >> level, grid = 1u << level;
        for (unsigned r = 0; r < grid; r++)
            for (unsigned c = 0; c < grid; c++) {
                const unsigned node = sgfp4_node_base[level] + r * grid + c;
                const unsigned rows = sgfp4_valid_extent(valid_rows, r * size, size);
                const unsigned cols = sgfp4_valid_extent(valid_cols, c * size, size);
                const unsigned n = rows * cols;
                if (n == 0) {
                    /* All padding: error 0 at any parameters; S = B = 0 (all codes 0). The
                     * pruning then keeps the cheapest leaf, T158 where it is smaller. */
                    params[node * 2] = (sgfp4_leaf_params){0, 0, SGFP4_MODE_FP4, 0.0f};
                    params[node * 2 + 1] = (sgfp4_leaf_params){
                        0, 0, SGFP4_MODE_T158, size > 4 ? 0.0f : INFINITY};
                    continue;
                }
                sgfp4_leaf_stats st;
                sgfp4_gather_leaf_valid(block, r * size, c * size, rows, cols, leaf);
                sgfp4_leaf_center(leaf, n, centred, &st);
                sgfp4_fit_fp4(leaf, centred, &st, n, fit, profile, &params[node * 2]);
                if (size > 4) {
                    sgfp4_fit_t158(leaf, centred, &st, n, fit, profile, &params[node * 2 + 1]);
                } else {
                    /* A 4x4 T158 payload pads to the same 16 bytes as FP4, and the FP4 grid
                     * contains every T158 grid (codes -1, 0, 1): never better, not fitted. */
                    params[node * 2 + 1] = (sgfp4_leaf_params){0, 0, SGFP4_MODE_T158, INFINITY};
                }
            }
    }
}
