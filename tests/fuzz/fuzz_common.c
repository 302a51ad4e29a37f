/* Shape carving and the post-open checks shared by the decode fuzz targets.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "../support/options.h"
#include "sgfp4_experimental.h"

void fuzz_carve_shape(const fuzz_prefix *prefix, uint64_t blocks, uint64_t *rows,
                      uint64_t *cols)
{
    if ((prefix->flags & FUZZ_FLAG_FREE_SHAPE) || blocks == 0) {
        /* Any shape, mostly not matching the container: exercises the shape checks. */
        *rows = 1 + (uint64_t)prefix->tiles_pick * 7 + prefix->crop_y;
        *cols = 1 + (uint64_t)prefix->crop_x * 13;
        return;
    }
    /* The tiles_pick-th divisor of blocks (mod the number of divisors) is tiles_y. */
    uint64_t divisors[256];
    unsigned n = 0;
    for (uint64_t d = 1; d * d <= blocks && n < 254; d++)
        if (blocks % d == 0) {
            divisors[n++] = d;
            if (d != blocks / d)
                divisors[n++] = blocks / d;
        }
    const uint64_t tiles_y = divisors[prefix->tiles_pick % n];
    const uint64_t tiles_x = blocks / tiles_y;
    *rows = 64 * tiles_y - prefix->crop_y % 64;
    *cols = 64 * tiles_x - prefix->crop_x % 64;
}

void fuzz_open_and_check(const fuzz_prefix *prefix, const uint8_t *container, size_t size,
                         sgfp4_profile profile, uint64_t rows, uint64_t cols)
{
    sgfp4_open_options options;
    sgfp4_open_options_init(&options);
    options.limits.max_elements = FUZZ_MAX_ELEMENTS;
    const int limit_bytes = (prefix->flags & FUZZ_FLAG_LIMIT_BYTES) && size > 0;
    if (limit_bytes)
        options.limits.max_container_bytes = size - 1;

    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_tensor_open(container, size, profile, rows, cols, &t,
                                             &options, &diag);
    if (s != SGFP4_OK) {
        /* A refusal leaves no view and a message that names the problem. */
        FUZZ_ASSERT(t == NULL);
        FUZZ_ASSERT(diag.status == s);
        FUZZ_ASSERT(diag.message[0] != '\0');
        FUZZ_ASSERT(memchr(diag.message, '\0', sizeof diag.message) != NULL);
        FUZZ_ASSERT(diag.offset >= -1 && (diag.offset == -1 || (uint64_t)diag.offset <= size));
        return;
    }
    FUZZ_ASSERT(t != NULL);
    FUZZ_ASSERT(!limit_bytes);                       /* the byte limit must have refused */
    FUZZ_ASSERT(rows * cols <= FUZZ_MAX_ELEMENTS);  /* the element limit must hold */
    fuzz_check_tensor(t, container, size, prefix->flags);
    sgfp4_tensor_close(t);
}

/* Code i of a leaf payload, written from the spec's wording (§22.8.3, DECISIONS D4), not
 * from the library's helpers: FP4 nibbles low nibble first, two's complement; T158 2-bit
 * symbols from bit 0 up, 00 -> 0, 01 -> +1, 10 -> -1, 11 -> 0. */
static int leaf_code(const uint8_t *payload, unsigned mode, unsigned i)
{
    if (mode == SGFP4_MODE_FP4) {
        const int nibble = (payload[i / 2] >> (4 * (i % 2))) & 15;
        return nibble >= 8 ? nibble - 16 : nibble;
    }
    const int symbol = (payload[i / 4] >> (2 * (i % 4))) & 3;
    return symbol == 1 ? 1 : symbol == 2 ? -1 : 0;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Checks the leaves of every block against the container and the f32 decode `ref`. */
static void check_leaves(const sgfp4_tensor *t, const sgfp4_tensor_info *info,
                         const uint8_t *container, size_t size, const float *ref)
{
    static sgfp4_leaf leaves[256];
    uint64_t total = 0;
    for (uint64_t b = 0; b < info->blocks; b++) {
        const size_t n = sgfp4_tensor_block_leaves(t, b, leaves, 256);
        FUZZ_ASSERT(n >= 1 && n <= 256);
        total += n;
        uint8_t covered[64][64];
        memset(covered, 0, sizeof covered);
        const uint64_t by = b / info->tiles_x, bx = b % info->tiles_x;
        for (size_t i = 0; i < n; i++) {
            const sgfp4_leaf *l = &leaves[i];
            FUZZ_ASSERT(l->size == 64 || l->size == 32 || l->size == 16 || l->size == 8 ||
                        l->size == 4);
            FUZZ_ASSERT(l->y % l->size == 0 && l->x % l->size == 0);
            FUZZ_ASSERT(l->y + l->size <= 64 && l->x + l->size <= 64);
            FUZZ_ASSERT(l->mode <= 1);
            FUZZ_ASSERT(isfinite(l->scale) && isfinite(l->bias) && !(l->scale < 0));
            const uint64_t bytes = (uint64_t)l->size * l->size / (l->mode ? 4 : 2);
            FUZZ_ASSERT(l->payload_offset <= size && size - l->payload_offset >= bytes);
            if (info->profile == SGFP4_PROFILE_V2)
                FUZZ_ASSERT(l->payload_offset % 16 == 0);
            const uint8_t *payload = container + l->payload_offset;
            for (unsigned y = 0; y < l->size; y++)
                for (unsigned x = 0; x < l->size; x++) {
                    FUZZ_ASSERT(covered[l->y + y][l->x + x] == 0);
                    covered[l->y + y][l->x + x] = 1;
                    const uint64_t r = by * 64 + l->y + y, c = bx * 64 + l->x + x;
                    if (r >= info->rows || c >= info->cols)
                        continue;
                    const float product =
                        l->scale * (float)leaf_code(payload, l->mode, y * l->size + x);
                    const float w = product + l->bias;
                    FUZZ_ASSERT(bits_of(w) == bits_of(ref[r * info->cols + c]));
                }
        }
        for (unsigned y = 0; y < 64; y++)
            for (unsigned x = 0; x < 64; x++)
                FUZZ_ASSERT(covered[y][x] == 1);
    }
    FUZZ_ASSERT(total == info->leaves);
}

static void check_info(const sgfp4_tensor_info *info, size_t size)
{
    FUZZ_ASSERT(info->profile == SGFP4_PROFILE_V1 || info->profile == SGFP4_PROFILE_V2);
    FUZZ_ASSERT(info->tiles_y == (info->rows + 63) / 64 && info->tiles_x == (info->cols + 63) / 64);
    FUZZ_ASSERT(info->blocks == info->tiles_y * info->tiles_x);
    FUZZ_ASSERT(info->container_bytes == size);
    uint64_t by_size = 0, by_size_mode = 0, layouts = 0;
    for (int s = 0; s < SGFP4_LEAF_SIZES; s++) {
        by_size += info->leaves_by_size[s];
        by_size_mode += info->leaves_by_size_mode[s][0] + info->leaves_by_size_mode[s][1];
        FUZZ_ASSERT(info->leaves_by_size[s] ==
                    info->leaves_by_size_mode[s][0] + info->leaves_by_size_mode[s][1]);
    }
    for (int l = 0; l < 6; l++)
        layouts += info->records_by_layout[l];
    FUZZ_ASSERT(by_size == info->leaves && by_size_mode == info->leaves);
    FUZZ_ASSERT(info->leaves_by_mode[0] + info->leaves_by_mode[1] == info->leaves);
    if (info->profile == SGFP4_PROFILE_V1) {
        FUZZ_ASSERT(info->leaves == info->blocks && size == info->blocks * 2056);
        FUZZ_ASSERT(info->error_hint_blocks <= info->blocks);
    } else {
        FUZZ_ASSERT(layouts == info->blocks && info->error_hint_blocks == 0);
    }
}

void fuzz_check_tensor(const sgfp4_tensor *t, const uint8_t *container, size_t size,
                       uint8_t flags)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    check_info(&info, size);
    const uint64_t rows = info.rows, cols = info.cols, count = rows * cols;
    const size_t bytes = (size_t)count * 4;

    /* The oracle: the scalar decoder on the calling thread. */
    float *ref = malloc(bytes), *other = malloc(bytes);
    FUZZ_ASSERT(ref && other);
    const sgfp4_decode_options scalar = decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
    FUZZ_ASSERT(sgfp4_decode(t, SGFP4_DTYPE_F32, ref, 0, bytes, &scalar) == SGFP4_OK);
    for (uint64_t k = 0; k < count; k++) {
        /* finite; never a binary32 subnormal (D1) */
        FUZZ_ASSERT(isfinite(ref[k]));
        FUZZ_ASSERT(ref[k] == 0.0f || fabsf(ref[k]) >= 1.1754943508222875e-38f);
    }
    check_leaves(t, &info, container, size, ref);
    (void)sgfp4_tensor_reserved_symbols(t);

    /* Every other path gives the same bits: each kernel set this machine runs, forced, with
     * both store kinds, then AUTO or CPU for the ranges, gathers and 16-bit outputs below. */
    static const sgfp4_backend sets[] = {SGFP4_BACKEND_GENERIC, SGFP4_BACKEND_AVX2,
                                         SGFP4_BACKEND_AVX512, SGFP4_BACKEND_NEON};
    const unsigned threads = (flags & FUZZ_FLAG_THREADS) ? 3u : 1u;
    for (unsigned i = 0; i < 2 * sizeof sets / sizeof sets[0]; i++) {
        const sgfp4_decode_options set = decode_options(
            sets[i / 2], threads, i % 2 ? SGFP4_STORE_STREAMING : SGFP4_STORE_CACHED);
        if (!sgfp4_decode_backend_name(set.backend))
            continue;
        memset(other, 0xA5, bytes);
        FUZZ_ASSERT(sgfp4_decode(t, SGFP4_DTYPE_F32, other, 0, bytes, &set) == SGFP4_OK);
        FUZZ_ASSERT(memcmp(ref, other, bytes) == 0);
    }
    const sgfp4_decode_options fast =
        decode_options(SGFP4_BACKEND_AUTO, threads,
                       (flags & FUZZ_FLAG_STREAMING) ? SGFP4_STORE_STREAMING : SGFP4_STORE_AUTO);
    memset(other, 0xA5, bytes);
    FUZZ_ASSERT(sgfp4_decode(t, SGFP4_DTYPE_F32, other, 0, bytes, &fast) == SGFP4_OK);
    FUZZ_ASSERT(memcmp(ref, other, bytes) == 0);

    /* A row range with a wider stride: rows land where asked, the gaps stay untouched. */
    const uint64_t r0 = rows / 3, r1 = rows - rows / 4;
    if (r0 < r1) {
        const size_t stride = (size_t)cols + 3;
        const size_t need = (size_t)((r1 - r0 - 1) * stride + cols) * 4;
        float *part = malloc(need);
        FUZZ_ASSERT(part);
        memset(part, 0xA5, need);
        FUZZ_ASSERT(sgfp4_decode_rows(t, r0, r1, SGFP4_DTYPE_F32, part, stride, need, &fast) ==
                    SGFP4_OK);
        FUZZ_ASSERT(sgfp4_decode_rows(t, r0, r1, SGFP4_DTYPE_F32, part, stride, need - 1,
                                      &fast) == SGFP4_ERR_DST_TOO_SMALL);
        for (uint64_t r = r0; r < r1; r++) {
            FUZZ_ASSERT(memcmp(part + (r - r0) * stride, ref + r * cols, (size_t)cols * 4) == 0);
            if (r + 1 < r1)
                FUZZ_ASSERT(bits_of(part[(r - r0) * stride + cols]) == 0xA5A5A5A5u);
        }
        free(part);
    }

    /* Gather: rows in reverse order, with a repeat. */
    uint64_t pick[4] = {rows - 1, rows / 2, 0, rows - 1};
    float *gathered = other; /* rows * cols >= 4 rows? reuse only when large enough */
    if (rows >= 4) {
        FUZZ_ASSERT(sgfp4_decode_gather(t, pick, 4, SGFP4_DTYPE_F32, gathered, 0, bytes,
                                        &fast) == SGFP4_OK);
        for (int k = 0; k < 4; k++)
            FUZZ_ASSERT(memcmp(gathered + k * cols, ref + pick[k] * cols, (size_t)cols * 4) == 0);
    }

    /* f16 / bf16: rounded to nearest even from the f32 value, by every path. */
    const unsigned dtype_pick = flags & FUZZ_FLAG_DTYPE_MASK;
    if (dtype_pick == 1 || dtype_pick == 2) {
        const sgfp4_dtype dtype = dtype_pick == 1 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_BF16;
        uint16_t *half = (uint16_t *)other;
        FUZZ_ASSERT(sgfp4_decode(t, dtype, half, 0, (size_t)count * 2, &fast) == SGFP4_OK);
        for (uint64_t k = 0; k < count; k++)
            FUZZ_ASSERT(half[k] == (dtype == SGFP4_DTYPE_F16 ? sgfp4_float_to_half(ref[k])
                                                              : sgfp4_float_to_bf16(ref[k])));
    }
    free(ref);
    free(other);
}
