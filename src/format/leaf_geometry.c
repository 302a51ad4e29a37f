/* SPDX-License-Identifier: MIT */
#include "format/leaf_geometry.h"
#include "format/bits.h"

unsigned sgfp4_uniform_leaf_size(unsigned layout)
{
    switch (layout) {
    case 0: return 64;
    case 1: return 32;
    case 2: return 16;
    case 3: return 8;
    case 5: return 4;
    default: return 0;
    }
}

unsigned sgfp4_uniform_leaves(unsigned layout, sgfp4_leaf_pos *out)
{
    const unsigned size = sgfp4_uniform_leaf_size(layout);
    if (size == 0)
        return 0;
    unsigned n = 0;
    for (unsigned y = 0; y < SGFP4_MB; y += size)
        for (unsigned x = 0; x < SGFP4_MB; x += size)
            out[n++] = (sgfp4_leaf_pos){(uint8_t)y, (uint8_t)x, (uint8_t)size};
    return n;
}

typedef struct split_walker {
    const uint32_t *words;
    unsigned next_bit;
    unsigned count;
    sgfp4_leaf_pos *out;
    int overrun;
} split_walker;

/* Visits node (y, x, size) in pre-order: nodes of size >= 8 consume one bit (1 = split). */
static void walk_node(split_walker *w, unsigned y, unsigned x, unsigned size)
{
    if (w->overrun)
        return;
    int split = 0;
    if (size >= 8) {
        if (w->next_bit >= SGFP4_SPLIT_BITS) {
            w->overrun = 1;
            return;
        }
        const unsigned k = w->next_bit++;
        split = (w->words[k / 32] >> (k % 32)) & 1u;
    }
    if (!split) {
        w->out[w->count++] = (sgfp4_leaf_pos){(uint8_t)y, (uint8_t)x, (uint8_t)size};
        return;
    }
    const unsigned h = size / 2;
    walk_node(w, y, x, h);         /* TL */
    walk_node(w, y, x + h, h);     /* TR */
    walk_node(w, y + h, x, h);     /* BL */
    walk_node(w, y + h, x + h, h); /* BR */
}

sgfp4_split_result sgfp4_split_walk(const uint32_t words[3], sgfp4_leaf_pos *out,
                                    unsigned *count, unsigned *bits_used)
{
    split_walker w = {words, 0, 0, out, 0};
    walk_node(&w, 0, 0, SGFP4_MB);
    *count = w.count;
    *bits_used = w.next_bit;
    if (w.overrun)
        return SGFP4_SPLIT_OVERRUN;
    for (unsigned k = w.next_bit; k < 96; k++)
        if ((words[k / 32] >> (k % 32)) & 1u)
            return SGFP4_SPLIT_TRAILING;
    return SGFP4_SPLIT_OK;
}
