/* AVX2 + FMA + F16C decode kernels (x86-64). Compiled with per-function target attributes,
 * so the rest of the library keeps the baseline ISA; sgfp4_decode_kernels_best() runs them
 * only on CPUs that have the three extensions. The block loop (two L1 tiles, rows written
 * out between leaves, kinds, gathers) is tile_driver.h's, shared with the avx512 set; this
 * file holds what is AVX2's own: codes to floats, tile stores and the row writer.
 *
 * Weights, 8 per vector. FP4: broadcast the 4 payload bytes of 8 codes, one vpsllvd puts
 * each code's bits at the top of its lane, vpsrad sign-extends, then fma(q, S, B): the
 * product S * q is exact in binary32 (DECISIONS D1), so the fused multiply-add rounds once,
 * exactly like the oracle's separate multiply and add. (A 16-entry table would need two
 * vpermps and a blend per 8 codes in AVX2: no fewer instructions.) T158 by table: once per
 * leaf the same fma computes the values of the symbols 00, 01, 10, 11 (0, +1, -1, 0, D4),
 * twice over in 8 lanes; then 8 symbols cost a 16-bit broadcast, a vpsrlvd that brings
 * symbol i to the bottom of lane i and a vpermps, which reads only the low 3 bits of each
 * lane (bit 2, the next symbol's, picks between two equal copies).
 *
 * Rows out: 32-byte vectors: f32 as is, f16 by vcvtps2ph (round to nearest even by its
 * immediate), bf16 by integer round-to-nearest-even (decoded weights are finite, no NaN
 * case). With streaming stores whole 64-byte lines go out as two consecutive 32-byte
 * streaming stores, so that the write-combining buffer sends a full line. A row whose start
 * is a multiple of 4 bytes but not of 64 keeps the last two vectors of each tile row
 * (carry) to assemble the line that spans two blocks; only the partial lines at the row's
 * two ends are plain stores. Other rows, cached stores and a partial last tile use plain
 * stores.
 * SPDX-License-Identifier: MIT */
#include "decode/tile_job.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <immintrin.h>

#define AVX2 __attribute__((target(SGFP4_TARGET_AVX2)))
/* Inlined into each caller, so that sizes and modes passed as constants specialise it. */
#define AVX2_INLINE static inline __attribute__((target(SGFP4_TARGET_AVX2), always_inline))
/* for tile_driver.h */
#define TILE_INLINE AVX2_INLINE
#define TILE_FN static AVX2

/* T158 symbol values for a 3-bit index (the symbol and the next one's low bit). */
static const float t158_value[8] __attribute__((aligned(32))) = {0, 1, -1, 0, 0, 1, -1, 0};

/* ---- codes to floats ------------------------------------------------------------------ */

/* What decoding one leaf needs, set up once per leaf. */
typedef struct tile_codes {
    __m256 scale, bias; /* FP4 */
    __m256 table;       /* T158: the weight of each 3-bit index */
    const uint8_t *payload;
} tile_codes;

/* Leaf i of a listed block, whose mode is `mode` (a constant where the caller can). */
AVX2_INLINE tile_codes tile_codes_of(const sgfp4_leaf_list *list, unsigned i, unsigned mode)
{
    tile_codes c;
    c.scale = _mm256_set1_ps(list->scale[i]);
    c.bias = _mm256_set1_ps(list->bias[i]);
    c.table = mode == SGFP4_MODE_T158 ? _mm256_fmadd_ps(_mm256_load_ps(t158_value), c.scale, c.bias)
                                      : c.bias;
    c.payload = list->payload + list->offset[i];
    return c;
}

/* Weights 8v .. 8v + 7 of a leaf of mode `mode`, in storage (row-major) order: FP4 from
 * payload bytes 4v .. 4v + 3, T158 from bytes 2v .. 2v + 1. */
AVX2_INLINE __m256 leaf_vector(const tile_codes *c, unsigned v, unsigned mode)
{
    if (mode == SGFP4_MODE_FP4) {
        const __m256i to_top = _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0);
        const __m256i word = _mm256_set1_epi32((int)sgfp4_load_u32le(c->payload + 4 * (size_t)v));
        const __m256i q = _mm256_srai_epi32(_mm256_sllv_epi32(word, to_top), 28);
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), c->scale, c->bias);
    }
    const __m256i down = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i symbols = _mm256_set1_epi32((int)sgfp4_load_u16le(c->payload + 2 * (size_t)v));
    return _mm256_permutevar8x32_ps(c->table, _mm256_srlv_epi32(symbols, down));
}

/* Stores vector v of a leaf of edge `size` whose top-left corner is at `at` in the tile: an
 * 8-weight vector is an eighth of a row (64), a quarter (32), half (16), a row (8) or two
 * rows (4). */
AVX2_INLINE void tile_put(float *at, unsigned size, unsigned v, __m256 w)
{
    if (size >= 8) {
        const unsigned per_row = size / 8;
        _mm256_store_ps(at + SGFP4_MB * (v / per_row) + 8 * (v % per_row), w);
    } else {
        float *row = at + SGFP4_MB * 2 * v;
        _mm_store_ps(row, _mm256_castps256_ps128(w));
        _mm_store_ps(row + SGFP4_MB, _mm256_extractf128_ps(w, 1));
    }
}

/* Where leaf i's top-left corner lies in the tile, and its edge. */
static inline unsigned leaf_at(const sgfp4_leaf_list *list, unsigned i)
{
    return list->desc[i] & 0xFFFFu;
}
static inline unsigned leaf_size(const sgfp4_leaf_list *list, unsigned i)
{
    return 4u << (list->desc[i] >> 16);
}

/* Leaf i, whole, of edge `size` and mode `mode` (constants at every call) into the tile. */
AVX2_INLINE void tile_leaf_whole(const sgfp4_leaf_list *list, unsigned i, float *tile,
                                 unsigned size, unsigned mode)
{
    const tile_codes c = tile_codes_of(list, i, mode);
    float *at = tile + leaf_at(list, i);
#pragma GCC unroll 32
    for (unsigned v = 0; v < size * size / 8; v++)
        tile_put(at, size, v, leaf_vector(&c, v, mode));
}

/* Row y of a 64x64 leaf: eight vectors. */
AVX2_INLINE void tile_leaf_row64(const tile_codes *c, float *tile, unsigned y, unsigned mode)
{
#pragma GCC unroll 8
    for (unsigned v = 8 * y; v < 8 * y + 8; v++)
        tile_put(tile, SGFP4_MB, v, leaf_vector(c, v, mode));
}

/* The vectors of leaf i (mode `mode`) that hold rows selected by `rows` (a gather): a 4x4
 * leaf decodes row pairs (the tile is scratch; only the selected rows are written out). */
AVX2_INLINE void leaf_selected_mode(const sgfp4_leaf_list *list, unsigned i, uint64_t rows,
                                    float *tile, unsigned mode)
{
    const unsigned size = leaf_size(list, i), y0 = leaf_at(list, i) / SGFP4_MB;
    const unsigned rows_per_vector = size >= 8 ? 1 : 2;
    const unsigned vectors_per_row = size >= 8 ? size / 8 : 1;
    uint64_t m = (rows >> y0) & sgfp4_leaf_row_mask(0, size);
    if (!m)
        return;
    const tile_codes c = tile_codes_of(list, i, mode);
    float *at = tile + leaf_at(list, i);
    /* the leaf's selected rows, bit r = leaf row r, visited one vector row group at a time */
    while (m) {
        const unsigned group = (unsigned)__builtin_ctzll(m) / rows_per_vector;
        for (unsigned v = group * vectors_per_row; v < (group + 1) * vectors_per_row; v++)
            tile_put(at, size, v, leaf_vector(&c, v, mode));
        m &= ~sgfp4_leaf_row_mask(group * rows_per_vector, rows_per_vector);
    }
}

static AVX2 void tile_leaf_selected(const sgfp4_leaf_list *list, unsigned i, uint64_t rows,
                                    float *tile)
{
    if (list->mode[i] == SGFP4_MODE_FP4)
        leaf_selected_mode(list, i, rows, tile, SGFP4_MODE_FP4);
    else
        leaf_selected_mode(list, i, rows, tile, SGFP4_MODE_T158);
}

TILE_FN unsigned tile_list_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    return sgfp4_avx2_block_leaves(t, b, list);
}

/* ---- writing tile rows out ------------------------------------------------------------ */

/* 16 floats as 16 halves of `dtype` (F16 or BF16), round to nearest even; bf16 by integer
 * arithmetic, (bits + 0x7FFF + lsb) >> 16 (no NaN can occur). */
AVX2_INLINE __m256i halves_x16(const float *src, sgfp4_dtype dtype)
{
    const __m256 a = _mm256_load_ps(src), b = _mm256_load_ps(src + 8);
    if (dtype == SGFP4_DTYPE_F16)
        return _mm256_set_m128i(_mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF);
    const __m256i ba = _mm256_castps_si256(a), bb = _mm256_castps_si256(b);
    const __m256i ra = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(ba, half), _mm256_and_si256(_mm256_srli_epi32(ba, 16), one)), 16);
    const __m256i rb = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(bb, half), _mm256_and_si256(_mm256_srli_epi32(bb, 16), one)), 16);
    /* packus works per 128-bit lane: a0-3 b0-3 a4-7 b4-7, put back in order */
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(ra, rb), 0xD8);
}

/* Output vector i of a tile row (32 bytes: 8 f32 values, or 16 halves). */
AVX2_INLINE __m256i segment_vector(const float *src, unsigned i, sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F32)
        return _mm256_castps_si256(_mm256_load_ps(src + 8 * i));
    return halves_x16(src + 16 * i, dtype);
}

/* The output bytes of one tile row segment as 32-byte vectors, after the two vectors of the
 * row's previous segment (the carry): v[2 .. 2 + count) are this segment's (8 for f32, 4
 * for the 16-bit types; the last may hold fewer valid bytes). */
typedef struct segment {
    __m256i v[2 + 8];
    unsigned count;
} segment;

AVX2_INLINE void segment_fill(segment *g, const float *src, sgfp4_dtype dtype)
{
    g->count = dtype == SGFP4_DTYPE_F32 ? 8 : 4;
    for (unsigned i = 0; i < g->count; i++)
        g->v[2 + i] = segment_vector(src, i, dtype);
}

/* The 32 bytes that start `shift` bytes (4..28, a multiple of 4) before b in the byte
 * sequence a, b: the last `shift` bytes of a, then the first 32 - shift of b. */
AVX2_INLINE __m256i join_32(__m256i a, __m256i b, unsigned shift)
{
    if (shift == 16)
        return _mm256_permute2x128_si256(a, b, 0x21);
    const unsigned f = shift / 4; /* floats from a */
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i rotate = _mm256_and_si256(_mm256_sub_epi32(lane, _mm256_set1_epi32((int)f)),
                                            _mm256_set1_epi32(7));
    const __m256i from_a = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)f), lane);
    return _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(b, rotate),
                              _mm256_permutevar8x32_epi32(a, rotate), from_a);
}

/* Vector k of g->v, or zeros past the segment's end (bytes that no store keeps). */
AVX2_INLINE __m256i vector_or_zero(const segment *g, unsigned k)
{
    return k < 2 + g->count ? g->v[k] : _mm256_setzero_si256();
}

/* The 32-byte unit u of the output sequence that starts `shift` (0..60, a multiple of 4)
 * bytes before vector 2 of g->v: g->v[2..] is this segment, g->v[0..1] the carry. */
AVX2_INLINE __m256i unit_at(const segment *g, unsigned u, unsigned shift)
{
    const unsigned k = 2 + u - (shift >= 32), s = shift % 32;
    const __m256i cur = vector_or_zero(g, k);
    return s ? join_32(vector_or_zero(g, k - 1), cur, s) : cur;
}

/* Bytes [lo, hi) of the 64-byte line at `line` (two units), 0 <= lo < hi <= 64, plainly. */
AVX2_INLINE void put_part(uint8_t *line, __m256i u0, __m256i u1, unsigned lo, unsigned hi)
{
    uint8_t bytes[64];
    _mm256_storeu_si256((__m256i *)bytes, u0);
    _mm256_storeu_si256((__m256i *)(bytes + 32), u1);
    memcpy(line + lo, bytes + lo, hi - lo);
}

/* Streams `bytes` bytes of g to p, which lies `shift` (a multiple of 4) bytes past a line
 * start: every whole line as two consecutive 32-byte streaming stores; the row's first line
 * (`first`) and, at the row's end (`last`), its last line as plain partial stores. The line
 * that a segment leaves unfinished is written by the next one from the carry. */
AVX2_INLINE void stream_segment(uint8_t *p, segment *g, unsigned bytes, unsigned shift,
                                bool first, bool last, uint8_t carry[64])
{
    if (first)
        g->v[0] = g->v[1] = _mm256_setzero_si256(); /* (the row's first line skips them) */
    else
        memcpy(g->v, carry, 64);
    uint8_t *line = p - shift;
    const unsigned total = shift + bytes; /* bytes from `line` to the end of this piece */
    for (unsigned m = 0; 64 * m < total; m++, line += 64) {
        const unsigned lo = first && m == 0 ? shift : 0;
        const unsigned hi = total - 64 * m < 64 ? total - 64 * m : 64;
        if (hi < 64 && !last)
            break; /* unfinished: the next segment completes it */
        const __m256i u0 = unit_at(g, 2 * m, shift), u1 = unit_at(g, 2 * m + 1, shift);
        if (lo == 0 && hi == 64) {
            _mm256_stream_si256((__m256i *)line, u0);
            _mm256_stream_si256((__m256i *)(line + 32), u1);
        } else {
            put_part(line, u0, u1, lo, hi);
        }
    }
    memcpy(carry, &g->v[g->count], 64); /* this segment's last two vectors */
}

/* A whole segment inside a row (neither its first nor its last) at p, `shift` (a nonzero
 * multiple of 4) bytes past a line start: its `count` units as whole lines, the first
 * completed from the carry (the previous segment's last two vectors). The vectors come
 * straight from the tile and the join keeps only the previous one or two, so nothing but
 * the lines and the new carry is stored. */
AVX2_INLINE void stream_inner(uint8_t *p, const float *src, sgfp4_dtype dtype, unsigned count,
                              unsigned shift, uint8_t carry[64])
{
    uint8_t *line = p - shift;
    const unsigned s = shift % 32;
    __m256i older = _mm256_load_si256((const __m256i *)carry);
    __m256i prev = _mm256_load_si256((const __m256i *)(carry + 32));
#pragma GCC unroll 8
    for (unsigned u = 0; u < count; u++) {
        const __m256i cur = segment_vector(src, u, dtype);
        /* the unit starts s bytes before `cur` (shift < 32) or before `prev` */
        const __m256i unit = shift < 32 ? join_32(prev, cur, s)
                             : s       ? join_32(older, prev, s)
                                       : prev;
        _mm256_stream_si256((__m256i *)(line + 32 * u), unit);
        older = prev;
        prev = cur;
    }
    _mm256_store_si256((__m256i *)carry, older);
    _mm256_store_si256((__m256i *)(carry + 32), prev);
}

/* The row writer's primitives for tile_driver.h: rows at multiples of 4 bytes stream. */
#define TILE_CAN_STREAM 1
#define TILE_STREAM_ALIGN 4u

/* An aligned whole tile row: whole lines straight from the tile. */
AVX2_INLINE void tile_stream_aligned(uint8_t *p, const float *src, sgfp4_dtype dtype)
{
    const unsigned count = dtype == SGFP4_DTYPE_F32 ? 8 : 4;
#pragma GCC unroll 8
    for (unsigned i = 0; i < count; i++)
        _mm256_stream_si256((__m256i *)(p + 32 * i), segment_vector(src, i, dtype));
}

AVX2_INLINE void tile_stream_inner(uint8_t *p, const float *src, sgfp4_dtype dtype,
                                   unsigned shift, uint8_t carry[64])
{
    stream_inner(p, src, dtype, dtype == SGFP4_DTYPE_F32 ? 8 : 4, shift, carry);
}

AVX2_INLINE void tile_stream_edge(uint8_t *p, const float *src, sgfp4_dtype dtype,
                                  unsigned bytes, unsigned shift, bool first, bool last,
                                  uint8_t carry[64])
{
    segment g;
    segment_fill(&g, src, dtype);
    stream_segment(p, &g, bytes, shift, first, last, carry);
}

/* The first `width` values (1..64) of a tile row with plain stores. */
AVX2_INLINE void tile_store_plain(uint8_t *p, const float *src, unsigned width,
                                  sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F32) {
        unsigned x = 0;
        for (; x + 8 <= width; x += 8)
            _mm256_storeu_ps((float *)(p + 4 * x), _mm256_load_ps(src + x));
        if (x < width)
            memcpy(p + 4 * x, src + x, 4 * (size_t)(width - x));
        return;
    }
    unsigned x = 0;
    for (; x + 16 <= width; x += 16)
        _mm256_storeu_si256((__m256i *)(p + 2 * x), halves_x16(src + x, dtype));
    if (x < width) {
        uint16_t last[16];
        _mm256_storeu_si256((__m256i *)last, halves_x16(src + x, dtype));
        memcpy(p + 2 * x, last, 2 * (size_t)(width - x));
    }
}

#include "decode/tile_driver.h"

static void avx2_finish(void) { _mm_sfence(); }

const sgfp4_decode_kernels sgfp4_kernels_avx2 = {"avx2", tile_decode_rows, avx2_finish,
                                                 TILE_SCRATCH_BYTES};

#endif
