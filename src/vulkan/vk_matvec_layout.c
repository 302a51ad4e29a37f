/* The products' own layout of a v2 tensor, built once on the CPU at upload from the
 * validated view. D8 defines a product from the weights, not from how they are stored, so
 * the products may read the codes in a layout made for the GPU: every 64x64 block as the
 * rows of 64 four-bit codes that v1 has (16-byte loads, consecutive rows at consecutive
 * addresses), each leaf's S and Bias already as binary32, and for MIXED records a map from
 * each 4x4 cell to its leaf. T158 codes (-1, 0, +1) become four-bit codes too: a weight is
 * S * code + Bias in either mode (D1), so the products compute the same values.
 * Layout (32-bit words; each section starts at a multiple of 4 words):
 *   codes: 512 words per block (block b at 512 b): row y in words 8y .. 8y + 7, column x in
 *          nibble x % 8 of word x / 8, two's complement; columns and rows past the tensor 0;
 *   maps:  where the tensor has MIXED records, 64 words per block (block b at 64 b, so that
 *          a decode can load its map beside its description; a uniform block's are unused):
 *          byte 16 cy + cx is the index (storage order) of the leaf holding cell (cy, cx);
 *   desc:  2 words per block: the index of its first leaf in sb; for a MIXED record the
 *          index of its map (its block index) << 3, | its layout;
 *   sb:    2 words per leaf in storage order: S and Bias as binary32 bits.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "format/bits.h"

static uint64_t align4(uint64_t words) { return (words + 3) & ~(uint64_t)3; }

uint64_t sgfp4_vk_product_layout_words(const sgfp4_tensor *t, sgfp4_vk_product_layout *where)
{
    const uint64_t mixed = t->info.records_by_layout[SGFP4_LAYOUT_MIXED];
    where->maps = 512 * t->blocks;
    where->desc = where->maps + (mixed ? 64 * t->blocks : 0);
    where->sb = align4(where->desc + 2 * t->blocks);
    return align4(where->sb + 2 * (uint64_t)t->info.leaves);
}

/* The 4-bit codes (two's complement, nibble i = code i) of the four T158 symbols of each
 * byte value: 01 -> +1, 10 -> -1, 00 and the reserved 11 -> 0 (D4). */
static void t158_nibble_table(uint16_t table[256])
{
    static const uint16_t nibble[4] = {0x0, 0x1, 0xF, 0x0};
    for (unsigned v = 0; v < 256; v++)
        table[v] = (uint16_t)(nibble[v & 3] | nibble[(v >> 2) & 3] << 4 |
                              nibble[(v >> 4) & 3] << 8 | nibble[v >> 6] << 12);
}

/* Row y of a leaf as four-bit codes, in 16-bit halves of 4 codes each: half h holds the
 * codes of the leaf's columns 4h .. 4h + 3. FP4 payloads already are four-bit codes in
 * this order (two a byte, the first low); T158 payloads (four 2-bit symbols a byte) go
 * through the table. */
static uint32_t leaf_row_half(const sgfp4_leaf_ref *leaf, unsigned y, unsigned h,
                              const uint16_t t158[256])
{
    if (leaf->mode == SGFP4_MODE_T158)
        return t158[leaf->payload[(y * leaf->size) / 4 + h]];
    const uint8_t *at = leaf->payload + (y * leaf->size) / 2 + 2 * h;
    return (uint32_t)at[0] | (uint32_t)at[1] << 8;
}

/* Writes the codes of one leaf into its block's 64 rows of 8 words. A leaf's columns start
 * at a multiple of its edge, so a leaf of 8 or more fills whole words and a 4x4 leaf one
 * half of one word per row. */
static void place_leaf_codes(const sgfp4_leaf_ref *leaf, uint32_t *codes, const uint16_t t158[256])
{
    for (unsigned y = 0; y < leaf->size; y++) {
        uint32_t *row = codes + 8 * (leaf->y + y) + leaf->x / 8;
        if (leaf->size == 4) {
            row[0] |= leaf_row_half(leaf, y, 0, t158) << (16 * ((leaf->x / 4) & 1u));
            continue;
        }
        for (unsigned i = 0; i < leaf->size / 8u; i++)
            row[i] = leaf_row_half(leaf, y, 2 * i, t158) |
                     leaf_row_half(leaf, y, 2 * i + 1, t158) << 16;
    }
}

/* D8 gives padding columns no weight: the codes of rows and columns past the tensor are 0
 * (the products ignore them). Only blocks on the bottom or right edge have any. */
static void clear_padding(const sgfp4_tensor *t, uint64_t b, uint32_t *codes)
{
    const uint64_t r0 = (b / t->tiles_x) * 64, c0 = (b % t->tiles_x) * 64;
    if (r0 + 64 <= t->rows && c0 + 64 <= t->cols)
        return;
    for (unsigned y = 0; y < 64; y++)
        for (unsigned x = 0; x < 64; x++)
            if (r0 + y >= t->rows || c0 + x >= t->cols)
                codes[8 * y + x / 8] &= ~(0xFu << (4 * (x % 8)));
}

void sgfp4_vk_build_product_layout(const sgfp4_tensor *t, const sgfp4_vk_product_layout *where,
                                   uint32_t *w)
{
    const uint64_t total = sgfp4_vk_product_layout_words(t, &(sgfp4_vk_product_layout){0});
    memset(w, 0, total * sizeof *w);
    uint16_t t158[256];
    t158_nibble_table(t158);
    sgfp4_leaf_ref refs[SGFP4_MAX_LEAVES];
    uint32_t first = 0;
    for (uint64_t b = 0; b < t->blocks; b++) {
        const unsigned n = sgfp4_block_leaf_refs(t, b, refs);
        const uint32_t layout = sgfp4_record_layout(t, b);
        uint32_t *codes = w + 512 * b;
        uint8_t *cells =
            layout == SGFP4_LAYOUT_MIXED ? (uint8_t *)(w + where->maps + 64 * b) : NULL;
        for (unsigned i = 0; i < n; i++) {
            const sgfp4_leaf_ref *leaf = &refs[i];
            place_leaf_codes(leaf, codes, t158);
            if (cells)
                for (unsigned cy = leaf->y / 4; cy < (leaf->y + leaf->size) / 4u; cy++)
                    memset(cells + 16 * cy + leaf->x / 4, (int)i, leaf->size / 4u);
            w[where->sb + 2 * ((uint64_t)first + i)] = sgfp4_float_to_bits(leaf->scale);
            w[where->sb + 2 * ((uint64_t)first + i) + 1] = sgfp4_float_to_bits(leaf->bias);
        }
        clear_padding(t, b, codes);
        w[where->desc + 2 * b] = first;
        w[where->desc + 2 * b + 1] = (layout == SGFP4_LAYOUT_MIXED ? (uint32_t)b : 0) << 3 | layout;
        first += n;
    }
}
