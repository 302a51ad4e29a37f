/* The portable C decode kernels: what every machine without a SIMD kernel runs, and the
 * baseline the SIMD kernels override (kernels.h). Same arithmetic as the scalar oracle,
 * through a per-leaf table of its 16 (FP4) or 4 (T158) possible values.
 * SPDX-License-Identifier: MIT */
#include "decode/decode_internal.h"
#include "decode/kernels.h"

/* The values of a leaf's codes: fl32(S * q + B) for every symbol (one rounding each). */
static void value_table(const sgfp4_leaf_ref *leaf, float table[16])
{
    if (leaf->mode == SGFP4_MODE_FP4) {
        for (int n = 0; n < 16; n++) {
            const float product = leaf->scale * (float)(n < 8 ? n : n - 16);
            table[n] = product + leaf->bias;
        }
    } else {
        static const int value[4] = {0, 1, -1, 0};
        for (int n = 0; n < 4; n++) {
            const float product = leaf->scale * (float)value[n];
            table[n] = product + leaf->bias;
        }
    }
}

/* Rows [ya, yb) of one leaf into a 64x64 tile (row y at tile + 64 * y). */
static void leaf_rows(const sgfp4_leaf_ref *leaf, unsigned ya, unsigned yb, float *tile)
{
    const unsigned size = leaf->size;
    float table[16];
    value_table(leaf, table);
    for (unsigned y = ya; y < yb; y++) {
        float *dst = tile + SGFP4_MB * y + leaf->x;
        const unsigned first = (y - leaf->y) * size; /* code index of the row's first weight */
        if (leaf->mode == SGFP4_MODE_FP4) {
            const uint8_t *p = leaf->payload + first / 2;
            for (unsigned x = 0; x < size; x += 2) {
                dst[x] = table[p[x / 2] & 0xFu];
                dst[x + 1] = table[p[x / 2] >> 4];
            }
        } else {
            const uint8_t *p = leaf->payload + first / 4;
            for (unsigned x = 0; x < size; x += 4) {
                const unsigned v = p[x / 4];
                dst[x] = table[v & 3u];
                dst[x + 1] = table[(v >> 2) & 3u];
                dst[x + 2] = table[(v >> 4) & 3u];
                dst[x + 3] = table[v >> 6];
            }
        }
    }
}

static void generic_decode_rows(const sgfp4_tensor *t, uint64_t by, uint64_t rows,
                                uint8_t *const dst[SGFP4_MB], sgfp4_dtype dtype,
                                bool streaming, void *scratch)
{
    (void)streaming;
    (void)scratch;
    float tile[SGFP4_MB * SGFP4_MB];
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    const size_t elem = sgfp4_dtype_size(dtype);
    for (uint64_t bx = 0; bx < t->tiles_x; bx++) {
        const unsigned count = sgfp4_list_block_refs(t, by * t->tiles_x + bx, leaves);
        for (unsigned i = 0; i < count; i++) {
            const unsigned ly = leaves[i].y, size = leaves[i].size;
            for (unsigned y = ly; y < ly + size; y++)
                if ((rows >> y) & 1u)
                    leaf_rows(&leaves[i], y, y + 1, tile);
        }
        const uint64_t c0 = bx * SGFP4_MB;
        const unsigned width = (unsigned)(t->cols - c0 < SGFP4_MB ? t->cols - c0 : SGFP4_MB);
        for (unsigned y = 0; y < SGFP4_MB; y++) {
            if (!((rows >> y) & 1u))
                continue;
            const float *row = tile + SGFP4_MB * y;
            uint8_t *out = dst[y] + c0 * elem;
            if (dtype == SGFP4_DTYPE_F32)
                memcpy(out, row, (size_t)width * 4);
            else
                for (unsigned x = 0; x < width; x++)
                    sgfp4_store_weight(out + elem * x, dtype, row[x]);
        }
    }
}

static void generic_finish(void) {}

const sgfp4_decode_kernels sgfp4_kernels_generic = {"generic", generic_decode_rows,
                                                    generic_finish, 0};
