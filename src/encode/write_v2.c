/* v2 writer (spec §22.8): the stream header and offset table, and one record per block:
 * sb_header | split_map (MIXED only) | leaf headers | pad | payloads (each 16-byte padded).
 * Leaf headers carry the mode in bit 0 over the masked bias (Eq. 22.1).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "encode/block_io.h"
#include "encode/block_plan.h"
#include "encode/block_write.h"
#include "encode/quantize.h"
#include "format/bits.h"

/* Bytes of sb_header, split map, leaf headers and their pad. */
static uint32_t record_head_bytes(const sgfp4_block_plan *plan)
{
    const uint32_t split = plan->layout == SGFP4_LAYOUT_MIXED ? 12u : 0u;
    return (uint32_t)sgfp4_align16(4u + split + 4u * plan->count);
}

uint32_t sgfp4_record_bytes(const sgfp4_block_plan *plan)
{
    uint32_t bytes = record_head_bytes(plan);
    for (unsigned i = 0; i < plan->count; i++)
        bytes += (uint32_t)sgfp4_align16(
            sgfp4_payload_bytes(plan->leaves[i].size, plan->leaves[i].mode));
    return bytes;
}

void sgfp4_write_record(const sgfp4_block_plan *plan, const float *block, float *scratch,
                        uint8_t *record)
{
    const uint32_t total = sgfp4_record_bytes(plan);
    memset(record, 0, total);
    sgfp4_store_u32le(record, plan->layout);
    uint8_t *p = record + 4;
    if (plan->layout == SGFP4_LAYOUT_MIXED) {
        for (unsigned k = 0; k < 3; k++)
            sgfp4_store_u32le(p + 4 * k, plan->split[k]);
        p += 12;
    }
    float *leaf = scratch, *codes = scratch + 4096;
    uint8_t *payload = record + record_head_bytes(plan);
    for (unsigned i = 0; i < plan->count; i++) {
        const sgfp4_plan_leaf *l = &plan->leaves[i];
        const uint32_t header = (uint32_t)l->scale << 16 | (l->bias & 0xFFF0u) | l->mode;
        sgfp4_store_u32le(p + 4 * i, header);
        const unsigned n = (unsigned)l->size * l->size;
        sgfp4_gather_leaf(block, l->y, l->x, l->size, leaf);
        sgfp4_quantize(leaf, n, l->mode, sgfp4_half_to_float(l->scale),
                       sgfp4_half_to_float((uint16_t)(l->bias & 0xFFF0u)), codes);
        sgfp4_pack_codes(codes, n, l->mode, payload);
        payload += sgfp4_align16(sgfp4_payload_bytes(l->size, l->mode));
    }
}

uint64_t sgfp4_v2_table_bytes(uint64_t blocks) { return sgfp4_align16(16 + 4 * blocks); }

void sgfp4_write_v2_table(uint64_t blocks, const uint64_t *record_offsets, uint8_t *stream)
{
    const uint64_t base = sgfp4_v2_table_bytes(blocks);
    memset(stream, 0, base);
    memcpy(stream, "SGF4", 4);
    stream[4] = SGFP4_V2_VERSION;
    sgfp4_store_u32le(stream + 5, (uint32_t)blocks);
    for (uint64_t b = 0; b < blocks; b++)
        sgfp4_store_u32le(stream + 16 + 4 * b, (uint32_t)record_offsets[b]);
}
