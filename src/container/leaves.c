/* Locating the leaves of a block in a validated view, and the queries built on that.
 * No checks here: sgfp4_tensor_open() proved every read below in bounds, and the places
 * come from the view's copy of them (tensor.h).
 * SPDX-License-Identifier: MIT */
#include "container/tensor.h"
#include "format/leaf_geometry.h"

unsigned sgfp4_block_leaf_refs(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out)
{
    if (t->profile == SGFP4_PROFILE_V1) {
        const uint32_t header = sgfp4_load_u32le(t->data + 4 * b);
        out[0] = (sgfp4_leaf_ref){0, 0, 64, (uint8_t)sgfp4_v1_mode(t, b), header,
                                  sgfp4_header_scale(header),
                                  sgfp4_header_bias(header, SGFP4_PROFILE_V1),
                                  sgfp4_v1_payload(t, b)};
        return 1;
    }
    const uint8_t *rec = sgfp4_record_start(t, b);
    const unsigned layout = sgfp4_record_layout(t, b);
    const uint32_t *modes = sgfp4_record_modes(t, b);
    sgfp4_leaf_pos pos[SGFP4_MAX_LEAVES];
    unsigned n, bits;
    if (layout == SGFP4_LAYOUT_MIXED)
        (void)sgfp4_split_walk(sgfp4_record_map(t, b), pos, &n, &bits);
    else
        n = sgfp4_uniform_leaves(layout, pos);
    const uint8_t *headers = rec + sgfp4_record_headers_at(layout);
    const uint8_t *payload = rec + sgfp4_align16((uint64_t)(headers - rec) + 4u * n);
    for (unsigned i = 0; i < n; i++) {
        const uint32_t h = sgfp4_load_u32le(headers + 4 * i);
        const uint8_t mode = (uint8_t)sgfp4_leaf_mode(modes, i);
        out[i] = (sgfp4_leaf_ref){pos[i].y, pos[i].x, pos[i].size, mode, h,
                                  sgfp4_header_scale(h), sgfp4_header_bias(h, SGFP4_PROFILE_V2),
                                  payload};
        payload += sgfp4_align16(sgfp4_payload_bytes(pos[i].size, mode));
    }
    return n;
}

size_t sgfp4_tensor_block_leaves(const sgfp4_tensor *tensor, uint64_t block,
                                 sgfp4_leaf *leaves, size_t capacity)
{
    if (!tensor || block >= tensor->blocks)
        return 0;
    if (!leaves)
        capacity = 0; /* no array: the count only */
    sgfp4_leaf_ref refs[SGFP4_MAX_LEAVES];
    const unsigned n = sgfp4_block_leaf_refs(tensor, block, refs);
    for (unsigned i = 0; i < n && i < capacity; i++)
        leaves[i] = (sgfp4_leaf){refs[i].y,      refs[i].x,     refs[i].size,
                                 refs[i].mode,   refs[i].header, refs[i].scale,
                                 refs[i].bias,   (uint64_t)(refs[i].payload - tensor->data)};
    return n;
}

uint64_t sgfp4_tensor_reserved_symbols(const sgfp4_tensor *tensor)
{
    if (!tensor)
        return 0;
    uint64_t count = 0;
    sgfp4_leaf_ref refs[SGFP4_MAX_LEAVES];
    for (uint64_t b = 0; b < tensor->blocks; b++) {
        const unsigned n = sgfp4_block_leaf_refs(tensor, b, refs);
        for (unsigned i = 0; i < n; i++) {
            if (refs[i].mode != SGFP4_MODE_T158)
                continue;
            const unsigned bytes = sgfp4_payload_bytes(refs[i].size, SGFP4_MODE_T158);
            for (unsigned k = 0; k < bytes; k++) {
                const unsigned v = refs[i].payload[k];
                for (unsigned s = 0; s < 8; s += 2)
                    count += ((v >> s) & 3u) == 3u; /* 0b11: reserved */
            }
        }
    }
    return count;
}
