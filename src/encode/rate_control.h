/* Rate control for the v2 rate policy: finds the Lagrange multiplier whose pruned trees
 * give the largest container not above the target size, by bisection over log(lambda).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_RATE_CONTROL_H
#define SGFP4_ENCODE_RATE_CONTROL_H

#include "encode/encode_internal.h"
#include "encode/team.h"

/* params: SGFP4_NODES * 2 per block (sgfp4_analyze_block). Fills plans[0..blocks); the
 * pruning of every pass runs on the team. Working memory from alloc (sgfp4_alloc_with).
 * Returns SGFP4_OK, SGFP4_ERR_NOMEM or SGFP4_ERR_CANCELLED (the team's cancel hook). */
sgfp4_status sgfp4_rate_control(const sgfp4_leaf_params *params, uint64_t blocks,
                                uint64_t weights, double target_bpw, sgfp4_team *team,
                                const sgfp4_allocator *alloc, sgfp4_block_plan *plans);

#endif
