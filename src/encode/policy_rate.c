/* Lagrangian pruning of the quadtree (docs/encoder.md, "Rate control"): bottom-up, every
 * node keeps the cheaper of its best leaf (FP4 or T158, minimizing D + lambda R with D the
 * squared error and R the leaf's bytes: header + padded payload) and its four children.
 * SPDX-License-Identifier: MIT */
#include "encode/encode_internal.h"

void sgfp4_prune_rate(const sgfp4_leaf_params params[SGFP4_NODES * 2], double lambda,
                      uint8_t choice[SGFP4_NODES])
{
    double cost[SGFP4_NODES];
    for (int level = SGFP4_LEVELS - 1; level >= 0; level--) {
        const unsigned size = 64u >> level, grid = 1u << level;
        const double r_fp4 = lambda * sgfp4_leaf_cost(size, SGFP4_MODE_FP4);
        const double r_t158 = lambda * sgfp4_leaf_cost(size, SGFP4_MODE_T158);
        for (unsigned r = 0; r < grid; r++)
            for (unsigned c = 0; c < grid; c++) {
                const unsigned node = sgfp4_node_base[level] + r * grid + c;
                const double j_fp4 = params[node * 2].sse + r_fp4;
                const double j_t158 = params[node * 2 + 1].sse + r_t158;
                double best = j_fp4;
                choice[node] = 0;
                if (j_t158 < best) {
                    best = j_t158;
                    choice[node] = 1;
                }
                if (level + 1 < (int)SGFP4_LEVELS) {
                    const unsigned child = sgfp4_node_base[level + 1] + 2 * r * (2 * grid) + 2 * c;
                    const double split = cost[child] + cost[child + 1] +
                                         cost[child + 2 * grid] + cost[child + 2 * grid + 1];
                    if (split < best) {
                        best = split;
                        choice[node] = 2;
                    }
                }
                cost[node] = best;
            }
    }
}
