/* v1 writer (spec §22.3, DECISIONS D3): headers[B] | offsets[B] | codes_blob[B * 2048].
 * Block b's payload is at b * 2048; its offset carries MODE in bit 0 and ERROR_HINT in
 * bit 1; the bias is the full low 16 bits of the header. A T158 payload's upper half stays
 * zero (§22.6.2).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "encode/block_plan.h"
#include "encode/block_write.h"
#include "encode/quantize.h"
#include "format/bits.h"

void sgfp4_write_v1_block(const sgfp4_block_plan *plan, const float *block, uint64_t b,
                          uint64_t blocks, float *scratch, uint8_t *container)
{
    const sgfp4_plan_leaf *l = &plan->leaves[0];
    uint8_t *payload = container + blocks * 8 + b * SGFP4_V1_PAYLOAD;
    const uint32_t offset = (uint32_t)(b * SGFP4_V1_PAYLOAD) | l->mode |
                            (plan->error_hint ? 2u : 0u);
    sgfp4_store_u32le(container + b * 4, (uint32_t)l->scale << 16 | l->bias);
    sgfp4_store_u32le(container + blocks * 4 + b * 4, offset);
    memset(payload, 0, SGFP4_V1_PAYLOAD);
    sgfp4_quantize(block, 4096, l->mode, sgfp4_half_to_float(l->scale),
                   sgfp4_half_to_float(l->bias), scratch);
    sgfp4_pack_codes(scratch, 4096, l->mode, payload);
}
