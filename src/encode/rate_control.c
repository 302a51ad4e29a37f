/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "container/tensor.h"
#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "encode/block_write.h"
#include "encode/rate_control.h"

#define CHUNK 16u          /* blocks per work item */
#define ITERATIONS 60u     /* bisection steps at most */
#define LOG2_RANGE 48      /* lambda in [lambda0 * 2^-RANGE, lambda0 * 2^RANGE] */
#define BRACKET_STEP 4     /* the bracket's search steps: factors of 2^4 */
#define FILL_ENOUGH 1e-4   /* the fill stops within 0.01% below the target */
#define FILL_PASSES 8      /* finer lambdas tried when filling the budget */
#define CLOSE_ENOUGH 0.9995 /* stop once the size is within 0.05% below the target */
#define PARALLEL_BLOCKS 64u   /* a pass's blocks per thread at least, to wake the workers */
#define CANCEL_BLOCKS 64u     /* blocks between two cancel checks of a serial loop */

typedef struct rate_ctx {
    const sgfp4_leaf_params *params;
    uint64_t blocks;
    double lambda;
    int build_plans; /* 0 while bisecting: only the sizes are needed */
    sgfp4_block_plan *plans;
    uint64_t *chunk_bytes;
    double *chunk_error; /* sgfp4_rate_curve: each chunk's error, else NULL */
    const sgfp4_allocator *alloc;
    uint8_t *trees;  /* prune_trees(): SGFP4_NODES choices per block */
    sgfp4_team *team;
    unsigned threads; /* of the team, for each pass */
    bool cancelled;
} rate_ctx;

static double tree_sse(const uint8_t *choice, const sgfp4_leaf_params *p, unsigned level,
                       unsigned r, unsigned c);

static void prune_chunk(void *ctx, uint64_t item, unsigned worker)
{
    (void)worker;
    rate_ctx *r = ctx;
    uint8_t choice[SGFP4_NODES];
    uint64_t bytes = 0;
    const uint64_t end = (item + 1) * CHUNK < r->blocks ? (item + 1) * CHUNK : r->blocks;
    double error = 0;
    for (uint64_t b = item * CHUNK; b < end; b++) {
        const sgfp4_leaf_params *p = r->params + b * SGFP4_NODES * 2;
        bytes += sgfp4_prune_rate(p, r->lambda, choice);
        if (r->build_plans)
            sgfp4_plan_from_choices(choice, p, &r->plans[b]);
        if (r->chunk_error)
            error += tree_sse(choice, p, 0, 0, 0);
    }
    r->chunk_bytes[item] = bytes;
    if (r->chunk_error)
        r->chunk_error[item] = error;
}

static void prune_tree_chunk(void *ctx, uint64_t item, unsigned worker)
{
    (void)worker;
    const rate_ctx *r = ctx;
    const uint64_t end = (item + 1) * CHUNK < r->blocks ? (item + 1) * CHUNK : r->blocks;
    for (uint64_t b = item * CHUNK; b < end; b++)
        sgfp4_prune_rate(r->params + b * SGFP4_NODES * 2, r->lambda, r->trees + b * SGFP4_NODES);
}

/* The pruned tree of every block at lambda into trees (on the rate control's threads);
 * false when cancelled. */
static bool prune_trees(rate_ctx *r, double lambda, uint8_t *trees)
{
    r->lambda = lambda;
    r->trees = trees;
    r->cancelled = !sgfp4_team_run_on(r->team, r->threads, (r->blocks + CHUNK - 1) / CHUNK,
                                      prune_tree_chunk, r);
    return !r->cancelled;
}

/* Container bytes at lambda; leaves the plans of that lambda in r->plans. When cancelled,
 * sets r->cancelled and returns 0. */
static uint64_t evaluate(rate_ctx *r, double lambda, uint64_t items)
{
    r->lambda = lambda;
    if (!sgfp4_team_run_on(r->team, r->threads, items, prune_chunk, r)) {
        r->cancelled = true;
        return 0;
    }
    uint64_t total = sgfp4_v2_table_bytes(r->blocks);
    for (uint64_t i = 0; i < items; i++)
        total += r->chunk_bytes[i];
    return total;
}

/* Squared error of the tree a choice array describes. */
static double tree_sse(const uint8_t *choice, const sgfp4_leaf_params *p, unsigned level,
                       unsigned r, unsigned c)
{
    const unsigned node = sgfp4_node_base[level] + r * (1u << level) + c;
    if (level + 1 == SGFP4_LEVELS || choice[node] != 2)
        return p[node * 2 + (choice[node] == 1)].sse;
    double sum = 0;
    for (unsigned q = 0; q < 4; q++)
        sum += tree_sse(choice, p, level + 1, 2 * r + q / 2, 2 * c + q % 2);
    return sum;
}

/* Copies the choices of the subtree rooted at (level, r, c) from src to dst. */
static void copy_subtree(uint8_t *dst, const uint8_t *src, unsigned level, unsigned r,
                         unsigned c)
{
    for (unsigned l = level, span = 1; l < SGFP4_LEVELS; l++, span *= 2)
        for (unsigned y = 0; y < span; y++)
            for (unsigned x = 0; x < span; x++) {
                const unsigned node =
                    sgfp4_node_base[l] + (r * span + y) * (1u << l) + c * span + x;
                dst[node] = src[node];
            }
}

/* Bytes and squared error of the record a choice array gives. */
static double choice_bytes(const uint8_t *choice, const sgfp4_leaf_params *p,
                           sgfp4_block_plan *plan)
{
    sgfp4_plan_from_choices(choice, p, plan);
    return (double)sgfp4_record_bytes(plan);
}

/* Moves block b's tree `cur` toward `fine`: the whole fine tree, or else single 32x32
 * quadrants of it, when that lowers the error and the extra bytes fit the budget. */
static void improve_block(rate_ctx *r, uint64_t b, uint8_t *cur, const uint8_t *fine,
                          double *budget)
{
    const sgfp4_leaf_params *p = r->params + b * SGFP4_NODES * 2;
    sgfp4_block_plan plan;
    const double have = (double)sgfp4_record_bytes(&r->plans[b]);
    double sse = tree_sse(cur, p, 0, 0, 0);
    double bytes = choice_bytes(fine, p, &plan);
    if (bytes - have <= *budget && tree_sse(fine, p, 0, 0, 0) < sse) {
        memcpy(cur, fine, SGFP4_NODES);
        r->plans[b] = plan;
        *budget -= bytes - have;
        return;
    }
    double best_bytes = have;
    int changed = 0;
    for (unsigned q = 0; q < 4; q++) {
        uint8_t trial[SGFP4_NODES];
        memcpy(trial, cur, sizeof trial);
        trial[0] = 2;
        copy_subtree(trial, fine, 1, q / 2, q % 2);
        const double trial_sse = tree_sse(trial, p, 0, 0, 0);
        bytes = choice_bytes(trial, p, &plan);
        if (trial_sse < sse && bytes - have <= *budget) {
            memcpy(cur, trial, SGFP4_NODES);
            sse = trial_sse;
            best_bytes = bytes;
            changed = 1;
        }
    }
    if (changed) {
        sgfp4_plan_from_choices(cur, p, &r->plans[b]);
        *budget -= best_bytes - have;
    }
}

/* Spends what is left below the target. Block by block, a block takes its tree at a finer
 * lambda (first the bisection's other end, whose total was above the target, then ever
 * finer ones), or single quadrants of it, when that lowers the error and the extra bytes
 * fit. Lands the container close below the target even when few blocks change their tree
 * near the final lambda. The plans stay valid when it fails. */
static sgfp4_status fill_budget(rate_ctx *r, double lambda_coarse, double lambda_fine,
                                double budget, double target)
{
    const double enough = FILL_ENOUGH * target; /* stop once this close */
    uint8_t *cur = sgfp4_alloc_with(r->alloc, r->blocks * SGFP4_NODES);
    uint8_t *fine = sgfp4_alloc_with(r->alloc, r->blocks * SGFP4_NODES);
    if (!cur || !fine) {
        sgfp4_free_with(r->alloc, cur);
        sgfp4_free_with(r->alloc, fine);
        return SGFP4_ERR_NOMEM;
    }
    double lambda = lambda_fine;
    if (prune_trees(r, lambda_coarse, cur))
        for (unsigned pass = 0; pass < FILL_PASSES && budget > enough; pass++, lambda *= 0.25) {
            /* The trees at the finer lambda come first, on every thread; spending the
             * budget on them runs in block order. */
            if (!prune_trees(r, lambda, fine))
                break;
            for (uint64_t b = 0; b < r->blocks && budget > 0; b++) {
                uint8_t *f = fine + b * SGFP4_NODES;
                if (memcmp(f, cur + b * SGFP4_NODES, SGFP4_NODES) != 0)
                    improve_block(r, b, cur + b * SGFP4_NODES, f, &budget);
                if (b % CANCEL_BLOCKS == CANCEL_BLOCKS - 1 && sgfp4_team_cancelled(r->team)) {
                    r->cancelled = true;
                    break;
                }
            }
            if (r->cancelled)
                break;
        }
    sgfp4_free_with(r->alloc, cur);
    sgfp4_free_with(r->alloc, fine);
    return r->cancelled ? SGFP4_ERR_CANCELLED : SGFP4_OK;
}

/* lambda0: the mean squared error per byte of whole-block FP4 leaves, a natural unit. */
static double start_lambda(const sgfp4_leaf_params *params, uint64_t blocks)
{
    double root_sse = 0;
    for (uint64_t b = 0; b < blocks; b++)
        root_sse += params[b * SGFP4_NODES * 2].sse;
    const double lambda0 = root_sse / ((double)blocks * sgfp4_leaf_cost(64, SGFP4_MODE_FP4));
    return lambda0 > 0 ? lambda0 : 1.0;
}

int sgfp4_rate_curve(const sgfp4_leaf_params *params, uint64_t blocks, sgfp4_team *team,
                     const sgfp4_allocator *alloc, double *lambda, uint64_t *bytes,
                     double *error)
{
    const uint64_t items = (blocks + CHUNK - 1) / CHUNK;
    rate_ctx r = {params, blocks, 0, 0, NULL, sgfp4_alloc_with(alloc, items * sizeof(uint64_t)),
                  sgfp4_alloc_with(alloc, items * sizeof(double)), alloc, NULL, team,
                  sgfp4_team_threads(team), false};
    if (!r.chunk_bytes || !r.chunk_error) {
        sgfp4_free_with(alloc, r.chunk_bytes);
        sgfp4_free_with(alloc, r.chunk_error);
        return 0;
    }
    const double lambda0 = start_lambda(params, blocks);
    for (unsigned k = 0; k < SGFP4_CURVE_POINTS; k++) {
        /* 2^(k/2): whole powers by ldexp, the half steps times sqrt(2) (correctly rounded) */
        const int e = (int)k - SGFP4_CURVE_FINEST;
        lambda[k] = ldexp(lambda0, e >= 0 ? e / 2 : -((1 - e) / 2)) * (e % 2 ? sqrt(2.0) : 1.0);
        bytes[k] = evaluate(&r, lambda[k], items);
        if (r.cancelled)
            break;
        double sum = 0;
        for (uint64_t i = 0; i < items; i++)
            sum += r.chunk_error[i];
        error[k] = sum;
    }
    sgfp4_free_with(alloc, r.chunk_bytes);
    sgfp4_free_with(alloc, r.chunk_error);
    return !r.cancelled;
}

sgfp4_status sgfp4_rate_control(const sgfp4_leaf_params *params, uint64_t blocks,
                                uint64_t weights, double target_bpw, sgfp4_team *team,
                                const sgfp4_allocator *alloc, sgfp4_block_plan *plans)
{
    const uint64_t items = (blocks + CHUNK - 1) / CHUNK;
    /* A pass is short (the trees' pruning, no fitting, about a microsecond a block): the
     * workers join it only when each gets enough blocks to be worth waking, and waiting
     * for. */
    const uint64_t worth = blocks / PARALLEL_BLOCKS;
    unsigned threads = sgfp4_team_threads(team);
    if (worth < threads)
        threads = worth > 1 ? (unsigned)worth : 1;
    rate_ctx r = {params, blocks, 0, 0, plans, sgfp4_alloc_with(alloc, items * sizeof(uint64_t)),
                  NULL, alloc, NULL, team, threads, false};
    if (!r.chunk_bytes)
        return SGFP4_ERR_NOMEM;
    const double lambda0 = start_lambda(params, blocks);
    const double target = target_bpw * (double)weights / 8.0;
    /* The bracket: from lambda0, steps of 2^BRACKET_STEP toward the target until it is
     * crossed, within lambda0 * [2^-LOG2_RANGE, 2^LOG2_RANGE] (ldexp is exact). */
    double lo, hi;
    int e = 0;
    uint64_t bytes_hi = evaluate(&r, lambda0, items);
    if (r.cancelled)
        goto cancelled;
    if ((double)bytes_hi <= target) {
        hi = lambda0;
        for (;;) {
            if (e <= -LOG2_RANGE) {
                r.build_plans = 1;
                evaluate(&r, hi, items);
                sgfp4_free_with(alloc, r.chunk_bytes);
                /* the finest trees fit: plans hold them */
                return r.cancelled ? SGFP4_ERR_CANCELLED : SGFP4_OK;
            }
            e -= BRACKET_STEP;
            const uint64_t bytes = evaluate(&r, ldexp(lambda0, e), items);
            if (r.cancelled)
                goto cancelled;
            if ((double)bytes > target) {
                lo = ldexp(lambda0, e);
                break;
            }
            hi = ldexp(lambda0, e);
            bytes_hi = bytes;
        }
    } else {
        lo = lambda0;
        hi = lambda0;
        while (e < LOG2_RANGE && (double)bytes_hi > target) {
            lo = hi;
            e += BRACKET_STEP;
            hi = ldexp(lambda0, e);
            bytes_hi = evaluate(&r, hi, items);
            if (r.cancelled)
                goto cancelled;
        }
    }
    /* Bisection over log(lambda) by geometric means (sqrt is correctly rounded, so no libm
     * approximation enters the output). The coarsest trees above the target (a tensor too
     * small to reach it) skip it. */
    for (unsigned k = 0; k < ITERATIONS && (double)bytes_hi <= target &&
                         (double)bytes_hi < CLOSE_ENOUGH * target;
         k++) {
        if (hi <= lo * (1.0 + 1e-6))
            break; /* a jump in size the bisection cannot split: fill_budget() does */
        const double mid = sqrt(lo) * sqrt(hi);
        const uint64_t bytes = evaluate(&r, mid, items);
        if (r.cancelled)
            goto cancelled;
        if ((double)bytes <= target) {
            hi = mid;
            bytes_hi = bytes;
        } else {
            lo = mid;
        }
    }
    r.build_plans = 1;
    bytes_hi = evaluate(&r, hi, items);
    if (r.cancelled)
        goto cancelled;
    const sgfp4_status s = fill_budget(&r, hi, lo, target - (double)bytes_hi, target);
    sgfp4_free_with(alloc, r.chunk_bytes);
    return s;
cancelled:
    sgfp4_free_with(alloc, r.chunk_bytes);
    return SGFP4_ERR_CANCELLED;
}
