/* Block plans: from per-node quadtree decisions to the leaves of a v2 record, with the split
 * map (pre-order DFS, quadrants TL, TR, BL, BR; one bit per visited node of size >= 8,
 * DECISIONS D5) and the collapse of uniform trees to their uniform layout, which needs no
 * split map (12 bytes less) and stores leaves in raster order.
 * SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/block_write.h"
#include "format/bits.h"

const unsigned sgfp4_node_base[SGFP4_LEVELS] = {0, 1, 5, 21, 85};

typedef struct walk {
    const uint8_t *choice;
    const sgfp4_leaf_params *params;
    sgfp4_block_plan *plan;
    unsigned bit;
} walk;

static void visit(walk *w, unsigned level, unsigned r, unsigned c)
{
    const unsigned node = sgfp4_node_base[level] + r * (1u << level) + c;
    const unsigned size = 64u >> level;
    const int split = level + 1 < SGFP4_LEVELS && w->choice[node] == 2;
    if (size >= 8) {
        if (split)
            w->plan->split[w->bit / 32] |= 1u << (w->bit % 32);
        w->bit++;
    }
    if (split) {
        for (unsigned q = 0; q < 4; q++)
            visit(w, level + 1, 2 * r + q / 2, 2 * c + q % 2);
        return;
    }
    const unsigned mode = w->choice[node] == 1 ? 1u : 0u;
    const sgfp4_leaf_params *p = &w->params[node * 2 + mode];
    sgfp4_plan_leaf *leaf = &w->plan->leaves[w->plan->count++];
    leaf->y = (uint8_t)(r * size);
    leaf->x = (uint8_t)(c * size);
    leaf->size = (uint8_t)size;
    leaf->mode = (uint8_t)mode;
    leaf->scale = p->scale;
    leaf->bias = p->bias;
}

static int leaf_raster_before(const sgfp4_plan_leaf *a, const sgfp4_plan_leaf *b)
{
    return a->y != b->y ? a->y < b->y : a->x < b->x;
}

void sgfp4_plan_from_choices(const uint8_t *choice, const sgfp4_leaf_params *params,
                             sgfp4_block_plan *plan)
{
    plan->count = 0;
    plan->error_hint = 0;
    plan->split[0] = plan->split[1] = plan->split[2] = 0;
    walk w = {choice, params, plan, 0};
    visit(&w, 0, 0, 0);
    const unsigned size = plan->leaves[0].size;
    for (unsigned i = 1; i < plan->count; i++)
        if (plan->leaves[i].size != size) {
            plan->layout = SGFP4_LAYOUT_MIXED;
            return;
        }
    /* Uniform: raster order (insertion sort; DFS order is already nearly sorted). */
    for (unsigned i = 1; i < plan->count; i++) {
        const sgfp4_plan_leaf key = plan->leaves[i];
        unsigned j = i;
        while (j > 0 && leaf_raster_before(&key, &plan->leaves[j - 1])) {
            plan->leaves[j] = plan->leaves[j - 1];
            j--;
        }
        plan->leaves[j] = key;
    }
    plan->split[0] = plan->split[1] = plan->split[2] = 0;
    plan->layout = (uint8_t)(size == 64   ? SGFP4_LAYOUT_UNIFORM_64
                             : size == 32 ? SGFP4_LAYOUT_UNIFORM_32
                             : size == 16 ? SGFP4_LAYOUT_UNIFORM_16
                             : size == 8  ? SGFP4_LAYOUT_UNIFORM_8
                                          : SGFP4_LAYOUT_FULL_4X4);
}
