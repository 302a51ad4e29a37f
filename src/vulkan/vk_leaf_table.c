/* The v2 leaf table the decode shader reads instead of walking records: built once on the
 * CPU from the validated view (sgfp4_block_leaf_refs), so the GPU needs no split-map walk
 * and no prefix sum of payload sizes.
 * Layout (32-bit words): first[b] for b in [0, B], the index of block b's first leaf (so
 * block b has first[b+1] - first[b] leaves); record[b] for b in [0, B), the record's offset
 * from the record region in 16-byte units shifted left by 3, OR its layout (so the shader
 * needs no dependent read of the offset table and sb_header); then one word per leaf in
 * storage order:
 *   bits 0-15  payload offset from the record start, in words (< 1300 for any record)
 *   bits 16-23 Morton index of the leaf's top-left 4x4 cell (MIXED uses it)
 *   bits 24-26 log2(size) - 2
 *   bit  27    mode (0 FP4, 1 T158), so that the payload load need not wait for the header
 * SPDX-License-Identifier: MIT */
#include "vulkan/vk_internal.h"

static uint32_t morton(unsigned cy, unsigned cx)
{
    uint32_t m = 0;
    for (unsigned i = 0; i < 4; i++)
        m |= ((cx >> i) & 1u) << (2 * i) | ((cy >> i) & 1u) << (2 * i + 1);
    return m;
}

static uint32_t log2_size(unsigned size)
{
    uint32_t l = 0;
    while ((1u << l) < size)
        l++;
    return l;
}

size_t sgfp4_vk_build_leaf_table(const sgfp4_tensor *t, uint32_t **words)
{
    const size_t total = (size_t)(2 * t->blocks + 1) + (size_t)t->info.leaves;
    uint32_t *w = sgfp4_alloc_with(&t->allocator, total * sizeof *w);
    *words = w;
    if (!w)
        return 0;
    sgfp4_leaf_ref refs[SGFP4_MAX_LEAVES];
    uint32_t next = 0;
    uint32_t *record = w + t->blocks + 1;
    uint32_t *leaf = record + t->blocks;
    for (uint64_t b = 0; b < t->blocks; b++) {
        w[b] = next;
        const uint32_t offset = sgfp4_record_offset(t, b); /* a multiple of 16 */
        const uint8_t *rec = sgfp4_record_start(t, b);
        const uint32_t layout = sgfp4_record_layout(t, b);
        record[b] = (offset / 16) << 3 | layout;
        const unsigned n = sgfp4_block_leaf_refs(t, b, refs);
        for (unsigned i = 0; i < n; i++) {
            const uint32_t in_record = (uint32_t)((refs[i].payload - rec) / 4);
            leaf[next + i] = in_record | morton(refs[i].y / 4u, refs[i].x / 4u) << 16 |
                             (log2_size(refs[i].size) - 2u) << 24 | (uint32_t)refs[i].mode << 27;
        }
        next += n;
    }
    w[t->blocks] = next;
    return total;
}
