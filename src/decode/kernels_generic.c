/* The portable C decode kernels: what every machine without a SIMD kernel runs, and the
 * baseline the SIMD kernels override (kernels.h). Same arithmetic as the scalar oracle.
 * SPDX-License-Identifier: MIT */
#include "decode/decode_internal.h"
#include "decode/kernels.h"

/* The 16 FP4 values of a leaf, fl32(S * q + B) for nibble 0..15 (one rounding each). */
static void fp4_table(float scale, float bias, float table[16])
{
    for (int n = 0; n < 16; n++) {
        const float product = scale * (float)(n < 8 ? n : n - 16);
        table[n] = product + bias;
    }
}

static void decode_leaf_rows(const sgfp4_leaf_ref *leaf, unsigned ya, unsigned yb, float *tile)
{
    const unsigned size = leaf->size;
    float table[16];
    if (leaf->mode == SGFP4_MODE_FP4) {
        fp4_table(leaf->scale, leaf->bias, table);
    } else {
        const float plus = leaf->scale * 1.0f, minus = leaf->scale * -1.0f;
        table[0] = 0.0f * leaf->scale + leaf->bias; /* keeps the sign rules of S * 0 + B */
        table[1] = plus + leaf->bias;
        table[2] = minus + leaf->bias;
        table[3] = table[0];
    }
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

static void generic_decode_tile(const sgfp4_leaf_ref *leaves, unsigned count, unsigned y0,
                                unsigned y1, float *tile)
{
    for (unsigned i = 0; i < count; i++) {
        const unsigned ly = leaves[i].y, size = leaves[i].size;
        const unsigned ya = ly > y0 ? ly : y0, yb = ly + size < y1 ? ly + size : y1;
        if (ya < yb)
            decode_leaf_rows(&leaves[i], ya, yb, tile);
    }
}

static void generic_store_row(const float *src, unsigned width, sgfp4_dtype dtype,
                              uint8_t *dst, bool streaming)
{
    (void)streaming;
    if (dtype == SGFP4_DTYPE_F32) {
        memcpy(dst, src, (size_t)width * 4);
        return;
    }
    for (unsigned x = 0; x < width; x++)
        sgfp4_store_weight(dst + 2 * (size_t)x, dtype, src[x]);
}

static void generic_finish(void) {}

const sgfp4_decode_kernels sgfp4_kernels_generic = {"generic", generic_decode_tile,
                                                    generic_store_row, generic_finish};
