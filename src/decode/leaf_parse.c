/* Listing a block's leaves for the fast decoder: the same result as sgfp4_block_leaf_refs()
 * (tests compare the two), computed with less work per leaf, because at a few bits per
 * weight the leaf headers are a large part of the decode time: uniform positions from
 * shifts, the split map walked without recursion, fp16 -> f32 without a loop.
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

/* Fills pos with the MIXED leaves of a split map in pre-order DFS (D5); returns the count. */
static unsigned walk_split_map(const uint8_t *map, uint8_t (*pos)[3])
{
    const uint32_t words[3] = {sgfp4_load_u32le(map), sgfp4_load_u32le(map + 4),
                               sgfp4_load_u32le(map + 8)};
    uint8_t stack[32][3];
    unsigned depth = 0, bit = 0, n = 0;
    stack[depth][0] = 0, stack[depth][1] = 0, stack[depth][2] = 64, depth++;
    while (depth) {
        depth--;
        const uint8_t y = stack[depth][0], x = stack[depth][1], size = stack[depth][2];
        bool split = false;
        if (size >= 8) {
            split = (words[bit / 32] >> (bit % 32)) & 1u;
            bit++;
        }
        if (!split) {
            pos[n][0] = y, pos[n][1] = x, pos[n][2] = size, n++;
            continue;
        }
        const uint8_t h = size / 2;
        /* pushed in reverse so that TL pops first */
        const uint8_t kids[4][2] = {{y + h, x + h}, {y + h, x}, {y, x + h}, {y, x}};
        for (int k = 0; k < 4; k++)
            stack[depth][0] = kids[k][0], stack[depth][1] = kids[k][1], stack[depth][2] = h,
            depth++;
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
    const unsigned layout = rec[0] & 7u;
    const uint8_t *headers = rec + 4;
    unsigned n;
    uint8_t pos[SGFP4_MAX_LEAVES][3];
    if (layout == SGFP4_LAYOUT_MIXED) {
        n = walk_split_map(rec + 4, pos);
        headers += 12;
    } else {
        const unsigned shift = layout == 5 ? 2 : 6 - layout; /* log2 of the leaf edge */
        const unsigned per_row_shift = 6 - shift;
        n = 1u << (2 * per_row_shift);
        for (unsigned i = 0; i < n; i++) {
            pos[i][0] = (uint8_t)((i >> per_row_shift) << shift);
            pos[i][1] = (uint8_t)((i & ((1u << per_row_shift) - 1)) << shift);
            pos[i][2] = (uint8_t)(1u << shift);
        }
    }
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
