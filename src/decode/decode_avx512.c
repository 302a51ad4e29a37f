/* AVX-512 decode kernels (x86-64-v4: AVX-512 F, BW, DQ and VL; no VBMI, so Skylake-X and
 * later Intel cores and AMD Zen 4 and later run them). Compiled with per-function target
 * attributes; sgfp4_decode_kernels_best() runs them only where the CPU and the operating
 * system support them. The block loop (two L1 tiles, rows written out between leaves,
 * kinds, gathers) is tile_driver.h's, shared with the other SIMD sets; this file holds what
 * is AVX-512's own: codes to floats, tile stores and the row writer's primitives.
 *
 * Weights by table. A leaf's codes take at most 16 values, so the leaf's reconstructions
 * fl32(S * q + B) for every symbol fit one 16-lane register: one fused multiply-add per leaf
 * computes them (S * q is exact in binary32, DECISIONS D1, so the fused operation rounds
 * once, exactly like the oracle's multiply then add). Then 16 weights are one vpermps of
 * the table by 4-bit indices: FP4 from an 8-byte broadcast of their payload, a vpshufb that
 * puts the byte holding code i at the bottom of lane i and a vpsrlvd by 0 or 4; T158 from a
 * 4-byte broadcast and a vpsrlvd by 2i (T158 symbols repeat in the table with period 4, 11
 * decoding as 0, D4). Leaves come kind by kind, so the mode is a constant in each loop.
 *
 * Rows out: 64-byte vectors: f32 as is, f16 by vcvtps2ph (round to nearest even by its
 * immediate), bf16 by integer round-to-nearest-even (decoded weights are finite, so there
 * is no NaN case). Streaming stores write whole lines: a row at any even address keeps its
 * last vector between blocks (the carry) and assembles the line that spans two blocks with
 * one two-source permute; partial lines at the row's ends, rows at odd addresses, cached
 * stores and a partial last tile use masked plain stores.
 * SPDX-License-Identifier: MIT */
#include "decode/tile_job.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <immintrin.h>

#define AVX512 __attribute__((target(SGFP4_TARGET_AVX512)))
/* Inlined into each caller, so that sizes passed as constants specialise it. */
#define AVX512_INLINE static inline __attribute__((target(SGFP4_TARGET_AVX512), always_inline))
/* for tile_driver.h */
#define TILE_INLINE AVX512_INLINE
#define TILE_FN static AVX512

/* The value of each 4-bit table index, per mode: FP4 nibble n is n or n - 16; T158 reads
 * only the low 2 bits (00 -> 0, 01 -> +1, 10 -> -1, 11 -> 0, D4). */
static const float code_value[2][16] __attribute__((aligned(64))) = {
    {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1},
    {0, 1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0}};

/* FP4: vpshufb control that gives lane i's low byte the payload byte holding code i (byte
 * i / 2 of the 8 broadcast bytes, which every 128-bit lane sees), its other bytes zero
 * (0x80); then the shift that brings the code to bits 0..3. */
#define PICK_LANE(b0, b1, b2, b3)                                                             \
    b0, 0x80, 0x80, 0x80, b1, 0x80, 0x80, 0x80, b2, 0x80, 0x80, 0x80, b3, 0x80, 0x80, 0x80
static const uint8_t fp4_pick[64] __attribute__((aligned(64))) = {
    PICK_LANE(0, 0, 1, 1), PICK_LANE(2, 2, 3, 3), PICK_LANE(4, 4, 5, 5), PICK_LANE(6, 6, 7, 7)};
#undef PICK_LANE
static const uint32_t fp4_shift[16] __attribute__((aligned(64))) = {0, 4, 0, 4, 0, 4, 0, 4,
                                                                   0, 4, 0, 4, 0, 4, 0, 4};
/* T158: symbol i of a broadcast 32-bit word comes down to bits 0..1 (the next symbol lands
 * in bits 2..3, which the period-4 table ignores). */
static const uint32_t t158_shift[16] __attribute__((aligned(64))) = {
    0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};

/* What decoding one leaf needs, set up once per leaf. */
typedef struct tile_codes {
    __m512 table;           /* the weight of each 4-bit index */
    const uint8_t *payload;
} tile_codes;

/* Leaf i of a listed block, whose mode is `mode` (a constant where the caller can). */
AVX512_INLINE tile_codes tile_codes_of(const sgfp4_leaf_list *list, unsigned i, unsigned mode)
{
    tile_codes c;
    c.table = _mm512_fmadd_ps(_mm512_load_ps(code_value[mode]), _mm512_set1_ps(list->scale[i]),
                              _mm512_set1_ps(list->bias[i]));
    c.payload = list->payload + list->offset[i];
    return c;
}

/* Weights 16v .. 16v + 15 of a leaf of mode `mode`, in storage (row-major) order: FP4 from
 * payload bytes 8v .. 8v + 7, T158 from bytes 4v .. 4v + 3. */
AVX512_INLINE __m512 leaf_vector(const tile_codes *c, unsigned v, unsigned mode)
{
    __m512i index;
    if (mode == SGFP4_MODE_FP4) {
        const __m512i bytes = _mm512_set1_epi64((long long)sgfp4_load_u64le(c->payload + 8 * (size_t)v));
        index = _mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, _mm512_load_si512(fp4_pick)),
                                  _mm512_load_si512(fp4_shift));
    } else {
        const __m512i word = _mm512_set1_epi32((int)sgfp4_load_u32le(c->payload + 4 * (size_t)v));
        index = _mm512_srlv_epi32(word, _mm512_load_si512(t158_shift));
    }
    return _mm512_permutexvar_ps(index, c->table);
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

/* Stores vector v of a leaf of edge `size` whose top-left corner is at `at` in the tile:
 * a 16-weight vector is a quarter row (64), half a row (32), a row (16), two rows (8) or four
 * rows (4). Sub-row pieces go out as masked stores placed so that the right lanes land on
 * each row, so no lane shuffling is needed. */
AVX512_INLINE void tile_put(float *at, unsigned size, unsigned v, __m512 w)
{
    if (size >= 16) {
        const unsigned per_row = size / 16;
        _mm512_store_ps(at + SGFP4_MB * (v / per_row) + 16 * (v % per_row), w);
    } else if (size == 8) {
        float *row = at + SGFP4_MB * 2 * v;
        _mm256_store_ps(row, _mm512_castps512_ps256(w));
        _mm512_mask_storeu_ps(row + SGFP4_MB - 8, 0xFF00, w);
    } else {
        float *row = at + SGFP4_MB * 4 * v; /* v is 0: a 4x4 leaf is one vector */
        _mm_store_ps(row, _mm512_castps512_ps128(w));
        _mm512_mask_storeu_ps(row + SGFP4_MB - 4, 0x00F0, w);
        _mm512_mask_storeu_ps(row + 2 * SGFP4_MB - 8, 0x0F00, w);
        _mm512_mask_storeu_ps(row + 3 * SGFP4_MB - 12, 0xF000, w);
    }
}

/* Leaf i, whole, of edge `size` and mode `mode` (constants at every call) into the tile. */
AVX512_INLINE void tile_leaf_whole(const sgfp4_leaf_list *list, unsigned i, float *tile,
                                   unsigned size, unsigned mode)
{
    const tile_codes c = tile_codes_of(list, i, mode);
    float *at = tile + leaf_at(list, i);
#pragma GCC unroll 16
    for (unsigned v = 0; v < size * size / 16; v++)
        tile_put(at, size, v, leaf_vector(&c, v, mode));
}

/* The vectors of leaf i (mode `mode`) that hold rows selected by `rows` (a gather): whole
 * vectors, so an 8x8 leaf decodes row pairs and a 4x4 leaf all four rows; the tile is
 * scratch, and only the selected rows are written out. */
AVX512_INLINE void leaf_selected_mode(const sgfp4_leaf_list *list, unsigned i, uint64_t rows,
                                      float *tile, unsigned mode)
{
    const unsigned size = leaf_size(list, i), y0 = leaf_at(list, i) / SGFP4_MB;
    const unsigned rows_per_vector = size >= 16 ? 1 : 16 / size;
    const unsigned vectors_per_row = size >= 16 ? size / 16 : 1;
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

/* Row y of a 64x64 leaf: four vectors. */
AVX512_INLINE void tile_leaf_row64(const tile_codes *c, float *tile, unsigned y, unsigned mode)
{
#pragma GCC unroll 4
    for (unsigned v = 4 * y; v < 4 * y + 4; v++)
        tile_put(tile, SGFP4_MB, v, leaf_vector(c, v, mode));
}

static AVX512 void tile_leaf_selected(const sgfp4_leaf_list *list, unsigned i, uint64_t rows,
                                      float *tile)
{
    if (list->mode[i] == SGFP4_MODE_FP4)
        leaf_selected_mode(list, i, rows, tile, SGFP4_MODE_FP4);
    else
        leaf_selected_mode(list, i, rows, tile, SGFP4_MODE_T158);
}

/* ---- writing tile rows out ---------------------------------------------------------- */

/* bf16 of 16 floats, round to nearest even by integer arithmetic (no NaN can occur). */
AVX512_INLINE __m256i bf16_x16(__m512 v)
{
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb);
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
}

/* 16 floats as 16 halves of `dtype` (F16 or BF16), round to nearest even. */
AVX512_INLINE __m256i halves_x16(__m512 v, sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F16)
        return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return bf16_x16(v);
}

/* Output vector i of a tile row (64 bytes: 16 f32 values, or 32 halves). */
AVX512_INLINE __m512i segment_vector(const float *src, unsigned i, sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F32)
        return _mm512_castps_si512(_mm512_load_ps(src + 16 * i));
    return _mm512_inserti64x4(_mm512_castsi256_si512(halves_x16(_mm512_load_ps(src + 32 * i), dtype)),
                              halves_x16(_mm512_load_ps(src + 32 * i + 16), dtype), 1);
}

/* The output bytes of one tile row segment: `count` 64-byte vectors (4 for f32, 2 for the
 * 16-bit types; the last may hold fewer valid bytes). */
typedef struct segment {
    __m512i v[4];
    unsigned count;
} segment;

AVX512_INLINE segment segment_of(const float *src, sgfp4_dtype dtype)
{
    segment g;
    g.count = dtype == SGFP4_DTYPE_F32 ? 4 : 2;
    for (unsigned i = 0; i < g.count; i++)
        g.v[i] = segment_vector(src, i, dtype);
    return g;
}

/* The 64 bytes that start `shift` bytes (even, 0..62) before `cur` in the byte sequence
 * prev, cur: the last `shift` bytes of prev, then the first 64 - shift of cur. */
AVX512_INLINE __m512i join_64(__m512i prev, __m512i cur, unsigned shift)
{
    if ((shift & 3u) == 0) {
        const __m512i at = _mm512_add_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32((int)(16 - shift / 4)));
        return _mm512_permutex2var_epi32(prev, at, cur);
    }
    const __m512i at = _mm512_add_epi16(
        _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                         12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi16((short)(32 - shift / 2)));
    return _mm512_permutex2var_epi16(prev, at, cur);
}

/* Bytes [lo, hi) of a 64-byte line, 0 <= lo < hi <= 64, with a plain masked store. */
AVX512_INLINE void put_part(uint8_t *line, __m512i v, unsigned lo, unsigned hi)
{
    const __mmask64 mask = (hi == 64 ? ~(__mmask64)0 : ((__mmask64)1 << hi) - 1) &
                           ~(((__mmask64)1 << lo) - 1);
    _mm512_mask_storeu_epi8(line, mask, v);
}

/* Streams `bytes` bytes of g (the row's last bytes, or a whole segment that starts the row)
 * to p, which lies `shift` (even, 0..62) bytes past a line start: whole aligned lines as
 * streaming stores, the row's first line and, at the row's end (`last`), its last line as
 * masked plain stores. An unfinished line that does not end the row waits in *carry. */
AVX512_INLINE void stream_shifted(uint8_t *p, const segment *g, unsigned bytes, unsigned shift,
                                  bool first, bool last, __m512i *carry)
{
    uint8_t *line = p - shift;
    __m512i prev = first ? _mm512_setzero_si512() : *carry; /* (the row's first line skips it) */
    const unsigned total = shift + bytes; /* bytes from `line` to the end of this piece */
    for (unsigned j = 0; 64 * j < total; j++, line += 64) {
        const unsigned lo = first && j == 0 ? shift : 0;
        const unsigned hi = total - 64 * j < 64 ? total - 64 * j : 64;
        if (hi < 64 && !last)
            break; /* the unfinished line: the next segment completes it from prev */
        const __m512i cur = j < g->count ? g->v[j] : _mm512_setzero_si512();
        const __m512i w = join_64(prev, cur, shift);
        prev = cur;
        if (hi == 64 && lo == 0)
            _mm512_stream_si512((void *)line, w);
        else
            put_part(line, w, lo, hi);
    }
    *carry = prev;
}

/* A whole segment inside a row (neither its first nor its last) at p, `shift` (even,
 * nonzero) bytes past a line start: `count` whole lines, the first completing the carry.
 * The vectors come straight from the tile, so nothing but the lines and the new carry is
 * stored. */
AVX512_INLINE void stream_shifted_inner(uint8_t *p, const float *src, sgfp4_dtype dtype,
                                        unsigned count, unsigned shift, __m512i *carry)
{
    uint8_t *line = p - shift;
    __m512i prev = _mm512_load_si512(carry);
#pragma GCC unroll 4
    for (unsigned i = 0; i < count; i++) {
        const __m512i cur = segment_vector(src, i, dtype);
        _mm512_stream_si512((void *)(line + 64 * i), join_64(prev, cur, shift));
        prev = cur;
    }
    _mm512_store_si512(carry, prev);
}

/* The row writer's primitives for tile_driver.h: rows at even addresses stream. */
#define TILE_CAN_STREAM 1
#define TILE_STREAM_ALIGN 2u

/* An aligned whole tile row: whole lines straight from the tile. */
AVX512_INLINE void tile_stream_aligned(uint8_t *p, const float *src, sgfp4_dtype dtype)
{
    const unsigned count = dtype == SGFP4_DTYPE_F32 ? 4 : 2;
#pragma GCC unroll 4
    for (unsigned i = 0; i < count; i++)
        _mm512_stream_si512((void *)(p + 64 * i), segment_vector(src, i, dtype));
}

AVX512_INLINE void tile_stream_inner(uint8_t *p, const float *src, sgfp4_dtype dtype,
                                     unsigned shift, uint8_t carry[64])
{
    stream_shifted_inner(p, src, dtype, dtype == SGFP4_DTYPE_F32 ? 4 : 2, shift,
                         (__m512i *)carry);
}

AVX512_INLINE void tile_stream_edge(uint8_t *p, const float *src, sgfp4_dtype dtype,
                                    unsigned bytes, unsigned shift, bool first, bool last,
                                    uint8_t carry[64])
{
    const segment g = segment_of(src, dtype);
    stream_shifted(p, &g, bytes, shift, first, last, (__m512i *)carry);
}

/* The first `width` values (1..64) of a tile row with plain (masked) stores. */
AVX512_INLINE void tile_store_plain(uint8_t *p, const float *src, unsigned width,
                                    sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F32) {
        unsigned x = 0;
        for (; x + 16 <= width; x += 16)
            _mm512_storeu_ps(p + 4 * x, _mm512_load_ps(src + x));
        if (x < width)
            _mm512_mask_storeu_ps(p + 4 * x, (__mmask16)((1u << (width - x)) - 1),
                                  _mm512_load_ps(src + x));
        return;
    }
    for (unsigned x = 0; x < width; x += 16) {
        const unsigned n = width - x < 16 ? width - x : 16;
        _mm256_mask_storeu_epi16(p + 2 * x, (__mmask16)((1u << n) - 1),
                                 halves_x16(_mm512_load_ps(src + x), dtype));
    }
}

TILE_FN unsigned tile_list_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    return sgfp4_avx512_block_leaves(t, b, list);
}

#include "decode/tile_driver.h"

static void avx512_finish(void) { _mm_sfence(); }

const sgfp4_decode_kernels sgfp4_kernels_avx512 = {"avx512", tile_decode_rows, avx512_finish,
                                                   TILE_SCRATCH_BYTES};

#endif
