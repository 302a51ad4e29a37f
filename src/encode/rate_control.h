/* Rate control for the v2 rate policy: finds the Lagrange multiplier whose pruned trees
 * give the largest container not above the target size, by bisection over log(lambda).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_RATE_CONTROL_H
#define SGFP4_ENCODE_RATE_CONTROL_H

#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "encode/team.h"

/* params: SGFP4_NODES * 2 per block (sgfp4_analyze_block). Fills plans[0..blocks); the
 * pruning of every pass runs on the team. Working memory from alloc (sgfp4_alloc_with).
 * Returns SGFP4_OK, SGFP4_ERR_NOMEM or SGFP4_ERR_CANCELLED (the team's cancel hook). */
sgfp4_status sgfp4_rate_control(const sgfp4_leaf_params *params, uint64_t blocks,
                                uint64_t weights, double target_bpw, sgfp4_team *team,
                                const sgfp4_allocator *alloc, sgfp4_block_plan *plans);

/* The rate-distortion curve of a tensor, for allocating bits across tensors: at the
 * multipliers lambda[k] = lambda0 * 2^((k - SGFP4_CURVE_FINEST) / 2), k < SGFP4_CURVE_POINTS
 * (lambda0 as rate control's start: the mean error per byte of whole-block FP4 leaves), the
 * container bytes and the metric's error of the pruned trees (what rate control would choose
 * at that multiplier). Bytes fall and errors rise with k. Returns 0 when out of memory or
 * cancelled (the team's cancel hook). */
#define SGFP4_CURVE_POINTS 57u
#define SGFP4_CURVE_FINEST 48
int sgfp4_rate_curve(const sgfp4_leaf_params *params, uint64_t blocks, sgfp4_team *team,
                     const sgfp4_allocator *alloc, double *lambda, uint64_t *bytes,
                     double *error);

/* sgfp4_rate_curve() of a tensor as sgfp4_encode() with these options (v2, rate policy;
 * else SGFP4_ERR_ARGUMENT) would analyse it: SGFP4_CURVE_POINTS values in each array. The
 * error is the options' metric, whose row and column weights are each scaled to mean 1
 * (docs/encoder.md, "Error metrics"). Errors as sgfp4_encode(). */
sgfp4_status sgfp4_encode_rate_curve(const float *src, uint64_t rows, uint64_t cols,
                                     size_t src_stride, const sgfp4_encode_options *options,
                                     double *lambda, uint64_t *bytes, double *error);

#endif
