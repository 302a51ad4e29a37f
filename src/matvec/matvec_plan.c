/* A tensor prepared for products: for v2 tensors, the leaf table (matvec_internal.h) that
 * spares the kernels the split-map walk and the grouping of leaves by kind on every
 * product. Built once, through the tensor's allocator; sgfp4_matvec_plan_bytes() reports
 * it. docs/matvec.md ("The plan") has its layout and what it costs and saves.
 * SPDX-License-Identifier: MIT */
#include "listing/leaf_list.h"
#include "matvec/matvec_internal.h"
#include "matvec/repack.h"

/* Fills the table (entries NULL: counts only, returns the entry count). */
static uint64_t fill_table(const sgfp4_tensor *t, sgfp4_matvec_block_leaves *blocks,
                           uint32_t *entries)
{
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    uint64_t next = 0;
    for (uint64_t b = 0; b < t->blocks; b++) {
        sgfp4_matvec_block_leaves *bl = &blocks[b];
        memset(bl, 0, sizeof *bl);
        bl->first = (uint32_t)next;
        if (sgfp4_matvec_record_is_direct(t, b))
            continue;
        const uint8_t *rec = sgfp4_record_start(t, b);
        const unsigned n = sgfp4_list_block_refs(t, b, leaves);
        for (unsigned kind = 0; kind < SGFP4_LEAF_KINDS; kind++) {
            for (unsigned i = 0; i < n; i++) {
                const sgfp4_leaf_ref *l = &leaves[i];
                if (2 * (4 - sgfp4_size_index(l->size)) + l->mode != kind)
                    continue;
                if (entries)
                    entries[next] = SGFP4_MATVEC_ENTRY((l->y / 4) << 4 | l->x / 4, i,
                                                       (uint64_t)(l->payload - rec) / 16);
                next++;
                if (kind < 2)
                    bl->count_4x4[kind]++;
                else
                    bl->count[kind - 2]++;
            }
        }
    }
    return next;
}

sgfp4_status sgfp4_matvec_plan_create(const sgfp4_tensor *tensor, sgfp4_matvec_plan **out)
{
    return sgfp4_matvec_plan_create_with(tensor, sgfp4_matvec_kernels_best()->reads_repack,
                                         out);
}

sgfp4_status sgfp4_matvec_plan_create_with(const sgfp4_tensor *tensor, bool repack,
                                           sgfp4_matvec_plan **out)
{
    if (out)
        *out = NULL;
    if (!tensor || !out)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_matvec_plan *plan = sgfp4_alloc_with(&tensor->allocator, sizeof *plan);
    if (!plan)
        return SGFP4_ERR_NOMEM;
    *plan = (sgfp4_matvec_plan){.tensor = tensor, .bytes = sizeof *plan};
    for (unsigned i = 0; i < 64; i++) /* 8x8 leaf i at (8 (i / 8), 8 (i % 8)), payload 32 i */
        plan->uniform8_entries[i] =
            SGFP4_MATVEC_ENTRY((i / 8 * 2) << 4 | i % 8 * 2, i, (272 + 32 * i) / 16);
    plan->uniform64_entry = SGFP4_MATVEC_ENTRY(0, 0, 1); /* payload at 16 */
    if (tensor->profile == SGFP4_PROFILE_V2) {
        if (tensor->blocks > SIZE_MAX / sizeof(sgfp4_matvec_block_leaves)) {
            sgfp4_matvec_plan_free(plan);
            return SGFP4_ERR_NOMEM;
        }
        const size_t block_bytes = (size_t)tensor->blocks * sizeof(sgfp4_matvec_block_leaves);
        sgfp4_matvec_block_leaves *blocks = sgfp4_alloc_with(&tensor->allocator, block_bytes);
        if (!blocks) {
            sgfp4_matvec_plan_free(plan);
            return SGFP4_ERR_NOMEM;
        }
        plan->blocks = blocks;
        const uint64_t count = fill_table(tensor, blocks, NULL);
        /* entry indices are 32-bit: more leaves than that means more than 2^32 * 16
         * weights in non-uniform records, far past any container limit */
        if (count > UINT32_MAX || count > SIZE_MAX / sizeof(uint32_t)) {
            sgfp4_matvec_plan_free(plan);
            return SGFP4_ERR_NOMEM;
        }
        uint32_t *entries = NULL;
        if (count) {
            entries = sgfp4_alloc_with(&tensor->allocator, (size_t)count * sizeof *entries);
            if (!entries) {
                sgfp4_matvec_plan_free(plan);
                return SGFP4_ERR_NOMEM;
            }
            plan->entries = entries;
            plan->entry_count = count;
            fill_table(tensor, blocks, entries);
        }
        plan->bytes += block_bytes + (size_t)count * sizeof *entries;
    }
    if (repack) { /* both profiles (v1: one leaf a block, every group in the pairs' form) */
        const sgfp4_status st = sgfp4_matvec_repack_build(plan);
        if (st != SGFP4_OK) {
            sgfp4_matvec_plan_free(plan);
            return st;
        }
    }
    *out = plan;
    return SGFP4_OK;
}

void sgfp4_matvec_plan_free(sgfp4_matvec_plan *plan)
{
    if (!plan)
        return;
    const sgfp4_allocator *a = &plan->tensor->allocator;
    sgfp4_matvec_repack_free(plan);
    sgfp4_free_with(a, (void *)plan->entries);
    sgfp4_free_with(a, (void *)plan->blocks);
    sgfp4_free_with(a, plan);
}

size_t sgfp4_matvec_plan_bytes(const sgfp4_matvec_plan *plan)
{
    return plan ? plan->bytes : 0;
}
