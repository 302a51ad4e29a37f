/* Lagrangian pruning of the quadtree (docs/encoder.md, "Rate control"): bottom-up, every
 * node keeps the cheaper of its best leaf (FP4 or T158, minimizing D + lambda R with D the
 * squared error and R the leaf's bytes: header + padded payload) and its four children.
 * Then the record's own bytes are counted exactly: a MIXED record pays 12 bytes of split
 * map and pads its leaf headers to 16 bytes, so each uniform layout is compared with the
 * pruned tree at its exact record cost, and the cheapest wins.
 * SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/block_policy.h"
#include "format/bits.h"

/* Bytes of sb_header, split map and header pad beyond the leaves' own 4-byte headers. */
static double record_overhead(unsigned leaves, int mixed)
{
    return (double)sgfp4_align16(4u + (mixed ? 12u : 0u) + 4u * leaves) - 4.0 * leaves;
}

/* What a subtree's leaves add up to: count, bytes (headers + padded payloads), and the
 * smallest and largest leaf level (equal when the tree is uniform). */
typedef struct tree_total {
    unsigned leaves;
    uint32_t bytes;
    unsigned min_level, max_level;
} tree_total;

static void tree_size(const uint8_t *choice, unsigned level, unsigned r, unsigned c,
                      tree_total *t)
{
    const unsigned node = sgfp4_node_base[level] + r * (1u << level) + c;
    if (level + 1 == SGFP4_LEVELS || choice[node] != 2) {
        t->leaves += 1;
        t->bytes += sgfp4_leaf_cost(64u >> level, choice[node] == 1);
        t->min_level = level < t->min_level ? level : t->min_level;
        t->max_level = level > t->max_level ? level : t->max_level;
        return;
    }
    for (unsigned q = 0; q < 4; q++)
        tree_size(choice, level + 1, 2 * r + q / 2, 2 * c + q % 2, t);
}

uint32_t sgfp4_prune_rate(const sgfp4_leaf_params params[SGFP4_NODES * 2], double lambda,
                          uint8_t choice[SGFP4_NODES])
{
    double cost[SGFP4_NODES], leaf_cost[SGFP4_NODES];
    uint8_t leaf_mode[SGFP4_NODES];
    double uniform[SGFP4_LEVELS];        /* J of the all-leaves-at-this-level tree */
    uint32_t uniform_bytes[SGFP4_LEVELS]; /* and its leaves' bytes */
    for (int level = SGFP4_LEVELS - 1; level >= 0; level--) {
        const unsigned size = 64u >> level, grid = 1u << level;
        const double r_fp4 = lambda * sgfp4_leaf_cost(size, SGFP4_MODE_FP4);
        const double r_t158 = lambda * sgfp4_leaf_cost(size, SGFP4_MODE_T158);
        uniform[level] = 0;
        uniform_bytes[level] = 0;
        for (unsigned r = 0; r < grid; r++)
            for (unsigned c = 0; c < grid; c++) {
                const unsigned node = sgfp4_node_base[level] + r * grid + c;
                const double j_fp4 = params[node * 2].sse + r_fp4;
                const double j_t158 = params[node * 2 + 1].sse + r_t158;
                leaf_mode[node] = j_t158 < j_fp4;
                leaf_cost[node] = leaf_mode[node] ? j_t158 : j_fp4;
                uniform[level] += leaf_cost[node];
                uniform_bytes[level] += sgfp4_leaf_cost(size, leaf_mode[node]);
                double best = leaf_cost[node];
                choice[node] = leaf_mode[node];
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
    /* The pruned tree at its exact record cost against each uniform layout. */
    tree_total tree = {0, 0, SGFP4_LEVELS, 0};
    tree_size(choice, 0, 0, 0, &tree);
    const int tree_is_uniform = tree.min_level == tree.max_level;
    int uniform_level = -1;
    double best = cost[0] + lambda * record_overhead(tree.leaves, !tree_is_uniform);
    for (unsigned level = 0; level < SGFP4_LEVELS; level++) {
        const double j = uniform[level] + lambda * record_overhead(1u << (2 * level), 0);
        if (j < best) {
            best = j;
            uniform_level = (int)level;
        }
    }
    if (uniform_level < 0) /* a uniform pruned tree is written with its uniform layout */
        return tree.bytes + (uint32_t)record_overhead(tree.leaves, !tree_is_uniform);
    for (unsigned level = 0; level < SGFP4_LEVELS; level++) {
        const unsigned grid = 1u << level;
        for (unsigned k = 0; k < grid * grid; k++) {
            const unsigned node = sgfp4_node_base[level] + k;
            choice[node] = (int)level < uniform_level ? 2 : leaf_mode[node];
        }
    }
    return uniform_bytes[uniform_level] +
           (uint32_t)record_overhead(1u << (2 * uniform_level), 0);
}
