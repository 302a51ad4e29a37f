/* Plans from per-node decisions, and the v1 / v2 writers of their bytes (plan.c, write_v1.c,
 * write_v2.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_BLOCK_WRITE_H
#define SGFP4_ENCODE_BLOCK_WRITE_H

#include "encode/block_plan.h"

/* Builds a plan from per-node decisions: choice[node] = 0 FP4 leaf, 1 T158 leaf, 2 split;
 * params[node*2 + mode] holds the leaf parameters. Collapses uniform trees to their
 * uniform layout. */
void sgfp4_plan_from_choices(const uint8_t *choice, const sgfp4_leaf_params *params,
                             sgfp4_block_plan *plan);
/* Bytes of the v2 record a plan produces. */
uint32_t sgfp4_record_bytes(const sgfp4_block_plan *plan);
/* Writes a v2 record (exactly sgfp4_record_bytes bytes) for the block's weights. */
void sgfp4_write_record(const sgfp4_block_plan *plan, const float *block, float *scratch,
                        uint8_t *record);
/* Size of the v2 stream header, offset table and its pad: align16(16 + 4 B). */
uint64_t sgfp4_v2_table_bytes(uint64_t blocks);
/* Writes the v2 stream header and offset table (offsets relative to the record region). */
void sgfp4_write_v2_table(uint64_t blocks, const uint64_t *record_offsets, uint8_t *stream);
/* Writes v1 block b: its header, offset and 2048-byte payload into a v1 container of
 * `blocks` blocks. */
void sgfp4_write_v1_block(const sgfp4_block_plan *plan, const float *block, uint64_t b,
                          uint64_t blocks, float *scratch, uint8_t *container);

#endif
