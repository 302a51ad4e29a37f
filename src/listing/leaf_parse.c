/* Listing a block's leaves for the fast kernels: the same result as sgfp4_block_leaf_refs()
 * (tests compare the two), computed with less work per leaf, because at a few bits per
 * weight the leaf headers are a large part of the decode time: uniform positions from
 * constant tables, the split map walked by 16x16 nodes through a table, fp16 -> f32 without
 * a loop.
 * SPDX-License-Identifier: MIT */
#include <pthread.h>

#include "listing/leaf_list.h"

/* Exact fp16 -> f32 for finite values (validation rejects Inf and NaN). A subnormal is its
 * 10-bit significand times 2^-24: the integer converts exactly and the product is a normal
 * binary32, so no flush-to-zero or denormals-are-zero mode can touch it (DECISIONS D1). */
float sgfp4_half_to_float_finite(uint32_t half)
{
    const uint32_t sign = (half & 0x8000u) << 16, magnitude = half & 0x7FFFu;
    if (magnitude >= 0x0400u)
        return sgfp4_bits_to_float(sign | ((magnitude << 13) + (112u << 23)));
    const float value = (float)magnitude * 0x1p-24f;
    return sign ? -value : value;
}

/* The leaves of a 16x16 node at the origin, in DFS order, for each 5-bit pattern of the map
 * (bit 0: the node splits; bits 1..4: its TL, TR, BL, BR 8x8 children split; a leaf node
 * consumes 1 bit, a split one 5), and the uniform layouts' leaves in raster order. Built once
 * (pthread_once), read-only afterwards. */
typedef struct leaf_tables {
    uint32_t node16[32][16];
    uint8_t node16_count[32];
    uint32_t uniform[6][SGFP4_MAX_LEAVES + 16]; /* (+ slack for 16-wide reads) */
} leaf_tables;

static leaf_tables tables __attribute__((aligned(64)));
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_build(void)
{
    for (unsigned p = 0; p < 32; p++) {
        unsigned n = 0;
        if (!(p & 1u)) {
            tables.node16[p][n++] = sgfp4_leaf_descriptor(2, 0, 0);
        } else {
            for (unsigned c = 0; c < 4; c++) {
                const unsigned y = (c >> 1) * 8, x = (c & 1u) * 8;
                if ((p >> (1 + c)) & 1u) {
                    for (unsigned q = 0; q < 4; q++)
                        tables.node16[p][n++] =
                            sgfp4_leaf_descriptor(0, y + (q >> 1) * 4, x + (q & 1u) * 4);
                } else {
                    tables.node16[p][n++] = sgfp4_leaf_descriptor(1, y, x);
                }
            }
        }
        tables.node16_count[p] = (uint8_t)n;
    }
    for (unsigned layout = 0; layout < 6; layout++) {
        if (layout == SGFP4_LAYOUT_MIXED)
            continue;
        const unsigned shift = layout == 5 ? 2 : 6 - layout; /* log2 of the leaf edge */
        const unsigned per_row = 1u << (6 - shift);
        for (unsigned i = 0; i < per_row * per_row; i++)
            tables.uniform[layout][i] =
                sgfp4_leaf_descriptor(shift - 2, (i / per_row) << shift, (i % per_row) << shift);
    }
}

/* Writes a 16x16 node's 16 table descriptors moved to `origin` (16 always: the caller's
 * buffer has the slack); separate restrict pointers let the compiler use vectors. */
static inline void emit_node16(uint32_t *restrict out, const uint32_t *restrict leaves,
                               uint32_t origin)
{
    for (unsigned k = 0; k < 16; k++)
        out[k] = leaves[k] + origin;
}

/* The unread bits of a split map, lowest first, in a two-word shift register (85 bits at
 * most). */
typedef struct map_bits {
    uint64_t lo, hi;
} map_bits;

/* Drops the lowest `count` (1..63) bits. */
static inline void map_consume(map_bits *m, unsigned count)
{
    m->lo = m->lo >> count | m->hi << (64 - count);
    m->hi >>= count;
}

/* Fills desc with the MIXED leaves of a split map in pre-order DFS (D5); returns the count.
 * Walked down to the 16x16 nodes only: a 16x16 node's whole subtree is 5 map bits (its own
 * split bit, then its four 8x8 children's) or 1 (a leaf), and the table holds its leaves,
 * so only the 5 bits above that level are branches (a walk bit by bit mispredicts on most
 * split bits of an encoder's MIXED records). */
static unsigned walk_split_map(const uint32_t map[3], uint32_t *desc)
{
    map_bits m = {map[0] | (uint64_t)map[1] << 32, map[2]};
    if (!(m.lo & 1u)) {
        desc[0] = sgfp4_leaf_descriptor(4, 0, 0);
        return 1;
    }
    map_consume(&m, 1);
    unsigned n = 0;
    for (unsigned q1 = 0; q1 < 4; q1++) {
        const unsigned y1 = (q1 >> 1) * 32, x1 = (q1 & 1u) * 32;
        const bool split = m.lo & 1u;
        map_consume(&m, 1);
        if (!split) {
            desc[n++] = sgfp4_leaf_descriptor(3, y1, x1);
            continue;
        }
        for (unsigned q2 = 0; q2 < 4; q2++) {
            const unsigned p = (unsigned)m.lo & 31u; /* this 16x16 node's pattern */
            const uint32_t origin =
                (uint32_t)((y1 + (q2 >> 1) * 16) * SGFP4_MB + x1 + (q2 & 1u) * 16);
            emit_node16(desc + n, tables.node16[p], origin);
            n += tables.node16_count[p];
            map_consume(&m, 1 + 4 * (p & 1u)); /* as tables.node16_bits[p], without the load */
        }
    }
    return n;
}

unsigned sgfp4_list_record_positions(const sgfp4_tensor *t, uint64_t b, uint32_t *buffer,
                                     const uint32_t **desc, const uint8_t **headers)
{
    pthread_once(&tables_once, tables_build);
    const uint8_t *rec = sgfp4_record_start(t, b);
    const unsigned layout = sgfp4_record_layout(t, b);
    *headers = rec + sgfp4_record_headers_at(layout);
    if (layout == SGFP4_LAYOUT_MIXED) {
        *desc = buffer;
        return walk_split_map(sgfp4_record_map(t, b), buffer);
    }
    *desc = tables.uniform[layout];
    const unsigned shift = layout == 5 ? 2 : 6 - layout; /* log2 of the leaf edge */
    return 1u << (2 * (6 - shift));
}

unsigned sgfp4_list_block_refs(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out)
{
    if (t->profile == SGFP4_PROFILE_V1) {
        const uint32_t header = sgfp4_load_u32le(t->data + 4 * b);
        out[0] = (sgfp4_leaf_ref){0, 0, 64, (uint8_t)sgfp4_v1_mode(t, b), header,
                                  sgfp4_half_to_float_finite(header >> 16),
                                  sgfp4_half_to_float_finite(header & 0xFFFFu),
                                  sgfp4_v1_payload(t, b)};
        return 1;
    }
    const uint8_t *rec = sgfp4_record_start(t, b);
    const uint32_t *modes = sgfp4_record_modes(t, b);
    const uint8_t *headers;
    uint32_t buffer[SGFP4_MAX_LEAVES + 16];
    const uint32_t *desc;
    const unsigned n = sgfp4_list_record_positions(t, b, buffer, &desc, &headers);
    const uint8_t *payload = rec + sgfp4_align16((uint64_t)(headers - rec) + 4u * n);
    for (unsigned i = 0; i < n; i++) {
        const uint32_t h = sgfp4_load_u32le(headers + 4 * i);
        const unsigned at = desc[i] & 0xFFFFu, size = 4u << (desc[i] >> 16),
                       mode = sgfp4_leaf_mode(modes, i);
        out[i] = (sgfp4_leaf_ref){(uint8_t)(at / SGFP4_MB),
                                  (uint8_t)(at % SGFP4_MB),
                                  (uint8_t)size,
                                  (uint8_t)mode,
                                  h,
                                  sgfp4_half_to_float_finite(h >> 16),
                                  sgfp4_half_to_float_finite(h & 0xFFF0u),
                                  payload};
        /* payload bytes rounded up to 16: size^2/2 (FP4) or size^2/4 (T158) */
        payload += ((size * size >> (1 + mode)) + 15u) & ~15u;
    }
    return n;
}

unsigned sgfp4_list_v1_block(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    const uint32_t header = sgfp4_load_u32le(t->data + 4 * b);
    const unsigned mode = sgfp4_v1_mode(t, b);
    for (unsigned k = 0; k < SGFP4_LEAF_KINDS; k++)
        list->kind_count[k] = 0;
    list->desc_buffer[0] = sgfp4_leaf_descriptor(4, 0, 0);
    list->desc = list->desc_buffer;
    list->scale[0] = sgfp4_half_to_float_finite(header >> 16);
    list->bias[0] = sgfp4_half_to_float_finite(header & 0xFFFFu);
    list->mode[0] = mode;
    list->offset[0] = 0;
    list->payload = sgfp4_v1_payload(t, b);
    list->by_kind[8 + mode][0] = 0;
    list->kind_count[8 + mode] = 1;
    return list->count = 1;
}

void sgfp4_list_group(sgfp4_leaf_list *list, unsigned n)
{
    for (unsigned k = 0; k < SGFP4_LEAF_KINDS; k++)
        list->kind_count[k] = 0;
    uint32_t offset = 0, modes = 0;
    for (unsigned i = 0; i < n; i++, modes >>= 1) {
        if (i % 32 == 0)
            modes = list->modes[i / 32]; /* the next 32 leaves' modes, from bit 0 on */
        const unsigned mode = modes & 1u, cls = list->desc[i] >> 16;
        const unsigned kind = 2 * cls + mode;
        list->mode[i] = mode;
        list->offset[i] = offset;
        /* payload bytes rounded up to 16: (8 << 2 * class) for FP4, half that for T158 */
        const uint32_t bytes = (UINT32_C(8) << (2 * cls)) >> mode;
        offset += bytes > 16 ? bytes : 16;
        list->by_kind[kind][list->kind_count[kind]++] = (uint8_t)i;
    }
    list->count = n;
}

unsigned sgfp4_list_begin(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list,
                          const uint8_t **headers)
{
    if (t->profile == SGFP4_PROFILE_V1) {
        *headers = NULL;
        return sgfp4_list_v1_block(t, b, list);
    }
    const uint8_t *rec = sgfp4_record_start(t, b);
    const unsigned n =
        sgfp4_list_record_positions(t, b, list->desc_buffer, &list->desc, headers);
    list->payload = rec + sgfp4_align16((uint64_t)(*headers - rec) + 4u * n);
    list->modes = sgfp4_record_modes(t, b);
    return n;
}
