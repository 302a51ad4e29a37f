/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>

#include "common/parallel.h"
#include "encode/rate_control.h"

#define CHUNK 16u          /* blocks per work item */
#define ITERATIONS 60u     /* bisection steps at most */
#define LOG2_RANGE 48.0    /* lambda = lambda0 * 2^t, t in [-RANGE, RANGE] */
#define CLOSE_ENOUGH 0.9995 /* stop once the size is within 0.05% below the target */

typedef struct rate_ctx {
    const sgfp4_leaf_params *params;
    uint64_t blocks;
    double lambda;
    sgfp4_block_plan *plans;
    uint64_t *chunk_bytes;
} rate_ctx;

static void prune_chunk(void *ctx, uint64_t item, unsigned worker)
{
    (void)worker;
    rate_ctx *r = ctx;
    uint8_t choice[SGFP4_NODES];
    uint64_t bytes = 0;
    const uint64_t end = (item + 1) * CHUNK < r->blocks ? (item + 1) * CHUNK : r->blocks;
    for (uint64_t b = item * CHUNK; b < end; b++) {
        const sgfp4_leaf_params *p = r->params + b * SGFP4_NODES * 2;
        sgfp4_prune_rate(p, r->lambda, choice);
        sgfp4_plan_from_choices(choice, p, &r->plans[b]);
        bytes += sgfp4_record_bytes(&r->plans[b]);
    }
    r->chunk_bytes[item] = bytes;
}

/* Container bytes at lambda; leaves the plans of that lambda in r->plans. */
static uint64_t evaluate(rate_ctx *r, double lambda, unsigned threads, uint64_t items)
{
    r->lambda = lambda;
    sgfp4_parallel_for(items, threads, prune_chunk, r);
    uint64_t total = sgfp4_v2_table_bytes(r->blocks);
    for (uint64_t i = 0; i < items; i++)
        total += r->chunk_bytes[i];
    return total;
}

/* Spends what is left below the target: in block order, a block takes its plan at the finer
 * lambda (the bisection's other end, whose total was above the target) when the extra bytes
 * still fit. Lands the container within a few bytes of the target. */
static void fill_budget(rate_ctx *r, double lambda_fine, double budget)
{
    uint8_t choice[SGFP4_NODES];
    sgfp4_block_plan fine;
    for (uint64_t b = 0; b < r->blocks && budget > 0; b++) {
        const sgfp4_leaf_params *p = r->params + b * SGFP4_NODES * 2;
        sgfp4_prune_rate(p, lambda_fine, choice);
        sgfp4_plan_from_choices(choice, p, &fine);
        const double extra =
            (double)sgfp4_record_bytes(&fine) - (double)sgfp4_record_bytes(&r->plans[b]);
        if (extra > 0 && extra <= budget) {
            r->plans[b] = fine;
            budget -= extra;
        }
    }
}

int sgfp4_rate_control(const sgfp4_leaf_params *params, uint64_t blocks, uint64_t weights,
                       double target_bpw, unsigned threads, sgfp4_block_plan *plans)
{
    const uint64_t items = (blocks + CHUNK - 1) / CHUNK;
    rate_ctx r = {params, blocks, 0, plans, malloc(items * sizeof(uint64_t))};
    if (!r.chunk_bytes)
        return 0;
    /* lambda0: the mean squared error per byte of whole-block FP4 leaves, a natural unit. */
    double root_sse = 0;
    for (uint64_t b = 0; b < blocks; b++)
        root_sse += params[b * SGFP4_NODES * 2].sse;
    double lambda0 = root_sse / ((double)blocks * sgfp4_leaf_cost(64, SGFP4_MODE_FP4));
    if (!(lambda0 > 0))
        lambda0 = 1.0;
    const double target = target_bpw * (double)weights / 8.0;
    double lo = -LOG2_RANGE, hi = LOG2_RANGE;
    uint64_t bytes_hi = evaluate(&r, lambda0 * exp2(hi), threads, items);
    if ((double)bytes_hi < target) {
        const uint64_t bytes_lo = evaluate(&r, lambda0 * exp2(lo), threads, items);
        if ((double)bytes_lo <= target) {
            free(r.chunk_bytes);
            return 1; /* the finest trees fit: plans hold them */
        }
        for (unsigned k = 0; k < ITERATIONS && (double)bytes_hi < CLOSE_ENOUGH * target; k++) {
            const double mid = 0.5 * (lo + hi);
            const uint64_t bytes = evaluate(&r, lambda0 * exp2(mid), threads, items);
            if ((double)bytes <= target) {
                hi = mid;
                bytes_hi = bytes;
            } else {
                lo = mid;
            }
        }
    }
    bytes_hi = evaluate(&r, lambda0 * exp2(hi), threads, items);
    fill_budget(&r, lambda0 * exp2(lo), target - (double)bytes_hi);
    free(r.chunk_bytes);
    return 1;
}
