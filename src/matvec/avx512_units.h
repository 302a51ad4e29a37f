/* The AVX-512 matvec kernels, compiled twice: matvec_avx512_vnni.c (MV_VNNI 1: vpdpbusd)
 * and matvec_avx512.c (MV_VNNI 0: vpmaddubsw + vpmaddwd, for AVX-512 CPUs without VNNI).
 * The includer defines MV_VNNI, MV_TARGET (the target attribute string), MV_SET_NAME and
 * MV_SET (the kernel table's identifier), then includes the set's five parts in order:
 *   avx512_units.h   this file: the types, the constant tables, a unit's codes and cells
 *   avx512_tile.h    the plan's leaves into units through the tile, per-vector data, the
 *                    cell trees
 *   avx512_group.h   a row group's units summed in registers: each form's cells, the tree
 *   avx512_paths.h   the blocks summed in registers: whole FP4 blocks, the repacked layout
 *   avx512_block.h   the block, the entry points, the quantizer, the kernel table
 * No include guards: one instance per file.
 *
 * Per block, on the strip loop of strip.h:
 *
 * 1. The leaves, grouped by kind, from the plan's leaf table.
 * 2. Units: every leaf of 8x8 or more covers whole units of 8 rows x 8 columns (two cells);
 *    a unit is one zmm of 16 cells, lane 2i + j = cell j of row i. Each leaf kind gathers
 *    a unit's codes with one word permute from the leaf's payload (FP4: each lane holds its
 *    cell's two payload bytes twice; T158: its cell's byte), whatever the leaf's size. The
 *    4x4 leaves, a quarter unit each, use the same code in four lanes.
 * 3. Per vector, each unit's 16 cell values c go to a tile [pair of cells][row][2] of 4 KB:
 *    - Class A: u = code + 8 (FP4: nibbles spread as [lo b0, lo b1, hi b0, hi b1], i.e.
 *      columns 0, 2, 1, 3, with q permuted to match; T158: u = code + 1 from a shift tower
 *      and a vpshufb table), iq = dot(u, q) - 8 is (- is for T158: the accumulator starts
 *      there), c = fma(B, is, S * iq): S * iq and B * is are exact (D8), so the fused add
 *      rounds the exact sum once, as D8's fl32(fl32(S iq) + fl32(B is)).
 *    - Class B: the leaf's 16 weights fl32(S q + B) in one register (one fma), then the
 *      weights of column m of every cell by vpermps of the codes shifted by 4m (FP4) or 2m
 *      (T158), p_m = w * x per column (x pre-arranged per block: lane 2i + j reads column
 *      8p + 4j + m), c = (p0 + p1) + (p2 + p3); padding products forced to +0 in the last
 *      block only.
 * 4. The cell tree as vertical adds (cell k + k + 8 is pair p + p + 4 at the same lanes,
 *    and so on), then the two cells of a pair with a permute that also gathers 16 rows;
 *    Class A times d_b.
 * SPDX-License-Identifier: MIT */
#include <immintrin.h>

#include "listing/leaf_list.h"
#include "matvec/repack.h"
#include "matvec/strip.h"

#define MV_FN static __attribute__((target(MV_TARGET)))
#define MV_INLINE static inline __attribute__((target(MV_TARGET), always_inline))
/* loops over a chunk's vectors, kept in registers */
#define MV_UNROLL _Pragma("GCC unroll 8")
/* Vectors per pass over a strip on the repacked layout (MV_WIDE_CHUNK of strip_driver.h):
 * each unit's code line and S and B (Class B: its weights) are shared by up to 8 vectors; the
 * other paths take SGFP4_MATVEC_CHUNK (their per-vector tiles). */
#define MV_WIDE_CHUNK 8u

/* Per-vector data of one block. */
typedef struct __attribute__((aligned(64))) mv_prep_a {
    int8_t qperm[64]; /* q with each cell's columns as 0, 2, 1, 3 (the FP4 byte order) */
    int8_t q[64];     /* q as it is (the T158 byte order) */
    int32_t m8is[16]; /* -8 is, -is per cell: the accumulators' starts */
    int32_t mis[16];
    float isf[16]; /* is as float */
    float d;
} mv_prep_a;

typedef struct __attribute__((aligned(64))) mv_prep_b {
    float xm[8][4][2]; /* [pair p][column m][cell j]: x of column 8p + 4j + m, as D8 reads it */
} mv_prep_b;

typedef struct mv_work {
    union { /* the container paths' tile, or the repacked Class B path's activations */
        float c2[SGFP4_MATVEC_CHUNK][8][SGFP4_MB][2];
        __m512 xb[MV_WIDE_CHUNK][8][4]; /* xm[p][m] broadcast to a unit's 16 lanes */
    } __attribute__((aligned(64)));
    union {
        mv_prep_a a[MV_WIDE_CHUNK];
        mv_prep_b b[MV_WIDE_CHUNK];
    } prep __attribute__((aligned(64)));
    uint32_t valid[8][4][2] __attribute__((aligned(64))); /* Class B: ~0 for a real column */
    float scale[SGFP4_MAX_LEAVES] __attribute__((aligned(64))); /* per leaf, storage order */
    float bias[SGFP4_MAX_LEAVES] __attribute__((aligned(64)));
} mv_work;

/* ---- constants -------------------------------------------------------------------------- */

/* The word permutes that gather a unit (16 dword lanes, lane L = 2i + j: row i, cell j of
 * the unit); FP4 puts the cell's word in both halves of the lane. */
#define W2(a) (short)(a), (short)(a)
#define ROW_PAIR(f, i) W2(f(i, 0)), W2(f(i, 1))
#define UNIT_WORDS(f)                                                                          \
    ROW_PAIR(f, 0), ROW_PAIR(f, 1), ROW_PAIR(f, 2), ROW_PAIR(f, 3), ROW_PAIR(f, 4),           \
        ROW_PAIR(f, 5), ROW_PAIR(f, 6), ROW_PAIR(f, 7)
/* FP4 8x8 leaf (32 bytes): row i's cell j is word 2i + j */
#define F8(i, j) (2 * (i) + (j))
/* FP4 16x16 leaf: rows of 8 bytes, a unit's rows in one 64-byte line: word 4i + 2pi + j */
#define F16_0(i, j) (4 * (i) + (j))
#define F16_1(i, j) (4 * (i) + 2 + (j))
/* FP4 32x32 leaf: rows of 16 bytes, a unit in 128 bytes: word 8i + 2pi + j */
#define F32_0(i, j) (8 * (i) + (j))
#define F32_1(i, j) (8 * (i) + 2 + (j))
#define F32_2(i, j) (8 * (i) + 4 + (j))
#define F32_3(i, j) (8 * (i) + 6 + (j))
/* FP4 64x64 leaf, second step: rows 0..3 from the first source, 4..7 from the second, each
 * holding [row][pair m][cell] words */
#define F64_0(i, j) ((i) < 4 ? 8 * (i) + (j) : 32 + 8 * ((i) - 4) + (j))
#define F64_1(i, j) ((i) < 4 ? 8 * (i) + 2 + (j) : 32 + 8 * ((i) - 4) + 2 + (j))
#define F64_2(i, j) ((i) < 4 ? 8 * (i) + 4 + (j) : 32 + 8 * ((i) - 4) + 4 + (j))
#define F64_3(i, j) ((i) < 4 ? 8 * (i) + 6 + (j) : 32 + 8 * ((i) - 4) + 6 + (j))

static const int16_t unit_words_f8[32] __attribute__((aligned(64))) = {UNIT_WORDS(F8)};
static const int16_t unit_words_f16[2][32] __attribute__((aligned(64))) = {
    {UNIT_WORDS(F16_0)}, {UNIT_WORDS(F16_1)}};
static const int16_t unit_words_f32[4][32] __attribute__((aligned(64))) = {
    {UNIT_WORDS(F32_0)}, {UNIT_WORDS(F32_1)}, {UNIT_WORDS(F32_2)}, {UNIT_WORDS(F32_3)}};
static const int16_t unit_words_f64[4][32] __attribute__((aligned(64))) = {
    {UNIT_WORDS(F64_0)}, {UNIT_WORDS(F64_1)}, {UNIT_WORDS(F64_2)}, {UNIT_WORDS(F64_3)}};
/* FP4 64x64 first step: from rows 0..3 (two zmm of two 32-byte rows each), pairs 4k..4k+3,
 * as [row r][pair m][cell j] = word 16r + 2(4k + m) + j */
#define F64_PICK(k, r, m) (short)(16 * (r) + 2 * (4 * (k) + (m))), (short)(16 * (r) + 2 * (4 * (k) + (m)) + 1)
#define F64_ROW(k, r) F64_PICK(k, r, 0), F64_PICK(k, r, 1), F64_PICK(k, r, 2), F64_PICK(k, r, 3)
static const int16_t rows_words_f64[2][32] __attribute__((aligned(64))) = {
    {F64_ROW(0, 0), F64_ROW(0, 1), F64_ROW(0, 2), F64_ROW(0, 3)},
    {F64_ROW(1, 0), F64_ROW(1, 1), F64_ROW(1, 2), F64_ROW(1, 3)}};
#undef F64_PICK
#undef F64_ROW

/* T158: a unit's 8 row words (the bytes of its two cells) into the low 16 bytes; the other
 * words are don't-care (0). 16x16 leaf (rows of 4 bytes, the whole 64-byte leaf): word
 * 2(8 gi + i) + pi; 32x32 (rows of 8 bytes, a unit's 64-byte line): 4i + pi; 64x64 (rows of
 * 16 bytes, 128 bytes): 8i + pi. */
#define T8W(f) (short)f(0), (short)f(1), (short)f(2), (short)f(3), (short)f(4), (short)f(5),   \
               (short)f(6), (short)f(7), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
               0, 0, 0, 0, 0, 0
#define T16_00(i) (2 * (i))
#define T16_01(i) (2 * (i) + 1)
#define T16_10(i) (2 * (8 + (i)))
#define T16_11(i) (2 * (8 + (i)) + 1)
#define T32_0(i) (4 * (i))
#define T32_1(i) (4 * (i) + 1)
#define T32_2(i) (4 * (i) + 2)
#define T32_3(i) (4 * (i) + 3)
#define T64_0(i) (8 * (i))
#define T64_1(i) (8 * (i) + 1)
#define T64_2(i) (8 * (i) + 2)
#define T64_3(i) (8 * (i) + 3)
#define T64_4(i) (8 * (i) + 4)
#define T64_5(i) (8 * (i) + 5)
#define T64_6(i) (8 * (i) + 6)
#define T64_7(i) (8 * (i) + 7)
static const int16_t unit_words_t16[2][2][32] __attribute__((aligned(64))) = {
    {{T8W(T16_00)}, {T8W(T16_01)}}, {{T8W(T16_10)}, {T8W(T16_11)}}};
static const int16_t unit_words_t32[4][32] __attribute__((aligned(64))) = {
    {T8W(T32_0)}, {T8W(T32_1)}, {T8W(T32_2)}, {T8W(T32_3)}};
static const int16_t unit_words_t64[8][32] __attribute__((aligned(64))) = {
    {T8W(T64_0)}, {T8W(T64_1)}, {T8W(T64_2)}, {T8W(T64_3)},
    {T8W(T64_4)}, {T8W(T64_5)}, {T8W(T64_6)}, {T8W(T64_7)}};

/* The value of each 4-bit index, per mode: FP4 nibble n is n or n - 16; T158 reads the low
 * 2 bits (00 -> 0, 01 -> +1, 10 -> -1, 11 -> 0, D4), so its table repeats every 4. */
static const float code_value[2][16] __attribute__((aligned(64))) = {
    {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1},
    {0, 1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0}};

/* ---- Class A: codes to u, the dot product ----------------------------------------------- */

/* FP4: lanes [w, w] (w the cell's two payload bytes) -> bytes [lo b0, lo b1, hi b0, hi b1]
 * of nibble ^ 8 = code + 8. */
MV_INLINE __m512i fp4_u(__m512i cells)
{
    const __m512i halves = _mm512_srlv_epi16(cells, _mm512_set1_epi32(4 << 16));
    /* (a & b) ^ c: keep the low nibble of each byte, flip its top bit */
    return _mm512_ternarylogic_epi32(halves, _mm512_set1_epi8(0x0F), _mm512_set1_epi8(0x08),
                                     0x6A);
}

/* T158: lanes = the cell's byte B (zero-extended) -> bytes code + 1 of its 4 symbols.
 * d | d << 6 puts B >> 2 in byte 1; that | that << 12 puts B >> 4 and B >> 6 in bytes 2
 * and 3 (the low 2 bits of every byte are the symbol; the table ignores bits 2..3). */
MV_INLINE __m512i t158_u(__m512i cells)
{
    const __m512i e = _mm512_or_si512(cells, _mm512_slli_epi32(cells, 6));
    /* (a | b) & c */
    const __m512i f = _mm512_ternarylogic_epi32(e, _mm512_slli_epi32(e, 12),
                                                _mm512_set1_epi8(0x0F), 0xA8);
    const __m512i table = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 2, 0, 1, 1, 2, 0, 1, 1, 2, 0,
                                                               1, 1, 2, 0, 1));
    return _mm512_shuffle_epi8(table, f);
}

/* acc + the sum of the 4 products u * q in each lane (exact: at most 4 * 15 * 127). */
MV_INLINE __m512i dot_u8_s8(__m512i acc, __m512i u, __m512i q)
{
#if MV_VNNI
    return _mm512_dpbusd_epi32(acc, u, q);
#else
    const __m512i pairs = _mm512_maddubs_epi16(u, q); /* at most 2 * 15 * 127: no saturation */
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
#endif
}

MV_INLINE __m512i bcast64i(const void *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return _mm512_set1_epi64(v);
}

MV_INLINE __m512 bcast64f(const void *p)
{
    double v;
    memcpy(&v, p, 8);
    return _mm512_castpd_ps(_mm512_set1_pd(v));
}

/* The unit of cells (pair p, rows row..row + 7) of every vector: Class A. */
MV_INLINE void unit_a(mv_work *w, unsigned nv, __m512i cells, unsigned mode, unsigned p,
                      unsigned row, float scale, float bias)
{
    const __m512i u = mode ? t158_u(cells) : fp4_u(cells);
    for (unsigned v = 0; v < nv; v++) {
        const mv_prep_a *a = &w->prep.a[v];
        const __m512i acc = dot_u8_s8(bcast64i(mode ? a->mis + 2 * p : a->m8is + 2 * p), u,
                                      bcast64i(mode ? a->q + 8 * p : a->qperm + 8 * p));
        /* B * is exact, then S * iq + B * is rounded once */
        const __m512 shifted = _mm512_mul_ps(bcast64f(a->isf + 2 * p), _mm512_set1_ps(bias));
        _mm512_store_ps(w->c2[v][p][row],
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(scale), shifted));
    }
}

/* ---- Class B ---------------------------------------------------------------------------- */

MV_INLINE __m512 leaf_table(unsigned mode, float scale, float bias)
{
    return _mm512_fmadd_ps(_mm512_set1_ps(scale), _mm512_load_ps(code_value[mode]),
                           _mm512_set1_ps(bias)); /* exact product: fl32(S q + B) */
}

MV_INLINE void unit_b(mv_work *w, unsigned nv, __m512i cells, unsigned mode, unsigned p,
                      unsigned row, __m512 table, bool padded)
{
    const unsigned shift = mode ? 2 : 4;
    const __m512 w0 = _mm512_permutexvar_ps(cells, table);
    const __m512 w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, shift), table);
    const __m512 w2 = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 2 * shift), table);
    const __m512 w3 = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 3 * shift), table);
    for (unsigned v = 0; v < nv; v++) {
        const float(*xm)[2] = w->prep.b[v].xm[p];
        __m512 p0 = _mm512_mul_ps(w0, bcast64f(xm[0]));
        __m512 p1 = _mm512_mul_ps(w1, bcast64f(xm[1]));
        __m512 p2 = _mm512_mul_ps(w2, bcast64f(xm[2]));
        __m512 p3 = _mm512_mul_ps(w3, bcast64f(xm[3]));
        if (padded) { /* D8: +0 in padding columns, not w * 0 */
            p0 = _mm512_and_ps(p0, bcast64f(w->valid[p][0]));
            p1 = _mm512_and_ps(p1, bcast64f(w->valid[p][1]));
            p2 = _mm512_and_ps(p2, bcast64f(w->valid[p][2]));
            p3 = _mm512_and_ps(p3, bcast64f(w->valid[p][3]));
        }
        const __m512 c = _mm512_add_ps(_mm512_add_ps(p0, p1), _mm512_add_ps(p2, p3));
        _mm512_store_ps(w->c2[v][p][row], c);
    }
}

/* ---- a unit's cells into the tile ------------------------------------------------------- */

MV_INLINE void unit(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, __m512i cells,
                    unsigned mode, unsigned p, unsigned row, float scale, float bias,
                    __m512 table, bool padded)
{
    if (s->class_a)
        unit_a(w, nv, cells, mode, p, row, scale, bias);
    else
        unit_b(w, nv, cells, mode, p, row, table, padded);
}

/* T158 cells from a unit's 16 bytes (row i's two cell bytes at 2i, 2i + 1). */
MV_INLINE __m512i t158_cells(__m128i bytes)
{
    return _mm512_cvtepu8_epi32(bytes);
}

