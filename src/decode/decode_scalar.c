/* The scalar reference decoder. Deliberately plain: decode the affected rows of each 64x64
 * macroblock into a tile, leaf by leaf and weight by weight, exactly as spec §22.8.3 and
 * DECISIONS D1/D4/D5 say, then crop the tile into the output. Every faster path is tested
 * bit for bit against this file.
 * SPDX-License-Identifier: MIT */
#include "decode/decode_internal.h"

/* w = fl32(fl32(S) * fl32(code) + fl32(Bias)): the product is exact, the sum rounds once
 * (round to nearest even). */
static float reconstruct(float scale, int code, float bias)
{
    const float product = scale * (float)code;
    return product + bias;
}

/* Decodes rows [y0, y1) of macroblock b into tile (the other rows are left untouched). */
static void decode_tile_rows(const sgfp4_tensor *t, uint64_t b, unsigned y0, unsigned y1,
                             float tile[64][64])
{
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    const unsigned n = sgfp4_block_leaf_refs(t, b, leaves);
    for (unsigned i = 0; i < n; i++) {
        const sgfp4_leaf_ref *leaf = &leaves[i];
        for (unsigned y = leaf->y; y < (unsigned)leaf->y + leaf->size; y++) {
            if (y < y0 || y >= y1)
                continue;
            for (unsigned x = 0; x < leaf->size; x++) {
                const unsigned k = (y - leaf->y) * leaf->size + x; /* row-major in the leaf */
                const int code = leaf->mode == SGFP4_MODE_T158
                                     ? sgfp4_t158_code(leaf->payload, k)
                                     : sgfp4_fp4_code(leaf->payload, k);
                tile[y][leaf->x + x] = reconstruct(leaf->scale, code, leaf->bias);
            }
        }
    }
}

/* Decodes tensor rows [r0, r1), all inside block row `by`, to output rows starting at
 * `first_out_row`. */
static void decode_block_row(const sgfp4_tensor *t, uint64_t by, uint64_t r0, uint64_t r1,
                             const sgfp4_output *out, uint64_t first_out_row)
{
    const size_t elem = sgfp4_dtype_size(out->dtype);
    const unsigned y0 = (unsigned)(r0 - by * 64), y1 = (unsigned)(r1 - by * 64);
    float tile[64][64];
    for (uint64_t bx = 0; bx < t->tiles_x; bx++) {
        decode_tile_rows(t, by * t->tiles_x + bx, y0, y1, tile);
        const uint64_t c0 = bx * 64;
        const unsigned width = (unsigned)(t->cols - c0 < 64 ? t->cols - c0 : 64);
        for (unsigned y = y0; y < y1; y++) {
            uint8_t *row = out->base + (first_out_row + (y - y0)) * out->row_stride_bytes;
            for (unsigned x = 0; x < width; x++)
                sgfp4_store_weight(row + (c0 + x) * elem, out->dtype, tile[y][x]);
        }
    }
}

void sgfp4_scalar_decode_rows(const sgfp4_tensor *t, uint64_t row_begin, uint64_t row_end,
                              const sgfp4_output *out)
{
    uint64_t r = row_begin;
    while (r < row_end) {
        const uint64_t by = r / 64;
        const uint64_t stop = (by + 1) * 64 < row_end ? (by + 1) * 64 : row_end;
        decode_block_row(t, by, r, stop, out, r - row_begin);
        r = stop;
    }
}

void sgfp4_scalar_decode_gather(const sgfp4_tensor *t, const uint64_t *rows, size_t count,
                                const sgfp4_output *out)
{
    for (size_t k = 0; k < count; k++)
        decode_block_row(t, rows[k] / 64, rows[k], rows[k] + 1, out, k);
}

void sgfp4_scalar_decode_row_columns(const sgfp4_tensor *t, uint64_t row, uint64_t col_begin,
                                     uint64_t col_end, const sgfp4_output *out)
{
    const size_t elem = sgfp4_dtype_size(out->dtype);
    const uint64_t by = row / 64;
    const unsigned y = (unsigned)(row - by * 64);
    float tile[64][64];
    for (uint64_t bx = col_begin / 64; bx * 64 < col_end; bx++) {
        decode_tile_rows(t, by * t->tiles_x + bx, y, y + 1, tile);
        const uint64_t c0 = bx * 64 > col_begin ? bx * 64 : col_begin;
        const uint64_t c1 = (bx + 1) * 64 < col_end ? (bx + 1) * 64 : col_end;
        for (uint64_t c = c0; c < c1; c++)
            sgfp4_store_weight(out->base + (c - col_begin) * elem, out->dtype,
                               tile[y][c - bx * 64]);
    }
}
