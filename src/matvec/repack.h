/* The plan's repacked layout of a tensor (v1 or v2) for the products of the AVX-512 sets:
 * every block's codes in one fixed order whatever its leaf tree, and per 8-row group the
 * few (S, Bias) pairs its cells use, so that a MIXED block runs through the same in-register
 * path as a uniform one (docs/matvec.md, "The plan: the repacked layout"). Built once by
 * sgfp4_matvec_plan_create (matvec/repack.c) where the fastest kernel set reads it.
 *
 * Blocks lie in the order the strip loop visits them (strip after strip, each strip's
 * blocks in bit-reversed column order, strip.h), each at a 64-byte aligned offset, so that
 * a product streams the layout sequentially. One block:
 *
 *   + 0     codes, 8 groups x 4 lines x 64 bytes: group g, line l, byte 4 L + m holds in its
 *           low nibble u = code + 8 of unit l's lane L, column m, and in its high nibble that
 *           of unit l + 4. Unit p of group g covers rows 8 g .. 8 g + 7 and cells 2 p, 2 p + 1
 *           (columns 8 p .. 8 p + 7); lane L = 2 i + j is row 8 g + i, cell 2 p + j, and
 *           column m of the lane is column 8 p + 4 j + m. T158 codes (-1, 0, +1) are stored
 *           as codes like FP4 ones: D8's cell sums and D1's weights read both modes alike.
 *           Codes of padding columns are 0.
 *   + 2048  the group directory: uint16 meta offset[8] (from the block's start), uint8
 *           count[8] (the group's table entries, 1..32; 0 for a group of one-leaf units)
 *   + 2072  each group's meta at its offset, one of two forms (binary16 S and B are the
 *           leaf header's halves, B with the flag bits masked):
 *           - count 0, every unit's four tiles in one leaf: S, B of unit p's leaf at 4 p and
 *             4 p + 2 (32 bytes; one conversion gives a register of the 8 pairs);
 *           - else tile[32], then S[count], B[count]. tile[4 p + 2 h + j] is the table index
 *             of the leaf holding the 4x4 tile of rows 8 g + 4 h .. + 3, cell 2 p + j.
 *   then zero bytes to the next multiple of 64.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MATVEC_REPACK_H
#define SGFP4_MATVEC_REPACK_H

#include "matvec/matvec_internal.h"

#define SGFP4_RP_CODES 2048u      /* codes bytes per block; the directory follows */
#define SGFP4_RP_DIRECTORY 24u    /* uint16 offset[8], uint8 count[8] */
#define SGFP4_RP_TILES 32u        /* tile indices per group meta */
#define SGFP4_RP_MAX_TABLE 32u    /* table entries per group at most (its 32 tiles) */
#define SGFP4_RP_PAIRS 32u        /* meta bytes of a group of one-leaf units: 8 (S, B) */

/* Builds plan->repack for the plan's v2 tensor (adds its memory to plan->bytes). */
sgfp4_status sgfp4_matvec_repack_build(sgfp4_matvec_plan *plan);
/* Frees what sgfp4_matvec_repack_build allocated (nothing where it built nothing). */
void sgfp4_matvec_repack_free(sgfp4_matvec_plan *plan);

/* The repacked block b (= by * tiles_x + bx) of a plan that has the layout. */
static inline const uint8_t *sgfp4_matvec_repacked_block(const sgfp4_matvec_plan *plan,
                                                         uint64_t b)
{
    return plan->repack + plan->repack_offset[b];
}

#endif
