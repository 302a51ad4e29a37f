/* The AVX-512 matvec kernels, compiled twice: matvec_avx512_vnni.c (MV_VNNI 1: vpdpbusd)
 * and matvec_avx512.c (MV_VNNI 0: vpmaddubsw + vpmaddwd, for AVX-512 CPUs without VNNI).
 * The includer defines MV_VNNI, MV_TARGET (the target attribute string), MV_SET_NAME and
 * MV_SET (the kernel table's identifier). No include guard: one instance per file.
 *
 * Per block, on the strip loop of strip.h:
 *
 * 1. The leaves, grouped by kind, from the decode layer's AVX-512 listing.
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
#define MV_UNROLL _Pragma("GCC unroll 4")

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
        __m512 xb[SGFP4_MATVEC_CHUNK][8][4]; /* xm[p][m] broadcast to a unit's 16 lanes */
    } __attribute__((aligned(64)));
    union {
        mv_prep_a a[SGFP4_MATVEC_CHUNK];
        mv_prep_b b[SGFP4_MATVEC_CHUNK];
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

/* ---- leaves to units -------------------------------------------------------------------- */

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

/* Every unit of rows [lo, hi) of a leaf of size class cls (1..4: 8x8 .. 64x64). */
MV_INLINE void leaf_units(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned cls,
                          unsigned mode,
                          const uint8_t *payload, unsigned y, unsigned x, float scale,
                          float bias, unsigned lo, unsigned hi, bool padded)
{
    const unsigned units = 1u << (cls - 1); /* per side */
    const __m512 table = s->class_a ? _mm512_setzero_ps() : leaf_table(mode, scale, bias);
    for (unsigned gi = 0; gi < units; gi++) {
        const unsigned row = y + 8 * gi;
        if (row < lo || row >= hi)
            continue;
        const unsigned p0 = x / 8;
        if (mode == SGFP4_MODE_FP4) {
            const unsigned row_bytes = 2u << cls; /* size / 2 */
            const uint8_t *lines = payload + 8 * gi * row_bytes;
            if (cls == 1) {
                const __m512i z = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lines));
                unit(w, s, nv, _mm512_permutexvar_epi16(_mm512_load_si512(unit_words_f8), z), mode, p0,
                     row, scale, bias, table, padded);
            } else if (cls == 2) {
                const __m512i z = _mm512_loadu_si512(lines);
                for (unsigned pi = 0; pi < 2; pi++)
                    unit(w, s, nv, _mm512_permutexvar_epi16(_mm512_load_si512(unit_words_f16[pi]), z),
                         mode, p0 + pi, row, scale, bias, table, padded);
            } else if (cls == 3) {
                const __m512i z0 = _mm512_loadu_si512(lines), z1 = _mm512_loadu_si512(lines + 64);
                for (unsigned pi = 0; pi < 4; pi++)
                    unit(w, s, nv,
                         _mm512_permutex2var_epi16(z0, _mm512_load_si512(unit_words_f32[pi]), z1),
                         mode, p0 + pi, row, scale, bias, table, padded);
            } else {
                const __m512i z0 = _mm512_loadu_si512(lines), z1 = _mm512_loadu_si512(lines + 64);
                const __m512i z2 = _mm512_loadu_si512(lines + 128);
                const __m512i z3 = _mm512_loadu_si512(lines + 192);
                for (unsigned k = 0; k < 2; k++) {
                    const __m512i pick = _mm512_load_si512(rows_words_f64[k]);
                    const __m512i top = _mm512_permutex2var_epi16(z0, pick, z1);
                    const __m512i bottom = _mm512_permutex2var_epi16(z2, pick, z3);
                    for (unsigned m = 0; m < 4; m++)
                        unit(w, s, nv,
                             _mm512_permutex2var_epi16(top, _mm512_load_si512(unit_words_f64[m]),
                                                       bottom),
                             mode, 4 * k + m, row, scale, bias, table, padded);
                }
            }
        } else {
            const unsigned row_bytes = 1u << cls; /* size / 4 */
            if (cls == 1) {
                unit(w, s, nv, t158_cells(_mm_loadu_si128((const __m128i *)payload)), mode, p0, row,
                     scale, bias, table, padded);
            } else if (cls == 2) {
                const __m512i z = _mm512_loadu_si512(payload);
                for (unsigned pi = 0; pi < 2; pi++)
                    unit(w, s, nv,
                         t158_cells(_mm512_castsi512_si128(_mm512_permutexvar_epi16(
                             _mm512_load_si512(unit_words_t16[gi][pi]), z))),
                         mode, p0 + pi, row, scale, bias, table, padded);
            } else if (cls == 3) {
                const __m512i z = _mm512_loadu_si512(payload + 8 * gi * row_bytes);
                for (unsigned pi = 0; pi < 4; pi++)
                    unit(w, s, nv,
                         t158_cells(_mm512_castsi512_si128(
                             _mm512_permutexvar_epi16(_mm512_load_si512(unit_words_t32[pi]), z))),
                         mode, p0 + pi, row, scale, bias, table, padded);
            } else {
                const uint8_t *lines = payload + 8 * gi * row_bytes;
                const __m512i z0 = _mm512_loadu_si512(lines), z1 = _mm512_loadu_si512(lines + 64);
                for (unsigned pi = 0; pi < 8; pi++)
                    unit(w, s, nv,
                         t158_cells(_mm512_castsi512_si128(_mm512_permutex2var_epi16(
                             z0, _mm512_load_si512(unit_words_t64[pi]), z1))),
                         mode, pi, row, scale, bias, table, padded);
            }
        }
    }
}

/* A 4x4 leaf: cell x / 4 of rows y..y + 3, in lanes 0..3, stored into lanes j, j + 2, ...
 * of its unit's rows. */
MV_INLINE void leaf_4x4(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned mode,
                        const uint8_t *payload, unsigned y, unsigned x, float scale, float bias,
                        bool padded)
{
    const unsigned k = x / 4, p = x / 8, j = k & 1u;
    const __mmask16 spread = (__mmask16)(0x55u << j);
    __m512i cells;
    if (mode == SGFP4_MODE_FP4) {
        /* rows of 2 bytes: word i, in both halves of lane i */
        const __m512i z = _mm512_maskz_loadu_epi16(0xF, payload);
        cells = _mm512_permutexvar_epi16(
            _mm512_setr_epi32(0, 0x10001, 0x20002, 0x30003, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), z);
    } else {
        cells = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(0xF, payload));
    }
    if (s->class_a) {
        const __m512i u = mode ? t158_u(cells) : fp4_u(cells);
        for (unsigned v = 0; v < nv; v++) {
            const mv_prep_a *a = &w->prep.a[v];
            int32_t q4;
            memcpy(&q4, (mode ? a->q : a->qperm) + 4 * k, 4);
            const __m512i acc = dot_u8_s8(_mm512_set1_epi32(mode ? a->mis[k] : a->m8is[k]), u,
                                          _mm512_set1_epi32(q4));
            const __m512 scaled = _mm512_mul_ps(_mm512_set1_ps(scale), _mm512_cvtepi32_ps(acc));
            const __m512 c = _mm512_fmadd_ps(_mm512_set1_ps(bias), _mm512_set1_ps(a->isf[k]), scaled);
            _mm512_mask_storeu_ps(w->c2[v][p][y], spread, _mm512_maskz_expand_ps(spread, c));
        }
    } else {
        const __m512 table = leaf_table(mode, scale, bias);
        const unsigned shift = mode ? 2 : 4;
        const __m512 w0 = _mm512_permutexvar_ps(cells, table);
        const __m512 w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, shift), table);
        const __m512 w2 = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 2 * shift), table);
        const __m512 w3 = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 3 * shift), table);
        for (unsigned v = 0; v < nv; v++) {
            const float(*xm)[2] = w->prep.b[v].xm[p];
            __m512 p0 = _mm512_mul_ps(w0, _mm512_set1_ps(xm[0][j]));
            __m512 p1 = _mm512_mul_ps(w1, _mm512_set1_ps(xm[1][j]));
            __m512 p2 = _mm512_mul_ps(w2, _mm512_set1_ps(xm[2][j]));
            __m512 p3 = _mm512_mul_ps(w3, _mm512_set1_ps(xm[3][j]));
            if (padded) {
                p0 = _mm512_and_ps(p0, _mm512_castsi512_ps(_mm512_set1_epi32((int)w->valid[p][0][j])));
                p1 = _mm512_and_ps(p1, _mm512_castsi512_ps(_mm512_set1_epi32((int)w->valid[p][1][j])));
                p2 = _mm512_and_ps(p2, _mm512_castsi512_ps(_mm512_set1_epi32((int)w->valid[p][2][j])));
                p3 = _mm512_and_ps(p3, _mm512_castsi512_ps(_mm512_set1_epi32((int)w->valid[p][3][j])));
            }
            const __m512 c = _mm512_add_ps(_mm512_add_ps(p0, p1), _mm512_add_ps(p2, p3));
            _mm512_mask_storeu_ps(w->c2[v][p][y], spread, _mm512_maskz_expand_ps(spread, c));
        }
    }
}

/* The leaves of one kind (2 * class + mode) from the plan's table. */
MV_INLINE void kind_leaves(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned kind,
                           const uint8_t *rec, const uint32_t *entries, unsigned count,
                           unsigned lo, unsigned hi, bool padded)
{
    const unsigned cls = kind >> 1, mode = kind & 1u;
    const unsigned size = 4u << cls;
    for (unsigned n = 0; n < count; n++) {
        const uint32_t e = entries[n];
        const unsigned y = sgfp4_matvec_entry_y(e), x = sgfp4_matvec_entry_x(e);
        if (y + size <= lo || y >= hi)
            continue;
        const uint8_t *payload = rec + sgfp4_matvec_entry_payload(e);
        const unsigned i = sgfp4_matvec_entry_index(e);
        if (cls == 0)
            leaf_4x4(w, s, nv, mode, payload, y, x, w->scale[i], w->bias[i], padded);
        else
            leaf_units(w, s, nv, cls, mode, payload, y, x, w->scale[i], w->bias[i], lo, hi,
                       padded);
    }
}

/* S and B of a record's n leaf headers (at h), 16 at a time (exact: every fp16 value is a
 * binary32, and the products run in the default floating-point environment). */
MV_INLINE void convert_headers(mv_work *w, const uint8_t *h, unsigned n)
{
    for (unsigned i = 0; i < n; i += 16) {
        const __mmask16 live = (__mmask16)(n - i >= 16 ? 0xFFFFu : (1u << (n - i)) - 1u);
        const __m512i v = _mm512_maskz_loadu_epi32(live, h + 4 * i);
        _mm512_store_ps(w->scale + i, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16))));
        _mm512_store_ps(w->bias + i, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                         _mm512_and_si512(v, _mm512_set1_epi32(0xFFF0)))));
    }
}

/* ---- per-vector data of a block --------------------------------------------------------- */

MV_INLINE void prep_a(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, uint64_t bx)
{
    /* each cell's bytes 0, 1, 2, 3 -> 0, 2, 1, 3 */
    const __m512i order = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15));
    for (unsigned v = 0; v < nv; v++) {
        mv_prep_a *a = &w->prep.a[v];
        const __m512i q = _mm512_loadu_si512(sgfp4_q8_q(s->x, s->n0 + v) + bx * SGFP4_MB);
        _mm512_store_si512(a->q, q);
        _mm512_store_si512(a->qperm, _mm512_shuffle_epi8(q, order));
        const __m512i is = dot_u8_s8(_mm512_setzero_si512(), _mm512_set1_epi8(1), q);
        const __m512i mis = _mm512_sub_epi32(_mm512_setzero_si512(), is);
        _mm512_store_si512(a->mis, mis);
        _mm512_store_si512(a->m8is, _mm512_slli_epi32(mis, 3));
        _mm512_store_ps(a->isf, _mm512_cvtepi32_ps(is));
        a->d = sgfp4_q8_d(s->x, s->n0 + v, s->t->tiles_x, bx);
    }
}

/* Class B: each vector's 64 activations as D8 reads them (+0 below 2^-60, f16 converted
 * exactly), arranged per pair and column; and, for a block with padding columns, the
 * masks of the real ones. Returns whether the block has padding. */
MV_INLINE bool prep_b(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, uint64_t bx,
                      bool broadcast)
{
    const uint64_t c0 = bx * SGFP4_MB;
    const unsigned width = (unsigned)(s->t->cols - c0 < SGFP4_MB ? s->t->cols - c0 : SGFP4_MB);
    /* out lane 8 pp + 2m + j of a 16-column group reads its column 8 pp + 4j + m */
    const __m512i arrange = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    for (unsigned v = 0; v < nv; v++) {
        const uint8_t *in = s->x->data + (s->n0 + v) * s->x->vector_bytes;
        for (unsigned g = 0; g < 4; g++) {
            const unsigned first = 16 * g;
            const unsigned live = width > first ? (width - first < 16 ? width - first : 16) : 0;
            const __mmask16 lanes = (__mmask16)((1u << live) - 1u);
            __m512 x;
            if (s->x->dtype == SGFP4_DTYPE_F16)
                x = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, in + 2 * (c0 + first)));
            else
                x = _mm512_maskz_loadu_ps(lanes, in + 4 * (c0 + first));
            const __m512i magnitude =
                _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
            const __mmask16 kept =
                _mm512_cmpge_epu32_mask(magnitude, _mm512_set1_epi32((127 - 60) << 23));
            x = _mm512_maskz_mov_ps(kept, x);
            _mm512_store_ps(&w->prep.b[v].xm[2 * g][0][0], _mm512_permutexvar_ps(arrange, x));
        }
        if (broadcast)
            for (unsigned p = 0; p < 8; p++)
                for (unsigned m = 0; m < 4; m++)
                    w->xb[v][p][m] = bcast64f(w->prep.b[v].xm[p][m]);
    }
    if (width == SGFP4_MB)
        return false;
    for (unsigned g = 0; g < 4; g++) {
        const __m512i column = _mm512_permutexvar_epi32(
            arrange, _mm512_add_epi32(_mm512_set1_epi32((int)(16 * g)),
                                      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                        13, 14, 15)));
        const __mmask16 real = _mm512_cmplt_epu32_mask(column, _mm512_set1_epi32((int)width));
        _mm512_store_si512(&w->valid[2 * g][0][0], _mm512_movm_epi32(real));
    }
    return true;
}

/* ---- the cell tree ---------------------------------------------------------------------- */

/* t[v][r] for the rows of groups [g0, g1): the tree of the 16 cells of each row. */
MV_INLINE void cell_trees(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv,
                          float (*t)[SGFP4_MB])
{
    /* the two cells of each row of two groups: even lanes of (a, b), odd lanes of (a, b) */
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (unsigned v = 0; v < nv; v++) {
        const __m512 d = _mm512_set1_ps(s->class_a ? w->prep.a[v].d : 1.0f);
        __m512 pending = _mm512_setzero_ps();
        for (unsigned g = s->g0; g < s->g1; g++) {
            const float(*c)[SGFP4_MB][2] = w->c2[v];
            const unsigned r = 8 * g;
            const __m512 a0 = _mm512_add_ps(_mm512_load_ps(c[0][r]), _mm512_load_ps(c[4][r]));
            const __m512 a1 = _mm512_add_ps(_mm512_load_ps(c[1][r]), _mm512_load_ps(c[5][r]));
            const __m512 a2 = _mm512_add_ps(_mm512_load_ps(c[2][r]), _mm512_load_ps(c[6][r]));
            const __m512 a3 = _mm512_add_ps(_mm512_load_ps(c[3][r]), _mm512_load_ps(c[7][r]));
            const __m512 rows = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
            if (((g - s->g0) & 1u) == 0 && g + 1 < s->g1) {
                pending = rows;
                continue;
            }
            const bool pair = (g - s->g0) & 1u;
            const __m512 first = pair ? pending : rows;
            const __m512 sum = _mm512_add_ps(_mm512_permutex2var_ps(first, even, rows),
                                             _mm512_permutex2var_ps(first, odd, rows));
            const __m512 scaled = s->class_a ? _mm512_mul_ps(sum, d) : sum; /* exact */
            if (pair)
                _mm512_storeu_ps(t[v] + r - 8, scaled);
            else
                _mm256_storeu_ps(t[v] + r, _mm512_castps512_ps256(scaled));
        }
    }
}

/* ---- in-register paths: UNIFORM_8 and whole-block leaves, FP4 -------------------------- */

/* Rows of group g (8 rows x 2 cells) to t: pairs of groups at once (16 rows). */
MV_INLINE void emit_group(float *t, __m512 rows, __m512 *pending, unsigned g, unsigned g0,
                          unsigned g1, float d, bool class_a)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const bool second = (g - g0) & 1u;
    if (!second && g + 1 < g1) {
        *pending = rows;
        return;
    }
    const __m512 first = second ? *pending : rows;
    const __m512 sum = _mm512_add_ps(_mm512_permutex2var_ps(first, even, rows),
                                     _mm512_permutex2var_ps(first, odd, rows));
    const __m512 scaled = class_a ? _mm512_mul_ps(sum, _mm512_set1_ps(d)) : sum; /* exact */
    if (second)
        _mm512_storeu_ps(t + 8 * g - 8, scaled);
    else
        _mm256_storeu_ps(t + 8 * g, _mm512_castps512_ps256(scaled));
}

/* One unit's cells c for vector v: Class A from u (with the leaf's S and the unit's
 * B * is pair), Class B from the 4 weight columns. */
MV_INLINE __m512 unit_c_a(const mv_prep_a *a, __m512i u, unsigned p, __m512 scale,
                          const float *bis_pair)
{
    const __m512i acc = dot_u8_s8(bcast64i(a->m8is + 2 * p), u, bcast64i(a->qperm + 8 * p));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), scale, bcast64f(bis_pair));
}

/* A unit's Class B cells from its four column products: padding products forced to +0 (D8:
 * +0 in padding columns, not w * 0), then (p0 + p1) + (p2 + p3). */
MV_INLINE __m512 cells_of_products(const mv_work *w, unsigned p, bool padded, __m512 p0,
                                   __m512 p1, __m512 p2, __m512 p3)
{
    if (padded) {
        p0 = _mm512_and_ps(p0, bcast64f(w->valid[p][0]));
        p1 = _mm512_and_ps(p1, bcast64f(w->valid[p][1]));
        p2 = _mm512_and_ps(p2, bcast64f(w->valid[p][2]));
        p3 = _mm512_and_ps(p3, bcast64f(w->valid[p][3]));
    }
    return _mm512_add_ps(_mm512_add_ps(p0, p1), _mm512_add_ps(p2, p3));
}

MV_INLINE __m512 unit_c_b(const mv_work *w, unsigned v, const __m512 wc[4], unsigned p,
                          bool padded)
{
    const float(*xm)[2] = w->prep.b[v].xm[p];
    return cells_of_products(w, p, padded, _mm512_mul_ps(wc[0], bcast64f(xm[0])),
                             _mm512_mul_ps(wc[1], bcast64f(xm[1])),
                             _mm512_mul_ps(wc[2], bcast64f(xm[2])),
                             _mm512_mul_ps(wc[3], bcast64f(xm[3])));
}

/* unit_c_b reading the activations already broadcast (the repacked path) */
MV_INLINE __m512 unit_c_xb(const mv_work *w, unsigned v, const __m512 wc[4], unsigned p,
                           bool padded)
{
    const __m512 *xb = w->xb[v][p];
    return cells_of_products(w, p, padded, _mm512_mul_ps(wc[0], xb[0]),
                             _mm512_mul_ps(wc[1], xb[1]), _mm512_mul_ps(wc[2], xb[2]),
                             _mm512_mul_ps(wc[3], xb[3]));
}

/* The 4 weight columns of an FP4 unit (cells as fp4 words) from its leaf's table. */
MV_INLINE void fp4_columns(__m512i cells, __m512 table, __m512 wc[4])
{
    wc[0] = _mm512_permutexvar_ps(cells, table);
    wc[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 4), table);
    wc[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 8), table);
    wc[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(cells, 12), table);
}

/* p, through an empty asm: the compiler no longer knows what it points to, so it loads from
 * it where the code reads it (broadcasts from memory) instead of keeping what it loaded in
 * registers across loop iterations and broadcasting from there (a shuffle each). */
MV_INLINE const void *opaque_pointer(const void *p)
{
    __asm__("" : "+r"(p));
    return p;
}

/* How the cells of a row group's units are computed, one form per path and class: the
 * paths that sum a group's cells in registers (group_tree) instead of through the tile.
 * Always a constant where it is passed, so each form compiles to its own code. */
typedef enum unit_form {
    UNITS_UNIFORM8_A, /* a UNIFORM_8 record of FP4 leaves (unit p: leaf 8 g + p), Class A */
    UNITS_UNIFORM8_B, /* the same, Class B */
    UNITS_WHOLE_A,    /* a block that is one 64x64 FP4 leaf, Class A */
    UNITS_WHOLE_B,    /* the same, Class B */
    UNITS_PAIRS_A,    /* the repacked layout, a group of one-leaf units (its meta: their
                       * S and B pairs), Class A */
    UNITS_PAIRS_B,    /* the same, Class B */
    UNITS_TABLE_A,    /* the repacked layout, a group with a unit of several leaves (its
                       * meta: tile indices and S and B tables), Class A */
    UNITS_TABLE_B,    /* the same, Class B */
} unit_form;

struct rp_group;

/* What a row group's units are computed from; each form reads some of the fields. */
typedef struct unit_source {
    const mv_work *w;
    bool padded;                /* Class B: the block has padding columns (D8: +0) */
    const uint8_t *codes;       /* UNIFORM_8: the group's 8 leaves (32 bytes each);
                                 * repacked: the group's 4 lines of 64 bytes */
    const float *scale, *bias;  /* UNIFORM_8: the S and B of the group's 8 leaves */
    __m512i top[2], bottom[2];  /* WHOLE: the group's rows 0..3 and 4..7 ([row][pair][cell]
                                 * words), pairs 0..3 and 4..7 */
    __m512 scale16, table;      /* WHOLE: the leaf's S; its 16 weights (Class B) */
    const float (*bis)[16];     /* UNIFORM_8 and WHOLE, Class A: per vector, B * is of unit
                                 * p's two cells at 2 p */
    const mv_prep_a *prep;      /* repacked, Class A: w->prep.a, through opaque_pointer() */
    const float *pairs;         /* PAIRS: unit p's S and B at 2 p and 2 p + 1, likewise */
    const struct rp_group *grp; /* TABLE: the group's S and B tables in registers, */
    const float *sf, *bf;       /* and in memory */
} unit_source;

/* The FP4 cells (the words of each lane's two payload bytes, twice) of unit p of an
 * in-register group. */
MV_INLINE __m512i direct_cells(unit_form form, const unit_source *src, unsigned p)
{
    if (form == UNITS_UNIFORM8_A || form == UNITS_UNIFORM8_B)
        return _mm512_permutexvar_epi16(
            _mm512_load_si512(unit_words_f8),
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(src->codes + 32 * p))));
    return _mm512_permutex2var_epi16(src->top[p / 4], _mm512_load_si512(unit_words_f64[p % 4]),
                                     src->bottom[p / 4]);
}

/* Unit p's cells of every vector, Class A, in-register paths. */
MV_INLINE void direct_unit_a(unit_form form, const unit_source *src, unsigned p, unsigned nv,
                             __m512 *c)
{
    const __m512i u = fp4_u(direct_cells(form, src, p));
    const __m512 s = form == UNITS_UNIFORM8_A ? _mm512_set1_ps(src->scale[p]) : src->scale16;
    for (unsigned v = 0; v < nv; v++)
        c[v] = unit_c_a(&src->w->prep.a[v], u, p, s, src->bis[v] + 2 * p);
}

/* The same, Class B: the unit's 4 weight columns from its leaf's 16 weights. */
MV_INLINE void direct_unit_b(unit_form form, const unit_source *src, unsigned p, unsigned nv,
                             __m512 *c)
{
    __m512 wc[4];
    const __m512 table = form == UNITS_UNIFORM8_B
                             ? leaf_table(SGFP4_MODE_FP4, src->scale[p], src->bias[p])
                             : src->table;
    fp4_columns(direct_cells(form, src, p), table, wc);
    for (unsigned v = 0; v < nv; v++)
        c[v] = unit_c_b(src->w, v, wc, p, src->padded);
}

/* ---- repacked paths: units from the plan's repacked layout ------------------------------ */

/* How far ahead of a repacked block its products prefetch, and how much (about one block at
 * 4.5 bits per weight), spread over its row groups: one burst of 40 prefetches per block
 * made one process in three run at a third of the speed on the AMD VM, cold and warm (the
 * prefetches stalling; measured: 8 KB ahead faster than 12 or 16 KB, and than prefetcht1) */
#define MV_RP_AHEAD 8192u
#define MV_RP_BLOCK_GUESS 2560u

/* The repacked layout's tile bytes to unit lanes: dword lane 4 c + k (rows 2 c, 2 c + 1 of
 * the unit, cell k & 1) takes byte 2 (c / 2) + (k & 1) of the unit's four, in its low byte
 * (the permutes read its low 5 bits). */
#define TB(c) (int8_t)(2 * ((c) / 2)), -128, -128, -128, (int8_t)(2 * ((c) / 2) + 1), -128, -128, -128
static const int8_t repack_tile_bytes[64] __attribute__((aligned(64))) = {
    TB(0), TB(0), TB(1), TB(1), TB(2), TB(2), TB(3), TB(3)};
#undef TB

/* The code of each stored nibble u = code + 8 of the repacked layout. */
static const float repack_code_value[16] __attribute__((aligned(64))) = {
    -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

/* With `prefetch`, an eighth of about the third block ahead of row group g: the layout lies
 * in visit order (prefetches never fault, past the layout's end included). */
MV_INLINE void repacked_prefetch(const uint8_t *blk, unsigned g, bool prefetch)
{
    if (prefetch)
        for (unsigned l = 0; l < MV_RP_BLOCK_GUESS / 8; l += 64)
            _mm_prefetch((const char *)blk + MV_RP_AHEAD + MV_RP_BLOCK_GUESS / 8 * g + l,
                         _MM_HINT_T0);
}

/* Row group g's meta and its table entries (0: a group of one-leaf units, whose meta is the
 * units' (S, B) pairs; repack.h). */
MV_INLINE const uint8_t *repacked_meta(const uint8_t *blk, unsigned g, unsigned *count)
{
    *count = blk[SGFP4_RP_CODES + 16 + g];
    return blk + sgfp4_load_u16le(blk + SGFP4_RP_CODES + 2 * g);
}

/* A group of one-leaf units: their S and B as floats in memory, unit p's at 2 p and 2 p + 1
 * (one conversion of the meta's 8 pairs; exact), for the units' broadcasts. */
MV_INLINE void rp_store_pairs(const uint8_t *meta, float *sb)
{
    _mm512_store_ps(sb, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)meta)));
}

/* A group with a unit of several leaves: its tile indices and its S and B tables, 32
 * entries in two registers each (entries past its count are 0). */
typedef struct rp_group {
    const uint8_t *meta;
    __m512 s_lo, s_hi, b_lo, b_hi;
} rp_group;

MV_INLINE rp_group repacked_group(const uint8_t *meta, unsigned n)
{
    rp_group r;
    r.meta = meta;
    const __mmask16 m_lo = (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
    const __mmask16 m_hi = (__mmask16)(n > 16 ? (1u << (n - 16)) - 1u : 0u);
    const uint8_t *s16 = r.meta + SGFP4_RP_TILES, *b16 = s16 + 2 * n;
    r.s_lo = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m_lo, s16));
    r.s_hi = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m_hi, s16 + 32));
    r.b_lo = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m_lo, b16));
    r.b_hi = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m_hi, b16 + 32));
    return r;
}

/* A group's S and B tables as floats in memory, for the broadcasts of one-leaf units. */
MV_INLINE void rp_store_tables(const rp_group *grp, float *sf, float *bf)
{
    _mm512_store_ps(sf, grp->s_lo);
    _mm512_store_ps(sf + 16, grp->s_hi);
    _mm512_store_ps(bf, grp->b_lo);
    _mm512_store_ps(bf + 16, grp->b_hi);
}

/* Unit p of a group with a unit of several leaves (its tables in grp, sf and bf): the S and
 * B of its lanes, broadcasts of the table entry where its four tiles lie in one leaf (its
 * four tile indices, the bytes of `four`, are equal: loads, no shuffles; returns true), else
 * each lane's tile entry by two-register permutes. Both give every lane the same S and B,
 * so the bits are the same. */
MV_INLINE bool rp_unit_sb(const rp_group *grp, unsigned p, const float *sf, const float *bf,
                          __m512 *sl, __m512 *bl)
{
    uint32_t four;
    memcpy(&four, grp->meta + 4 * p, 4);
    if (four == (four & 0xFFu) * 0x01010101u) {
        *sl = _mm512_set1_ps(sf[four & 0xFFu]);
        *bl = _mm512_set1_ps(bf[four & 0xFFu]);
        return true;
    }
    const __m512i lane =
        _mm512_shuffle_epi8(_mm512_set1_epi32((int)four), _mm512_load_si512(repack_tile_bytes));
    *sl = _mm512_permutex2var_ps(grp->s_lo, lane, grp->s_hi);
    *bl = _mm512_permutex2var_ps(grp->b_lo, lane, grp->b_hi);
    return false;
}

/* Unit p's S and B of each lane, by the form of its group's meta: broadcasts from the pairs
 * (read through opaque_pointer(), so that the compiler does not take them from the stored
 * register with a shuffle each), or rp_unit_sb(). Returns whether the unit lies in one leaf
 * (always, in the pairs' form). */
MV_INLINE bool repacked_unit_sb(bool pairs, const unit_source *src, unsigned p, __m512 *sl,
                                __m512 *bl)
{
    if (!pairs)
        return rp_unit_sb(src->grp, p, src->sf, src->bf, sl, bl);
    *sl = _mm512_set1_ps(src->pairs[2 * p]);
    *bl = _mm512_set1_ps(src->pairs[2 * p + 1]);
    return true;
}

/* Unit p's cells of every vector, Class A: its codes u = code + 8 from one nibble half of a
 * 64-byte line (units 0..3 the low nibbles of lines 0..3, units 4..7 the high ones), then as
 * unit_c_a with each lane's S and B. */
MV_INLINE void repacked_unit_a(bool pairs, const unit_source *src, unsigned p, unsigned nv,
                               __m512 *c)
{
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i z = _mm512_load_si512(src->codes + 64 * (p % 4));
    const __m512i u = p < 4 ? _mm512_and_si512(z, low)
                            : _mm512_and_si512(_mm512_srli_epi16(z, 4), low);
    __m512 sl, bl;
    repacked_unit_sb(pairs, src, p, &sl, &bl);
    MV_UNROLL for (unsigned v = 0; v < nv; v++) {
        const mv_prep_a *a = &src->prep[v];
        const __m512i acc = dot_u8_s8(bcast64i(a->m8is + 2 * p), u, bcast64i(a->q + 8 * p));
        c[v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), sl,
                               _mm512_mul_ps(bl, bcast64f(a->isf + 2 * p)));
    }
}

/* The same, Class B: the weights fl32(S q + B) of column m of every lane, from the lane's
 * nibble (the line shifted by 8 m, 8 m + 4 for the high nibble: vpermps reads the low 4 bits
 * of its index), by vpermps of the leaf's 16 weights where the unit lies in one leaf (one
 * fma per unit; exact product: D1), else each lane's code value and one fma; then per
 * vector the four products and three adds of unit_c_xb. */
MV_INLINE void repacked_unit_b(bool pairs, const unit_source *src, unsigned p, unsigned nv,
                               __m512 *c)
{
    const __m512 values = _mm512_load_ps(repack_code_value);
    const __m512i z = _mm512_load_si512(src->codes + 64 * (p % 4));
    const __m512i n = p < 4 ? z : _mm512_srli_epi32(z, 4);
    __m512 sl, bl, wc[4];
    if (repacked_unit_sb(pairs, src, p, &sl, &bl)) {
        const __m512 leaf = _mm512_fmadd_ps(sl, values, bl); /* read at u */
        wc[0] = _mm512_permutexvar_ps(n, leaf);
        wc[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(n, 8), leaf);
        wc[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(n, 16), leaf);
        wc[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(n, 24), leaf);
    } else {
        for (unsigned m = 0; m < 4; m++)
            wc[m] = _mm512_fmadd_ps(
                sl, _mm512_permutexvar_ps(_mm512_srli_epi32(n, (int)(8 * m)), values), bl);
    }
    MV_UNROLL for (unsigned v = 0; v < nv; v++)
        c[v] = unit_c_xb(src->w, v, wc, p, src->padded);
}

/* ---- the row group tree ------------------------------------------------------------------ */

/* Unit p's cells of every vector (c[v]), as `form` computes them. */
MV_INLINE void unit_cells(unit_form form, const unit_source *src, unsigned p, unsigned nv,
                          __m512 *c)
{
    switch (form) {
    case UNITS_UNIFORM8_A:
    case UNITS_WHOLE_A: direct_unit_a(form, src, p, nv, c); break;
    case UNITS_UNIFORM8_B:
    case UNITS_WHOLE_B: direct_unit_b(form, src, p, nv, c); break;
    case UNITS_PAIRS_A: repacked_unit_a(true, src, p, nv, c); break;
    case UNITS_TABLE_A: repacked_unit_a(false, src, p, nv, c); break;
    case UNITS_PAIRS_B: repacked_unit_b(true, src, p, nv, c); break;
    case UNITS_TABLE_B: repacked_unit_b(false, src, p, nv, c); break;
    }
}

/* out[v] = a[v] + b[v] for the chunk's vectors. */
MV_INLINE void add_cells(__m512 *out, const __m512 *a, const __m512 *b, unsigned nv)
{
    for (unsigned v = 0; v < nv; v++)
        out[v] = _mm512_add_ps(a[v], b[v]);
}

/* The 8 units of a row group tree-summed per vector into rows[v], as D8 pairs their cells
 * (cell k + 8 is pair p + 4, k + 4 is p + 2, k + 2 is p + 1):
 * ((c0 + c4) + (c2 + c6)) + ((c1 + c5) + (c3 + c7)), c_p the cells of pair p. Each row's
 * two remaining cells are emit_group()'s. Units are computed in the order they are summed,
 * so that at most four sets of cells are live. */
MV_INLINE void group_tree(unit_form form, const unit_source *src, unsigned nv,
                          __m512 rows[SGFP4_MATVEC_CHUNK])
{
    __m512 l[SGFP4_MATVEC_CHUNK], r[SGFP4_MATVEC_CHUNK], c[SGFP4_MATVEC_CHUNK];
    __m512 h[SGFP4_MATVEC_CHUNK];
    unit_cells(form, src, 0, nv, l);
    unit_cells(form, src, 4, nv, c);
    add_cells(l, l, c, nv);
    unit_cells(form, src, 2, nv, r);
    unit_cells(form, src, 6, nv, c);
    add_cells(r, r, c, nv);
    add_cells(h, l, r, nv);
    unit_cells(form, src, 1, nv, l);
    unit_cells(form, src, 5, nv, c);
    add_cells(l, l, c, nv);
    unit_cells(form, src, 3, nv, r);
    unit_cells(form, src, 7, nv, c);
    add_cells(r, r, c, nv);
    add_cells(l, l, r, nv);
    add_cells(rows, h, l, nv);
}

/* ---- direct paths: whole FP4 blocks, summed in registers -------------------------------- */

/* A UNIFORM_8 record whose 64 leaves are all FP4: leaf i = 8 g + p at payload + 32 i. */
MV_INLINE void uniform8_fp4(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv,
                            const uint8_t *rec, float (*t)[SGFP4_MB], bool padded)
{
    const uint8_t *headers = rec + 4, *payload = rec + 272; /* align16(4 + 64 * 4) */
    float scale[64] __attribute__((aligned(64))), bias[64] __attribute__((aligned(64)));
    for (unsigned k = 0; k < 4; k++) {
        const __m512i h = _mm512_loadu_si512(headers + 64 * k);
        _mm512_store_ps(scale + 16 * k, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16))));
        _mm512_store_ps(bias + 16 * k, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                           _mm512_and_si512(h, _mm512_set1_epi32(0xFFF0)))));
    }
    float bis[SGFP4_MATVEC_CHUNK][16] __attribute__((aligned(64)));
    __m512 pending[SGFP4_MATVEC_CHUNK] = {0};
    unit_source src = {.w = w, .padded = padded, .bis = bis};
    for (unsigned g = s->g0; g < s->g1; g++) {
        src.codes = payload + 256 * g;
        src.scale = scale + 8 * g;
        src.bias = bias + 8 * g;
        __m512 rows[SGFP4_MATVEC_CHUNK];
        if (s->class_a) {
            /* B of leaf 8 g + p for both cells of pair p, times is */
            const __m512 b16 = _mm512_permutexvar_ps(
                _mm512_add_epi32(_mm512_set1_epi32((int)(8 * (g & 1u))),
                                 _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)),
                _mm512_load_ps(bias + 16 * (g / 2)));
            for (unsigned v = 0; v < nv; v++)
                _mm512_store_ps(bis[v], _mm512_mul_ps(b16, _mm512_load_ps(w->prep.a[v].isf)));
            group_tree(UNITS_UNIFORM8_A, &src, nv, rows);
        } else {
            group_tree(UNITS_UNIFORM8_B, &src, nv, rows);
        }
        for (unsigned v = 0; v < nv; v++)
            emit_group(t[v], rows[v], &pending[v], g, s->g0, s->g1,
                       s->class_a ? w->prep.a[v].d : 1.0f, s->class_a);
    }
}

/* A block that is one 64x64 FP4 leaf (v1, or a v2 UNIFORM_64 record): rows of 32 bytes. */
MV_INLINE void whole_fp4(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv,
                         const uint8_t *payload, float scale, float bias, float (*t)[SGFP4_MB],
                         bool padded)
{
    float bis[SGFP4_MATVEC_CHUNK][16] __attribute__((aligned(64)));
    unit_source src = {.w = w, .padded = padded, .bis = bis};
    src.scale16 = _mm512_set1_ps(scale);
    src.table = leaf_table(SGFP4_MODE_FP4, scale, bias);
    if (s->class_a)
        for (unsigned v = 0; v < nv; v++)
            _mm512_store_ps(bis[v], _mm512_mul_ps(_mm512_set1_ps(bias), _mm512_load_ps(w->prep.a[v].isf)));
    __m512 pending[SGFP4_MATVEC_CHUNK] = {0};
    for (unsigned g = s->g0; g < s->g1; g++) {
        const uint8_t *lines = payload + 256 * g;
        const __m512i z0 = _mm512_loadu_si512(lines), z1 = _mm512_loadu_si512(lines + 64);
        const __m512i z2 = _mm512_loadu_si512(lines + 128), z3 = _mm512_loadu_si512(lines + 192);
        for (unsigned k = 0; k < 2; k++) {
            const __m512i pick = _mm512_load_si512(rows_words_f64[k]);
            src.top[k] = _mm512_permutex2var_epi16(z0, pick, z1);
            src.bottom[k] = _mm512_permutex2var_epi16(z2, pick, z3);
        }
        __m512 rows[SGFP4_MATVEC_CHUNK];
        if (s->class_a)
            group_tree(UNITS_WHOLE_A, &src, nv, rows);
        else
            group_tree(UNITS_WHOLE_B, &src, nv, rows);
        for (unsigned v = 0; v < nv; v++)
            emit_group(t[v], rows[v], &pending[v], g, s->g0, s->g1,
                       s->class_a ? w->prep.a[v].d : 1.0f, s->class_a);
    }
}

/* ---- repacked paths: blocks of the plan's repacked layout -------------------------------- */

/* Where a repacked block's groups put their meta as floats (rp_store_pairs, rp_store_tables). */
typedef struct rp_scratch {
    float sf[SGFP4_RP_MAX_TABLE] __attribute__((aligned(64)));
    float bf[SGFP4_RP_MAX_TABLE] __attribute__((aligned(64)));
    float sb[16] __attribute__((aligned(64)));
} rp_scratch;

/* A repacked row group's cells tree-summed into rows, by the form of its meta: the pairs'
 * form (count 0: one conversion of its 8 (S, B) pairs, then per unit two broadcasts from
 * memory) or the tables' (its S and B tables, up to 32 entries in two registers each, and
 * per unit rp_unit_sb()). */
MV_INLINE void repacked_group_tree(bool class_a, unit_source *src, const uint8_t *meta,
                                   unsigned count, rp_scratch *scratch, unsigned nv,
                                   __m512 rows[SGFP4_MATVEC_CHUNK])
{
    if (count == 0) {
        rp_store_pairs(meta, scratch->sb);
        src->pairs = opaque_pointer(scratch->sb);
        group_tree(class_a ? UNITS_PAIRS_A : UNITS_PAIRS_B, src, nv, rows);
        return;
    }
    const rp_group grp = repacked_group(meta, count);
    rp_store_tables(&grp, scratch->sf, scratch->bf);
    src->grp = &grp;
    src->sf = scratch->sf;
    src->bf = scratch->bf;
    group_tree(class_a ? UNITS_TABLE_A : UNITS_TABLE_B, src, nv, rows);
}

/* A block of the plan's repacked layout (matvec/repack.h), Class A: per unit its codes from
 * one nibble half of a 64-byte line and the S and B of its lanes (repacked_unit_a). Most
 * groups of the encoder's output are in the pairs' form. */
MV_INLINE void repacked_a(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv,
                          const uint8_t *blk, float (*t)[SGFP4_MB])
{
    rp_scratch scratch;
    __m512 pending[SGFP4_MATVEC_CHUNK] = {0};
    for (unsigned g = s->g0; g < s->g1; g++) {
        repacked_prefetch(blk, g, s->n0 == 0);
        unsigned count;
        const uint8_t *meta = repacked_meta(blk, g, &count);
        /* the activations' pairs are broadcast from memory in each unit: opaque_pointer()
         * hides that they are the same in every group */
        unit_source src = {.w = w, .codes = blk + 256 * g, .prep = opaque_pointer(w->prep.a)};
        __m512 rows[SGFP4_MATVEC_CHUNK];
        repacked_group_tree(true, &src, meta, count, &scratch, nv, rows);
        for (unsigned v = 0; v < nv; v++)
            emit_group(t[v], rows[v], &pending[v], g, s->g0, s->g1, w->prep.a[v].d, true);
    }
}

/* A block of the plan's repacked layout, Class B: the lanes stay cells (lane 2 i + j: row i,
 * cell j of the unit), and the four columns of a cell are four registers, so that D8's cell
 * sum is three vertical adds and the cells come out as Class A's do (repacked_unit_b; nearly
 * every unit of the encoder's output lies in one leaf). The activations are broadcast once
 * per block by prep_b. */
MV_INLINE void repacked_b(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv,
                          const uint8_t *blk, float (*t)[SGFP4_MB], bool padded)
{
    rp_scratch scratch;
    __m512 pending[SGFP4_MATVEC_CHUNK] = {0};
    for (unsigned g = s->g0; g < s->g1; g++) {
        repacked_prefetch(blk, g, s->n0 == 0);
        unsigned count;
        const uint8_t *meta = repacked_meta(blk, g, &count);
        unit_source src = {.w = w, .padded = padded, .codes = blk + 256 * g};
        __m512 rows[SGFP4_MATVEC_CHUNK];
        repacked_group_tree(false, &src, meta, count, &scratch, nv, rows);
        for (unsigned v = 0; v < nv; v++)
            emit_group(t[v], rows[v], &pending[v], g, s->g0, s->g1, 1.0f, false);
    }
}

/* ---- the block -------------------------------------------------------------------------- */

/* Whether the 64 UNIFORM_8 leaf headers at h are all FP4 (flag bit 0 clear). */
MV_INLINE bool all_fp4(const uint8_t *h)
{
    const __m512i any = _mm512_or_si512(
        _mm512_or_si512(_mm512_loadu_si512(h), _mm512_loadu_si512(h + 64)),
        _mm512_or_si512(_mm512_loadu_si512(h + 128), _mm512_loadu_si512(h + 192)));
    return _mm512_test_epi32_mask(any, _mm512_set1_epi32(1)) == 0;
}

MV_INLINE void block_nv(const sgfp4_matvec_strip *s, uint64_t bx, float (*t)[SGFP4_MB],
                        mv_work *w, const unsigned nv)
{
    const sgfp4_tensor *tensor = s->t;
    const uint64_t b = s->by * tensor->tiles_x + bx;
    bool padded = false;
    if (s->class_a)
        prep_a(w, s, nv, bx);
    else
        padded = prep_b(w, s, nv, bx, s->plan->repack != NULL);
    const uint8_t *d = tensor->data;
    const unsigned lo = 8 * s->g0, hi = 8 * s->g1;
    if (s->plan->repack) {
        const uint8_t *blk = sgfp4_matvec_repacked_block(s->plan, b);
        if (s->class_a)
            repacked_a(w, s, nv, blk, t);
        else if (padded) /* a constant in each copy */
            repacked_b(w, s, nv, blk, t, true);
        else
            repacked_b(w, s, nv, blk, t, false);
        return;
    }
    if (tensor->profile == SGFP4_PROFILE_V1) {
        const uint32_t offset = sgfp4_load_u32le(d + 4 * tensor->blocks + 4 * b);
        const uint32_t h = sgfp4_load_u32le(d + 4 * b);
        const uint8_t *payload = d + 8 * tensor->blocks + (offset & ~UINT32_C(0xF));
        const float scale = sgfp4_half_to_float_finite(h >> 16);
        const float bias = sgfp4_half_to_float_finite(h & 0xFFFFu);
        if (!(offset & 1u)) {
            whole_fp4(w, s, nv, payload, scale, bias, t, padded);
            return;
        }
        leaf_units(w, s, nv, 4, SGFP4_MODE_T158, payload, 0, 0, scale, bias, lo, hi, padded);
        cell_trees(w, s, nv, t);
        return;
    }
    const uint8_t *rec = d + tensor->record_base + sgfp4_load_u32le(d + 16 + 4 * b);
    const unsigned layout = rec[0] & 7u;
    if (layout == SGFP4_LAYOUT_UNIFORM_8 && all_fp4(rec + 4)) {
        uniform8_fp4(w, s, nv, rec, t, padded);
        return;
    }
    if (layout == SGFP4_LAYOUT_UNIFORM_64 && !(rec[4] & 1u)) {
        const uint32_t h = sgfp4_load_u32le(rec + 4);
        whole_fp4(w, s, nv, rec + 16, sgfp4_half_to_float_finite(h >> 16),
                  sgfp4_half_to_float_finite(h & 0xFFF0u), t, padded);
        return;
    }
    sgfp4_matvec_block_view view;
    sgfp4_matvec_block_view_get(s->plan, b, &view);
    const unsigned *counts = view.count;
    convert_headers(w, view.headers, view.leaves);
    const uint32_t *e = view.entries;
    for (unsigned kind = 0; kind < SGFP4_LEAF_KINDS; e += counts[kind], kind++) {
        if (!counts[kind])
            continue;
        switch (kind) { /* constant kinds, so that each loop is specialised */
        case 0: kind_leaves(w, s, nv, 0, rec, e, counts[0], lo, hi, padded); break;
        case 1: kind_leaves(w, s, nv, 1, rec, e, counts[1], lo, hi, padded); break;
        case 2: kind_leaves(w, s, nv, 2, rec, e, counts[2], lo, hi, padded); break;
        case 3: kind_leaves(w, s, nv, 3, rec, e, counts[3], lo, hi, padded); break;
        case 4: kind_leaves(w, s, nv, 4, rec, e, counts[4], lo, hi, padded); break;
        case 5: kind_leaves(w, s, nv, 5, rec, e, counts[5], lo, hi, padded); break;
        case 6: kind_leaves(w, s, nv, 6, rec, e, counts[6], lo, hi, padded); break;
        case 7: kind_leaves(w, s, nv, 7, rec, e, counts[7], lo, hi, padded); break;
        case 8: kind_leaves(w, s, nv, 8, rec, e, counts[8], lo, hi, padded); break;
        default: kind_leaves(w, s, nv, 9, rec, e, counts[9], lo, hi, padded); break;
        }
    }
    cell_trees(w, s, nv, t);
}

/* The block for the chunk's vector count, a constant in each copy. */
MV_INLINE void mv_block(const sgfp4_matvec_strip *s, uint64_t bx, float (*t)[SGFP4_MB],
                        mv_work *w)
{
    switch (s->nv) {
    case 1: block_nv(s, bx, t, w, 1); break;
    case 2: block_nv(s, bx, t, w, 2); break;
    case 3: block_nv(s, bx, t, w, 3); break;
    default: block_nv(s, bx, t, w, 4); break;
    }
}

MV_INLINE void mv_add(float *restrict a, const float *restrict b, unsigned count)
{
    unsigned i = 0;
    for (; i + 16 <= count; i += 16)
        _mm512_storeu_ps(a + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    if (i < count)
        _mm256_storeu_ps(a + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
}

/* prefetch the next strip while computing this one (strip_driver.h) */
#define MV_PREFETCH_NEXT 1
/* Class A on a plan with the repacked layout streams it in visit order, prefetching it
 * MV_RP_AHEAD bytes ahead (measured faster than the touch pass with the next-strip
 * prefetch over the layout, on cold 4096x4096 products) */
#define MV_READS_REPACK 1
/* the strip loop inlined into each class's entry point, so that each is compiled for its
 * class alone (one shared copy made Class A slower once Class B had its repacked path:
 * v1 b1 0.64 -> 0.77 ms warm at 4096x4096) */
#undef MV_FN
#define MV_FN MV_INLINE
#include "matvec/strip_driver.h"
#undef MV_FN
#define MV_FN static __attribute__((target(MV_TARGET)))

MV_FN void mv_rows_q8(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                      const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    mv_strip(plan, r0, r1, x, y, true);
}

MV_FN void mv_rows_float(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                         const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    mv_strip(plan, r0, r1, x, y, false);
}

/* ---- the Class A quantizer -------------------------------------------------------------
 * The reference's bytes (matvec/matvec_quantize.c) with floating-point instructions where they are
 * exact: the block maximum of the magnitude bits (integer order is magnitude order for
 * finite values), e from its bits as the reference finds it, then q = x * 2^-e rounded to
 * nearest even by the conversion. The scaling by a power of two is exact but where the
 * product is below 2^-126, and then |x * 2^-e| < 2^-80 rounds to 0 whatever the rounding
 * or flush-to-zero mode; both operations carry their rounding (nearest) in the instruction.
 * f16 input converts exactly (vcvtph2ps). */
MV_FN void mv_quantize(const void *in, sgfp4_dtype dtype, uint64_t cols, int8_t *q, uint8_t *d)
{
    const uint64_t tiles = (cols + 63u) / 64u;
    for (uint64_t b = 0; b < tiles; b++) {
        const uint64_t c0 = b * 64u;
        const unsigned width = (unsigned)(cols - c0 < 64u ? cols - c0 : 64u);
        __m512 x[4];
        __m512i m = _mm512_setzero_si512();
        for (unsigned g = 0; g < 4; g++) {
            const unsigned first = 16 * g;
            const unsigned live = width > first ? (width - first < 16 ? width - first : 16) : 0;
            const __mmask16 lanes = (__mmask16)((1u << live) - 1u);
            if (dtype == SGFP4_DTYPE_F16)
                x[g] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, (const uint16_t *)in + c0 + first));
            else
                x[g] = _mm512_maskz_loadu_ps(lanes, (const float *)in + c0 + first);
            m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(x[g]),
                                                     _mm512_set1_epi32(0x7FFFFFFF)));
        }
        const uint32_t max = (uint32_t)_mm512_reduce_max_epu32(m);
        if (max < SGFP4_MATVEC_Q8_FLOOR) {
            memset(q + c0, 0, 64);
            sgfp4_store_u32le(d + 4 * b, 0); /* d_b = +0 */
            continue;
        }
        const int e = sgfp4_matvec_block_exponent(max);
        const __m512 scale = _mm512_castsi512_ps(_mm512_set1_epi32((127 - e) << 23)); /* 2^-e */
        for (unsigned g = 0; g < 4; g++) {
            const __m512 scaled =
                _mm512_mul_round_ps(x[g], scale, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            const __m512i qi =
                _mm512_cvt_roundps_epi32(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm_storeu_si128((__m128i *)(q + c0 + 16 * g), _mm512_cvtepi32_epi8(qi)); /* |q| <= 127 */
        }
        sgfp4_store_u32le(d + 4 * b, (uint32_t)(e + 127) << 23);
    }
}

const sgfp4_matvec_kernels MV_SET = {MV_SET_NAME, mv_rows_q8, mv_rows_float, mv_quantize, true};
