/* Rate-controlled analysis of one macroblock: both modes fitted at every quadtree node
 * (341 nodes, 5 sizes), so that pruning for any lambda needs no further fitting.
 * SPDX-License-Identifier: MIT */
#include "encode/encode_internal.h"

void sgfp4_analyze_block(const float *block, sgfp4_fit fit, sgfp4_profile profile,
                         float *scratch, sgfp4_leaf_params params[SGFP4_NODES * 2])
{
    float *leaf = scratch, *work = scratch + 4096;
    for (unsigned level = 0; level < SGFP4_LEVELS; level++) {
        const unsigned size = 64u >> level, grid = 1u << level, n = size * size;
        for (unsigned r = 0; r < grid; r++)
            for (unsigned c = 0; c < grid; c++) {
                const unsigned node = sgfp4_node_base[level] + r * grid + c;
                sgfp4_gather_leaf(block, r * size, c * size, size, leaf);
                sgfp4_fit_fp4(leaf, n, fit, profile, work, &params[node * 2]);
                sgfp4_fit_t158(leaf, n, fit, profile, work, &params[node * 2 + 1]);
            }
    }
}
