/* The spec's reference split policy (§22.7) and the v1 block choice.
 * A node is fitted in both modes and its mode chosen by the dual-mode rule; it becomes a
 * leaf when its Laplacian-weighted error per weight is within 10% of the size's threshold
 * (or it is 4x4). Otherwise its children are decided recursively, and the split is kept
 * only if it lowers the error by at least 20% (hysteresis).
 * Thresholds (docs/encoder.md): error per weight <= threshold * base[size] * mean(w^2).
 * SPDX-License-Identifier: MIT */
#include "encode/block_io.h"
#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "encode/block_write.h"
#include "encode/error_metric.h"
#include "encode/leaf_fit.h"

static const double base_threshold[SGFP4_LEVELS] = {0.018, 0.024, 0.030, 0.036, 0.0};

typedef struct threshold_ctx {
    const float *block;
    unsigned valid_rows, valid_cols;
    const sgfp4_encode_options *o;
    double mean_square;
    float *scratch;
    sgfp4_profile profile;
    uint8_t choice[SGFP4_NODES];
    sgfp4_leaf_params params[SGFP4_NODES * 2];
} threshold_ctx;

/* Decides the subtree at (level, r, c); returns its Laplacian-weighted error. */
static double decide(threshold_ctx *t, unsigned level, unsigned r, unsigned c)
{
    const unsigned size = 64u >> level, grid = 1u << level;
    const unsigned node = sgfp4_node_base[level] + r * grid + c;
    const unsigned rows = sgfp4_valid_extent(t->valid_rows, r * size, size);
    const unsigned cols = sgfp4_valid_extent(t->valid_cols, c * size, size);
    const unsigned n = rows * cols; /* the valid weights: the padding counts nowhere */
    sgfp4_leaf_params *fp4 = &t->params[node * 2], *t158 = &t->params[node * 2 + 1];
    if (n == 0) {
        /* All padding: a leaf at once, error 0, T158 with S = B = 0 (the cheaper payload;
         * the same 16 bytes as FP4 at 4x4). */
        *fp4 = (sgfp4_leaf_params){0, 0, SGFP4_MODE_FP4, 0.0f};
        *t158 = (sgfp4_leaf_params){0, 0, SGFP4_MODE_T158, 0.0f};
        t->choice[node] = SGFP4_MODE_T158;
        return 0.0;
    }
    float *leaf = t->scratch, *work = t->scratch + 4096;
    sgfp4_leaf_stats st;
    sgfp4_gather_leaf_valid(t->block, r * size, c * size, rows, cols, leaf);
    sgfp4_leaf_center(leaf, NULL, n, work, &st);
    sgfp4_fit_fp4(leaf, work, NULL, &st, n, t->o->fit, t->profile, fp4);
    sgfp4_fit_t158(leaf, work, NULL, &st, n, t->o->fit, t->profile, t158);
    double error;
    t->choice[node] = (uint8_t)sgfp4_choose_mode_reference(
        leaf, rows, cols, fp4, t158, t->o->delta, t->profile, work, &error);
    if (level + 1 == SGFP4_LEVELS)
        return error;
    const double threshold =
        t->o->threshold * base_threshold[level] * t->mean_square * (double)n;
    if (error <= 1.1 * threshold)
        return error;
    double children = 0;
    for (unsigned q = 0; q < 4; q++)
        children += decide(t, level + 1, 2 * r + q / 2, 2 * c + q % 2);
    if (children <= 0.8 * error) {
        t->choice[node] = 2;
        return children;
    }
    return error;
}

void sgfp4_plan_threshold(const float *block, unsigned valid_rows, unsigned valid_cols,
                          const sgfp4_encode_options *o, double mean_square, float *scratch,
                          sgfp4_block_plan *plan)
{
    /* The context lives in the second half of the worker's scratch; decide() uses the
     * first 2 * 4096 floats. */
    _Static_assert(sizeof(threshold_ctx) <= (SGFP4_ENCODE_SCRATCH - 2 * 4096) * sizeof(float),
                   "threshold context does not fit the scratch");
    threshold_ctx *ctx = (threshold_ctx *)(void *)(scratch + 2 * 4096);
    ctx->block = block;
    ctx->valid_rows = valid_rows;
    ctx->valid_cols = valid_cols;
    ctx->o = o;
    ctx->mean_square = mean_square;
    ctx->scratch = scratch;
    ctx->profile = SGFP4_PROFILE_V2;
    decide(ctx, 0, 0, 0);
    sgfp4_plan_from_choices(ctx->choice, ctx->params, plan);
}

void sgfp4_plan_v1(const float *block, unsigned valid_rows, unsigned valid_cols,
                   const sgfp4_encode_options *o, float *scratch, sgfp4_block_plan *plan)
{
    /* The fit sees the valid weights only (dense in scratch); the writer quantizes the
     * whole block against the stored values. */
    const unsigned n = valid_rows * valid_cols;
    const float *valid = block;
    float *work = scratch + 4096;
    if (n < 4096) {
        sgfp4_gather_leaf_valid(block, 0, 0, valid_rows, valid_cols, scratch);
        valid = scratch;
    }
    sgfp4_leaf_params p[2];
    sgfp4_leaf_stats st;
    sgfp4_leaf_center(valid, NULL, n, work, &st);
    sgfp4_fit_fp4(valid, work, NULL, &st, n, o->fit, SGFP4_PROFILE_V1, &p[0]);
    sgfp4_fit_t158(valid, work, NULL, &st, n, o->fit, SGFP4_PROFILE_V1, &p[1]);
    double error;
    const unsigned mode = sgfp4_choose_mode_reference(valid, valid_rows, valid_cols, &p[0],
                                                      &p[1], o->delta, SGFP4_PROFILE_V1, work,
                                                      &error);
    plan->layout = SGFP4_LAYOUT_UNIFORM_64;
    plan->error_hint = 1; /* chosen by the Laplacian-weighted ("pyramid") rule */
    plan->count = 1;
    plan->split[0] = plan->split[1] = plan->split[2] = 0;
    plan->leaves[0] = (sgfp4_plan_leaf){0, 0, 64, (uint8_t)mode, p[mode].scale, p[mode].bias};
}
