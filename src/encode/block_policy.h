/* Per-macroblock analysis and the policies that choose a block's leaves: rate pruning, the
 * spec's thresholds, v1's one leaf (analyze.c, policy_rate.c, policy_threshold.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_BLOCK_POLICY_H
#define SGFP4_ENCODE_BLOCK_POLICY_H

#include "encode/block_plan.h"
#include "sgfp4.h"

/* Fits both modes at every node of a block whose valid part is its top-left
 * valid_rows x valid_cols: params[node*2 + mode]. row_weight and col_weight (64 each, or
 * both NULL: unweighted) give the error weight of block weight (y, x) as
 * row_weight[y] * col_weight[x]. */
void sgfp4_analyze_block(const float *block, unsigned valid_rows, unsigned valid_cols,
                         const float *row_weight, const float *col_weight, sgfp4_fit fit,
                         sgfp4_profile profile, float *scratch,
                         sgfp4_leaf_params params[SGFP4_NODES * 2]);
/* Cost in bytes of a leaf of edge size in mode: 4 (header) + payload padded to 16. */
static inline uint32_t sgfp4_leaf_cost(unsigned size, unsigned mode)
{
    const uint32_t payload = mode ? size * size / 4u : size * size / 2u;
    return 4u + ((payload + 15u) & ~15u);
}
/* Lagrangian pruning: chooses per node minimizing D + lambda R bottom-up; fills choice and
 * returns the bytes of the record it gives (sgfp4_record_bytes of its plan). */
uint32_t sgfp4_prune_rate(const sgfp4_leaf_params params[SGFP4_NODES * 2], double lambda,
                          uint8_t choice[SGFP4_NODES]);
/* The spec's threshold split policy; fills the plan. mean_square: the tensor's mean w^2. */
void sgfp4_plan_threshold(const float *block, unsigned valid_rows, unsigned valid_cols,
                          const sgfp4_encode_options *o, double mean_square, float *scratch,
                          sgfp4_block_plan *plan);
/* One v1 block: a single 64x64 leaf, mode chosen by the reference rule. */
void sgfp4_plan_v1(const float *block, unsigned valid_rows, unsigned valid_cols,
                   const sgfp4_encode_options *o, float *scratch, sgfp4_block_plan *plan);

#endif
