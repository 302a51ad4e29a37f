/* AVX2 + FMA + F16C decode kernels (x86-64). Compiled with per-function target attributes,
 * so the rest of the library keeps the baseline ISA; sgfp4_decode_kernels_best() runs them
 * only on CPUs that have the three extensions.
 *
 * Weights: 8 codes are spread over the 8 lanes of a vector with one variable shift of a
 * broadcast payload word and sign-extended with an arithmetic shift; then
 * w = fma(q, S, B): the product S * q is exact in binary32 (DECISIONS D1), so the fused
 * multiply-add rounds once, exactly like the oracle's separate multiply and add. Whole T158
 * leaves look their weights up instead: the four values come from that same fma once per
 * leaf, and vpermps picks them (t158_table below).
 * f16 is vcvtps2ph with round-to-nearest-even; bf16 rounds to nearest even with integer
 * arithmetic (decoded weights are finite, so there is no NaN case).
 *
 * Overlap: a block is decoded into one of two L1 tiles while the rows of the previous
 * block's tile are written out a few at a time between its leaves. Writing a whole tile at
 * once would stall on the store buffer and leave memory idle while the next tile is
 * decoded; interleaved, decode work hides under the memory writes.
 * SPDX-License-Identifier: MIT */
#include "decode/kernels.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
/* Inlined into each caller, so that sizes and modes passed as constants specialise it. */
#define AVX2_INLINE static inline __attribute__((target("avx2,fma,f16c"), always_inline))

static inline uint32_t load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* FP4: code i of `word` is nibble i (bits 4i..4i+3), two's complement. */
static AVX2 inline __m256 fp4_x8(uint32_t word, __m256 scale, __m256 bias)
{
    const __m256i to_top = _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0);
    const __m256i q = _mm256_srai_epi32(_mm256_sllv_epi32(_mm256_set1_epi32((int)word), to_top), 28);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), scale, bias);
}

static AVX2 inline __m128 fp4_x4(uint32_t word, __m128 scale, __m128 bias)
{
    const __m128i to_top = _mm_setr_epi32(28, 24, 20, 16);
    const __m128i q = _mm_srai_epi32(_mm_sllv_epi32(_mm_set1_epi32((int)word), to_top), 28);
    return _mm_fmadd_ps(_mm_cvtepi32_ps(q), scale, bias);
}

/* T158: symbol i is bits 2i..2i+1 of `word`; 00 -> 0, 01 -> +1, 10 -> -1, 11 -> 0 (D4).
 * The symbol read as a signed 2-bit number t (0, 1, -2, -1) maps to t - (t >> 1). */
static AVX2 inline __m256i t158_codes(__m256i symbols_at_top)
{
    const __m256i t = _mm256_srai_epi32(symbols_at_top, 30);
    return _mm256_sub_epi32(t, _mm256_srai_epi32(t, 1));
}

static AVX2 inline __m256 t158_x8(uint32_t word, __m256 scale, __m256 bias)
{
    const __m256i to_top = _mm256_setr_epi32(30, 28, 26, 24, 22, 20, 18, 16);
    const __m256i q = t158_codes(_mm256_sllv_epi32(_mm256_set1_epi32((int)word), to_top));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), scale, bias);
}

static AVX2 inline __m128 t158_x4(uint32_t byte, __m128 scale, __m128 bias)
{
    const __m128i to_top = _mm_setr_epi32(30, 28, 26, 24);
    const __m128i t = _mm_srai_epi32(_mm_sllv_epi32(_mm_set1_epi32((int)byte), to_top), 30);
    const __m128i q = _mm_sub_epi32(t, _mm_srai_epi32(t, 1));
    return _mm_fmadd_ps(_mm_cvtepi32_ps(q), scale, bias);
}

/* T158 by table: the four reconstructions fl32(S * t + B) for t = 0, +1, -1, 0 (symbols
 * 00, 01, 10, 11), computed once per leaf by the same fused multiply-add as above (so the
 * same bits), twice over in the 8 lanes. A vector of symbols shifted down so that symbol i
 * sits at the bottom of lane i then picks its weight with one vpermps, which reads only the
 * low 3 bits of each lane: bit 2 (the next symbol's low bit) selects the copy, which is the
 * same. 16 symbols cost a broadcast and two shift + permute pairs. */
static AVX2 inline __m256 t158_table(__m256 scale, __m256 bias)
{
    return _mm256_fmadd_ps(_mm256_setr_ps(0.0f, 1.0f, -1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 0.0f),
                           scale, bias);
}

/* Symbols 0..7 (`upper` false) or 8..15 (true) of a broadcast 32-bit word. */
static AVX2 inline __m256 t158_lookup_x8(__m256i word, bool upper, __m256 table)
{
    const __m256i down = upper ? _mm256_setr_epi32(16, 18, 20, 22, 24, 26, 28, 30)
                               : _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    return _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(word, down));
}

/* Rows [ya, yb) of one leaf of edge >= 8 into the tile (aligned 32-byte stores). */
static AVX2 void leaf_rows_wide(const sgfp4_leaf_ref *leaf, unsigned ya, unsigned yb,
                                float *tile)
{
    const __m256 scale = _mm256_set1_ps(leaf->scale), bias = _mm256_set1_ps(leaf->bias);
    const unsigned size = leaf->size;
    float *dst = tile + SGFP4_MB * ya + leaf->x;
    if (leaf->mode == SGFP4_MODE_FP4) {
        const uint8_t *p = leaf->payload + (ya - leaf->y) * size / 2;
        for (unsigned y = ya; y < yb; y++, dst += SGFP4_MB, p += size / 2)
            for (unsigned x = 0; x < size; x += 8)
                _mm256_store_ps(dst + x, fp4_x8(load_u32(p + x / 2), scale, bias));
    } else {
        const uint8_t *p = leaf->payload + (ya - leaf->y) * size / 4;
        for (unsigned y = ya; y < yb; y++, dst += SGFP4_MB, p += size / 4)
            for (unsigned x = 0; x < size; x += 8)
                _mm256_store_ps(dst + x, t158_x8(load_u16(p + x / 4), scale, bias));
    }
}

/* Rows [ya, yb) of one 4x4 leaf (16-byte stores). */
static AVX2 void leaf_rows_4x4(const sgfp4_leaf_ref *leaf, unsigned ya, unsigned yb, float *tile)
{
    const __m128 scale = _mm_set1_ps(leaf->scale), bias = _mm_set1_ps(leaf->bias);
    float *dst = tile + SGFP4_MB * ya + leaf->x;
    const unsigned first = ya - leaf->y;
    if (leaf->mode == SGFP4_MODE_FP4) {
        for (unsigned r = first; r < yb - leaf->y; r++, dst += SGFP4_MB)
            _mm_store_ps(dst, fp4_x4(load_u16(leaf->payload + 2 * r), scale, bias));
    } else {
        for (unsigned r = first; r < yb - leaf->y; r++, dst += SGFP4_MB)
            _mm_store_ps(dst, t158_x4(leaf->payload[r], scale, bias));
    }
}

/* A whole leaf of edge `size` (>= 8) and mode `mode`, both constants at every call, so each
 * copy is straight-line code without loop-exit or mode branches to mispredict. */
AVX2_INLINE void leaf_whole(const sgfp4_leaf_ref *leaf, float *tile, unsigned size,
                            unsigned mode)
{
    const __m256 scale = _mm256_set1_ps(leaf->scale), bias = _mm256_set1_ps(leaf->bias);
    float *dst = tile + SGFP4_MB * leaf->y + leaf->x;
    const uint8_t *p = leaf->payload;
    if (mode == SGFP4_MODE_T158) {
        const __m256 table = t158_table(scale, bias);
        if (size == 8) {
            /* two 8-symbol rows per 32-bit word */
#pragma GCC unroll 4
            for (unsigned y = 0; y < 8; y += 2, dst += 2 * SGFP4_MB, p += 4) {
                const __m256i word = _mm256_set1_epi32((int)load_u32(p));
                _mm256_store_ps(dst, t158_lookup_x8(word, false, table));
                _mm256_store_ps(dst + SGFP4_MB, t158_lookup_x8(word, true, table));
            }
            return;
        }
        for (unsigned y = 0; y < size; y++, dst += SGFP4_MB, p += size / 4) {
#pragma GCC unroll 4
            for (unsigned x = 0; x < size; x += 16) {
                const __m256i word = _mm256_set1_epi32((int)load_u32(p + x / 4));
                _mm256_store_ps(dst + x, t158_lookup_x8(word, false, table));
                _mm256_store_ps(dst + x + 8, t158_lookup_x8(word, true, table));
            }
        }
        return;
    }
    for (unsigned y = 0; y < size; y++, dst += SGFP4_MB, p += size / 2) {
#pragma GCC unroll 8
        for (unsigned x = 0; x < size; x += 8)
            _mm256_store_ps(dst + x, fp4_x8(load_u32(p + x / 2), scale, bias));
    }
}

/* A whole 4x4 leaf: its 16 codes in two vectors of two rows each. */
AVX2_INLINE void leaf_whole_4x4(const sgfp4_leaf_ref *leaf, float *tile, unsigned mode)
{
    const __m256 scale = _mm256_set1_ps(leaf->scale), bias = _mm256_set1_ps(leaf->bias);
    float *dst = tile + SGFP4_MB * leaf->y + leaf->x;
    __m256 v[2];
    if (mode == SGFP4_MODE_T158) {
        const __m256 table = t158_table(scale, bias);
        const __m256i word = _mm256_set1_epi32((int)load_u32(leaf->payload));
        v[0] = t158_lookup_x8(word, false, table);
        v[1] = t158_lookup_x8(word, true, table);
    } else {
        v[0] = fp4_x8(load_u32(leaf->payload), scale, bias);
        v[1] = fp4_x8(load_u32(leaf->payload + 4), scale, bias);
    }
    for (unsigned half = 0; half < 2; half++, dst += 2 * SGFP4_MB) {
        _mm_store_ps(dst, _mm256_castps256_ps128(v[half]));
        _mm_store_ps(dst + SGFP4_MB, _mm256_extractf128_ps(v[half], 1));
    }
}

/* Rows [ya, yb) of one leaf into the tile: whole leaves through the specialised copies. */
static AVX2 inline void leaf_rows(const sgfp4_leaf_ref *leaf, unsigned ya, unsigned yb,
                                  float *tile)
{
    const unsigned size = leaf->size;
    if (ya != leaf->y || yb != leaf->y + size) {
        if (size >= 8)
            leaf_rows_wide(leaf, ya, yb, tile);
        else
            leaf_rows_4x4(leaf, ya, yb, tile);
        return;
    }
    switch (size * 2 + leaf->mode) {
    case 4 * 2 + SGFP4_MODE_FP4: leaf_whole_4x4(leaf, tile, SGFP4_MODE_FP4); break;
    case 4 * 2 + SGFP4_MODE_T158: leaf_whole_4x4(leaf, tile, SGFP4_MODE_T158); break;
    case 8 * 2 + SGFP4_MODE_FP4: leaf_whole(leaf, tile, 8, SGFP4_MODE_FP4); break;
    case 8 * 2 + SGFP4_MODE_T158: leaf_whole(leaf, tile, 8, SGFP4_MODE_T158); break;
    case 16 * 2 + SGFP4_MODE_FP4: leaf_whole(leaf, tile, 16, SGFP4_MODE_FP4); break;
    case 16 * 2 + SGFP4_MODE_T158: leaf_whole(leaf, tile, 16, SGFP4_MODE_T158); break;
    case 32 * 2 + SGFP4_MODE_FP4: leaf_whole(leaf, tile, 32, SGFP4_MODE_FP4); break;
    case 32 * 2 + SGFP4_MODE_T158: leaf_whole(leaf, tile, 32, SGFP4_MODE_T158); break;
    case 64 * 2 + SGFP4_MODE_FP4: leaf_whole(leaf, tile, 64, SGFP4_MODE_FP4); break;
    case 64 * 2 + SGFP4_MODE_T158: leaf_whole(leaf, tile, 64, SGFP4_MODE_T158); break;
    default: break;
    }
}

/* bf16 of 8 floats, round to nearest even by integer arithmetic (no NaN can occur: decoded
 * weights are finite), as 8 results in the low 16 bits of each lane. */
static AVX2 inline __m256i bf16_x8(__m256 v)
{
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb);
    return _mm256_srli_epi32(rounded, 16);
}

static AVX2 void store_f32(const float *src, unsigned width, uint8_t *dst, bool streaming)
{
    unsigned x = 0;
    const uintptr_t at = (uintptr_t)dst;
    if (streaming && (at & 31u) == 0) {
        for (; x + 8 <= width; x += 8)
            _mm256_stream_ps((float *)(dst + 4 * x), _mm256_load_ps(src + x));
    } else if (streaming && (at & 15u) == 0) {
        for (; x + 4 <= width; x += 4)
            _mm_stream_ps((float *)(dst + 4 * x), _mm_load_ps(src + x));
    } else {
        for (; x + 8 <= width; x += 8)
            _mm256_storeu_ps((float *)(dst + 4 * x), _mm256_load_ps(src + x));
    }
    if (x < width)
        memcpy(dst + 4 * x, src + x, 4 * (size_t)(width - x));
}

static AVX2 void store_16bit(const float *src, unsigned width, sgfp4_dtype dtype, uint8_t *dst,
                             bool streaming)
{
    const bool stream = streaming && ((uintptr_t)dst & 15u) == 0;
    unsigned x = 0;
    for (; x + 8 <= width; x += 8) {
        const __m256 v = _mm256_load_ps(src + x);
        __m128i h;
        if (dtype == SGFP4_DTYPE_F16) {
            h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); /* round to nearest even */
        } else {
            const __m256i b = bf16_x8(v);
            h = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        }
        if (stream)
            _mm_stream_si128((__m128i *)(dst + 2 * x), h);
        else
            _mm_storeu_si128((__m128i *)(dst + 2 * x), h);
    }
    for (; x < width; x++) {
        const uint16_t h = dtype == SGFP4_DTYPE_F16 ? sgfp4_float_to_half(src[x])
                                                     : sgfp4_float_to_bf16(src[x]);
        memcpy(dst + 2 * x, &h, 2);
    }
}

/* One tile row to the output, converted to dtype. */
AVX2_INLINE void store_row(const float *src, unsigned width, sgfp4_dtype dtype,
                                  uint8_t *dst, bool streaming)
{
    if (dtype == SGFP4_DTYPE_F32)
        store_f32(src, width, dst, streaming);
    else
        store_16bit(src, width, dtype, dst, streaming);
}

/* Blocks decoded before their rows go out: each output row then leaves as one contiguous
 * run of CHUNK_BLOCKS * 256 bytes (f32), which memory takes better than 256-byte pieces
 * 16 KB apart. Two chunks of tiles live in the scratch memory (256 KB: L2-resident). */
#define CHUNK_BLOCKS 8u
#define TILE_FLOATS (SGFP4_MB * SGFP4_MB)

/* Decoded tiles (blocks bx0..bx0+count-1) whose rows ys[next..end) are still to be
 * written; row y goes to dst[y] + `column` bytes. */
typedef struct pending_chunk {
    const float *tiles;
    size_t column;
    unsigned next, end, count, last_width;
} pending_chunk;

/* One whole 64-float tile row to dst as f32, fully unrolled; `kind` (a constant at each
 * call) is 2 for 32-byte streaming stores, 1 for 16-byte streaming stores, 0 for plain. */
AVX2_INLINE void copy_row_f32(const float *src, uint8_t *dst, unsigned kind)
{
#pragma GCC unroll 8
    for (unsigned x = 0; x < SGFP4_MB; x += 8) {
        const __m256 v = _mm256_load_ps(src + x);
        float *to = (float *)(dst + 4 * x);
        if (kind == 2) {
            _mm256_stream_ps(to, v);
        } else if (kind == 1) {
            _mm_stream_ps(to, _mm256_castps256_ps128(v));
            _mm_stream_ps(to + 4, _mm256_extractf128_ps(v, 1));
        } else {
            _mm256_storeu_ps(to, v);
        }
    }
}

/* f32 rows: the whole-width tiles of a row copied inline (every tile column starts a
 * multiple of 256 bytes after the row, so the row's alignment picks the store kind once),
 * only a narrower last tile through store_f32(). */
static AVX2 void flush_rows_f32(pending_chunk *p, unsigned until, const uint8_t *ys,
                                uint8_t *const dst[SGFP4_MB], bool streaming)
{
    const unsigned full = p->last_width == SGFP4_MB ? p->count : p->count - 1;
    for (; p->next < until; p->next++) {
        const unsigned y = ys[p->next];
        uint8_t *row = dst[y] + p->column;
        const float *src = p->tiles + SGFP4_MB * y;
        const unsigned kind = !streaming ? 0 : ((uintptr_t)row & 31u) == 0 ? 2
                                             : ((uintptr_t)row & 15u) == 0 ? 1 : 0;
        const float *const end = src + (size_t)TILE_FLOATS * full;
        if (kind == 2) {
            for (; src != end; src += TILE_FLOATS, row += 4 * SGFP4_MB)
                copy_row_f32(src, row, 2);
        } else if (kind == 1) {
            for (; src != end; src += TILE_FLOATS, row += 4 * SGFP4_MB)
                copy_row_f32(src, row, 1);
        } else {
            for (; src != end; src += TILE_FLOATS, row += 4 * SGFP4_MB)
                copy_row_f32(src, row, 0);
        }
        if (full < p->count)
            store_f32(src, p->last_width, row, streaming);
    }
}

static AVX2 void flush_rows(pending_chunk *p, unsigned until, const uint8_t *ys,
                            uint8_t *const dst[SGFP4_MB], sgfp4_dtype dtype, unsigned elem,
                            bool streaming)
{
    if (dtype == SGFP4_DTYPE_F32) {
        flush_rows_f32(p, until, ys, dst, streaming);
        return;
    }
    for (; p->next < until; p->next++) {
        const unsigned y = ys[p->next];
        uint8_t *row = dst[y] + p->column;
        for (unsigned j = 0; j < p->count; j++)
            store_row(p->tiles + TILE_FLOATS * j + SGFP4_MB * y,
                      j + 1 < p->count ? SGFP4_MB : p->last_width, dtype,
                      row + (size_t)SGFP4_MB * elem * j, streaming);
    }
}

/* Exact f32 of 8 finite halves (low 16 bits of each lane), subnormals included, whatever
 * the FPU modes, as sgfp4_half_to_float_finite() computes them: normal halves by integer
 * re-biasing, the others as magnitude * 2^-24 (an exact conversion and an exact product
 * whose result is 0 or a normal binary32, so flush-to-zero and denormals-are-zero do not
 * touch it); the sign is OR-ed in last (-0 stays -0). */
static AVX2 inline __m256 half_to_float_x8(__m256i half)
{
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(half, _mm256_set1_epi32(0x8000)), 16);
    const __m256i magnitude = _mm256_and_si256(half, _mm256_set1_epi32(0x7FFF));
    const __m256i normal =
        _mm256_add_epi32(_mm256_slli_epi32(magnitude, 13), _mm256_set1_epi32(112 << 23));
    const __m256 small = _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(0x1p-24f));
    const __m256i is_normal = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x3FF));
    const __m256i bits = _mm256_blendv_epi8(_mm256_castps_si256(small), normal, is_normal);
    return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
}

#define KINDS SGFP4_LEAF_KINDS
static inline unsigned leaf_kind(const sgfp4_leaf_ref *leaf)
{
    return 2u * ((unsigned)__builtin_ctz(leaf->size) - 2u) + leaf->mode;
}

AVX2 void sgfp4_avx2_halves_to_floats(const uint16_t *halves, size_t count, float *out)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(halves + i));
        _mm256_storeu_ps(out + i, half_to_float_x8(_mm256_cvtepu16_epi32(h)));
    }
    for (; i < count; i++)
        out[i] = sgfp4_half_to_float_finite(halves[i]);
}

/* The leaves of block b, as sgfp4_decode_block_leaves() lists them but grouped by kind
 * (kind k is out[start[k]..start[k+1]), storage order within a kind; a tile does not care
 * in which order its leaves land), with the v2 leaf headers' scales and biases converted 8
 * at a time (the same bits). At a few bits per weight, listing is a large part of decode. */
AVX2 unsigned sgfp4_avx2_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_ref *out,
                                      unsigned start[SGFP4_LEAF_KINDS + 1])
{
    if (t->profile == SGFP4_PROFILE_V1) {
        sgfp4_decode_block_leaves(t, b, out);
        const unsigned kind = leaf_kind(&out[0]);
        for (unsigned k = 0; k <= KINDS; k++)
            start[k] = k > kind;
        return 1;
    }
    const uint8_t *d = t->data;
    const uint8_t *rec = d + t->record_base + sgfp4_load_u32le(d + 16 + 4 * b);
    const uint8_t *headers;
    uint32_t buffer[SGFP4_MAX_LEAVES + 16];
    const uint32_t *desc;
    const unsigned n = sgfp4_decode_record_positions(rec, buffer, &desc, &headers);
    float scale[SGFP4_MAX_LEAVES], bias[SGFP4_MAX_LEAVES];
    for (unsigned i = 0; i < n; i += 8) {
        __m256i h;
        if (n - i >= 8) {
            h = _mm256_loadu_si256((const __m256i *)(headers + 4 * i));
        } else { /* the last headers only: no read past them */
            const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)),
                                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            h = _mm256_maskload_epi32((const int *)(headers + 4 * i), live);
        }
        _mm256_storeu_ps(scale + i, half_to_float_x8(_mm256_srli_epi32(h, 16)));
        _mm256_storeu_ps(bias + i,
                         half_to_float_x8(_mm256_and_si256(h, _mm256_set1_epi32(0xFFF0))));
    }
    uint8_t kinds[SGFP4_MAX_LEAVES];
    unsigned fill[KINDS + 1] = {0};
    for (unsigned i = 0; i < n; i++) {
        kinds[i] = (uint8_t)(2u * (desc[i] >> 16) + (headers[4 * i] & 1u));
        fill[kinds[i] + 1]++;
    }
    for (unsigned k = 0; k < KINDS; k++)
        fill[k + 1] += fill[k];
    memcpy(start, fill, sizeof fill);
    const uint8_t *payload = rec + sgfp4_align16((uint64_t)(headers - rec) + 4u * n);
    for (unsigned i = 0; i < n; i++) {
        const uint32_t h = load_u32(headers + 4 * i);
        const unsigned at = desc[i] & 0xFFFFu, size = 4u << (desc[i] >> 16), mode = h & 1u;
        out[fill[kinds[i]]++] =
            (sgfp4_leaf_ref){(uint8_t)(at / SGFP4_MB), (uint8_t)(at % SGFP4_MB), (uint8_t)size,
                             (uint8_t)mode, h, scale[i], bias[i], payload};
        /* payload bytes rounded up to 16: size^2/2 (FP4) or size^2/4 (T158) */
        payload += ((size * size >> (1 + mode)) + 15u) & ~15u;
    }
    return n;
}

/* The rows of `leaf` that `rows` selects, run by run. */
static AVX2 inline void leaf_selected_rows(const sgfp4_leaf_ref *leaf, uint64_t rows,
                                           float *tile)
{
    const uint64_t all = sgfp4_leaf_row_mask(leaf->y, leaf->size);
    uint64_t m = rows & all;
    if (m == all) {
        leaf_rows(leaf, leaf->y, leaf->y + leaf->size, tile);
        return;
    }
    while (m) {
        const unsigned ya = (unsigned)__builtin_ctzll(m);
        const uint64_t from_ya = m >> ya;
        const unsigned run = ~from_ya ? (unsigned)__builtin_ctzll(~from_ya) : 64u - ya;
        leaf_rows(leaf, ya, ya + run, tile);
        m &= ~sgfp4_leaf_row_mask(ya, run);
    }
}

static AVX2 void avx2_decode_rows(const sgfp4_tensor *t, uint64_t by, uint64_t rows,
                                  uint8_t *const dst[SGFP4_MB], sgfp4_dtype dtype,
                                  bool streaming, void *scratch)
{
    float *chunks = scratch; /* [2][CHUNK_BLOCKS][TILE_FLOATS], 64-byte aligned */
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    const unsigned elem = (unsigned)sgfp4_dtype_size(dtype);
    uint8_t ys[SGFP4_MB];
    unsigned nrows = 0;
    for (unsigned y = 0; y < SGFP4_MB; y++)
        if ((rows >> y) & 1u)
            ys[nrows++] = (uint8_t)y;
    pending_chunk prev = {chunks, 0, nrows, nrows, 0, 0}; /* nothing pending yet */
    unsigned which = 0;
    for (uint64_t bx0 = 0; bx0 < t->tiles_x; bx0 += CHUNK_BLOCKS, which ^= 1u) {
        float *tiles = chunks + (size_t)which * CHUNK_BLOCKS * TILE_FLOATS;
        const unsigned count =
            (unsigned)(t->tiles_x - bx0 < CHUNK_BLOCKS ? t->tiles_x - bx0 : CHUNK_BLOCKS);
        /* the previous chunk's rows go out spread evenly over this chunk's leaves: block j
         * takes them up to row index prev_rows * (j + 1) / count, a few after each leaf
         * (Bresenham: no division per leaf) */
        const unsigned prev_rows = prev.end - prev.next;
        for (unsigned j = 0; j < count; j++) {
            float *tile = tiles + (size_t)TILE_FLOATS * j;
            unsigned start[KINDS + 1];
            const unsigned n =
                sgfp4_avx2_block_leaves(t, by * t->tiles_x + bx0 + j, leaves, start);
            const unsigned block_end = prev.end - prev_rows + prev_rows * (j + 1) / count;
            const unsigned block_rows = block_end > prev.next ? block_end - prev.next : 0;
            unsigned credit = 0;
#define FLUSH_SOME()                                                                           \
    for (credit += block_rows; credit >= n; credit -= n)                                       \
    flush_rows(&prev, prev.next + 1, ys, dst, dtype, elem, streaming)
            if (rows == ~UINT64_C(0)) {
                /* whole blocks: each kind of leaf (size, mode) through its own specialised
                 * copy, so the per-leaf dispatch does not mispredict on MIXED records */
#define KIND_CASE(kind, call)                                                                  \
    for (unsigned g = start[kind]; g < start[kind + 1]; g++) {                                 \
        const sgfp4_leaf_ref *leaf = &leaves[g];                                              \
        call;                                                                                  \
        FLUSH_SOME();                                                                          \
    }
                KIND_CASE(0, leaf_whole_4x4(leaf, tile, SGFP4_MODE_FP4))
                KIND_CASE(1, leaf_whole_4x4(leaf, tile, SGFP4_MODE_T158))
                KIND_CASE(2, leaf_whole(leaf, tile, 8, SGFP4_MODE_FP4))
                KIND_CASE(3, leaf_whole(leaf, tile, 8, SGFP4_MODE_T158))
                KIND_CASE(4, leaf_whole(leaf, tile, 16, SGFP4_MODE_FP4))
                KIND_CASE(5, leaf_whole(leaf, tile, 16, SGFP4_MODE_T158))
                KIND_CASE(6, leaf_whole(leaf, tile, 32, SGFP4_MODE_FP4))
                KIND_CASE(7, leaf_whole(leaf, tile, 32, SGFP4_MODE_T158))
                KIND_CASE(8, leaf_whole(leaf, tile, 64, SGFP4_MODE_FP4))
                KIND_CASE(9, leaf_whole(leaf, tile, 64, SGFP4_MODE_T158))
#undef KIND_CASE
            } else {
                for (unsigned i = 0; i < n; i++) {
                    leaf_selected_rows(&leaves[i], rows, tile);
                    FLUSH_SOME();
                }
            }
#undef FLUSH_SOME
            flush_rows(&prev, block_end, ys, dst, dtype, elem, streaming);
        }
        flush_rows(&prev, nrows, ys, dst, dtype, elem, streaming);
        const uint64_t c_last = (bx0 + count - 1) * SGFP4_MB;
        prev = (pending_chunk){tiles, (size_t)(bx0 * SGFP4_MB * elem), 0, nrows, count,
                               (unsigned)(t->cols - c_last < SGFP4_MB ? t->cols - c_last
                                                                       : SGFP4_MB)};
    }
    flush_rows(&prev, nrows, ys, dst, dtype, elem, streaming);
}

static void avx2_finish(void) { _mm_sfence(); }

const sgfp4_decode_kernels sgfp4_kernels_avx2 = {
    "avx2", avx2_decode_rows, avx2_finish, 2 * CHUNK_BLOCKS * TILE_FLOATS * sizeof(float)};

#endif
