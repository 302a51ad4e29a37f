/* Listing a block's leaves for the fast decoder: the same result as sgfp4_block_leaf_refs()
 * (tests compare the two), computed with less work per leaf, because at a few bits per
 * weight the leaf headers are a large part of the decode time: uniform positions from
 * shifts, the split map walked by unrolled loops, fp16 -> f32 without a loop.
 * SPDX-License-Identifier: MIT */
#include "decode/kernels.h"

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

/* Fills pos with the MIXED leaves of a split map in pre-order DFS (D5); returns the count.
 * The recursion is unrolled into one loop per level (64, 32, 16, 8; 4x4 nodes take no bit),
 * which visits nodes in the same order as the recursive walk of leaf_geometry.c. */
static unsigned walk_split_map(const uint8_t *map, uint8_t (*pos)[3])
{
    const uint32_t words[3] = {sgfp4_load_u32le(map), sgfp4_load_u32le(map + 4),
                               sgfp4_load_u32le(map + 8)};
    unsigned bit = 0, n = 0;
#define NEXT_BIT() ((words[bit / 32] >> (bit % 32)) & 1u ? (bit++, 1) : (bit++, 0))
#define LEAF(yy, xx, ss) (pos[n][0] = (uint8_t)(yy), pos[n][1] = (uint8_t)(xx), \
                          pos[n][2] = (uint8_t)(ss), n++)
    if (!NEXT_BIT()) {
        LEAF(0, 0, 64);
        return n;
    }
    for (unsigned q1 = 0; q1 < 4; q1++) {
        const unsigned y1 = (q1 >> 1) * 32, x1 = (q1 & 1) * 32;
        if (!NEXT_BIT()) {
            LEAF(y1, x1, 32);
            continue;
        }
        for (unsigned q2 = 0; q2 < 4; q2++) {
            const unsigned y2 = y1 + (q2 >> 1) * 16, x2 = x1 + (q2 & 1) * 16;
            if (!NEXT_BIT()) {
                LEAF(y2, x2, 16);
                continue;
            }
            for (unsigned q3 = 0; q3 < 4; q3++) {
                const unsigned y3 = y2 + (q3 >> 1) * 8, x3 = x2 + (q3 & 1) * 8;
                if (!NEXT_BIT()) {
                    LEAF(y3, x3, 8);
                    continue;
                }
                LEAF(y3, x3, 4);
                LEAF(y3, x3 + 4, 4);
                LEAF(y3 + 4, x3, 4);
                LEAF(y3 + 4, x3 + 4, 4);
            }
        }
    }
#undef NEXT_BIT
#undef LEAF
    return n;
}

unsigned sgfp4_decode_record_positions(const uint8_t *rec, uint8_t (*pos)[3],
                                       const uint8_t **headers)
{
    const unsigned layout = rec[0] & 7u;
    if (layout == SGFP4_LAYOUT_MIXED) {
        *headers = rec + 16;
        return walk_split_map(rec + 4, pos);
    }
    *headers = rec + 4;
    const unsigned shift = layout == 5 ? 2 : 6 - layout; /* log2 of the leaf edge */
    const unsigned per_row_shift = 6 - shift;
    const unsigned n = 1u << (2 * per_row_shift);
    for (unsigned i = 0; i < n; i++) {
        pos[i][0] = (uint8_t)((i >> per_row_shift) << shift);
        pos[i][1] = (uint8_t)((i & ((1u << per_row_shift) - 1)) << shift);
        pos[i][2] = (uint8_t)(1u << shift);
    }
    return n;
}

unsigned sgfp4_decode_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out)
{
    const uint8_t *d = t->data;
    if (t->profile == SGFP4_PROFILE_V1) {
        const uint32_t header = sgfp4_load_u32le(d + 4 * b);
        const uint32_t offset = sgfp4_load_u32le(d + 4 * t->blocks + 4 * b);
        out[0] = (sgfp4_leaf_ref){0, 0, 64, (uint8_t)(offset & 1u), header,
                                  sgfp4_half_to_float_finite(header >> 16),
                                  sgfp4_half_to_float_finite(header & 0xFFFFu),
                                  d + 8 * t->blocks + (offset & ~UINT32_C(0xF))};
        return 1;
    }
    const uint8_t *rec = d + t->record_base + sgfp4_load_u32le(d + 16 + 4 * b);
    const uint8_t *headers;
    uint8_t pos[SGFP4_MAX_LEAVES][3];
    const unsigned n = sgfp4_decode_record_positions(rec, pos, &headers);
    const uint8_t *payload = rec + sgfp4_align16((uint64_t)(headers - rec) + 4u * n);
    for (unsigned i = 0; i < n; i++) {
        const uint32_t h = sgfp4_load_u32le(headers + 4 * i);
        const unsigned size = pos[i][2], mode = h & 1u;
        out[i] = (sgfp4_leaf_ref){pos[i][0],
                                  pos[i][1],
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
