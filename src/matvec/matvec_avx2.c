/* The AVX2 + FMA + F16C matvec kernel set ("avx2"), for x86-64 CPUs without AVX-512. The
 * same plan as the AVX-512 sets (matvec/avx512_units.h), in 8-lane registers:
 *
 * - Units of 8 rows x 2 cells (two registers of 4 rows), gathered into the 32 bytes (FP4)
 *   or 16 bytes (T158) of an 8x8 leaf's row-major layout: a plain load for 8x8 leaves, one
 *   vpgatherdd (8 rows, one dword each) for the larger ones.
 * - Class A: u = code + 8 (FP4: the bytes XOR 0x88, words zero-extended to lanes and spread
 *   as [lo b0, lo b1, hi b0, hi b1], q permuted to match; T158: u = code + 1 from a shift
 *   tower and a vpshufb table); the dot product as vpmaddubsw + vpmaddwd (no saturation:
 *   pairs are at most 2 * 15 * 127), iq = that - 8 is (- is for T158), c = fma(iq, S, B is)
 *   (both products exact: one rounding of the exact sum, as D8's two).
 * - Class B: FP4 weights as fma(S, code, B) with code sign-extended by two shifts and
 *   converted (exact; D1 rounds once), T158 weights by vpermps of an 8-entry table of
 *   period 4; p = w * x, c = (p0 + p1) + (p2 + p3); padding products forced to +0.
 * - The tile [cell pair][row][2], the cell tree as vertical adds, and the two cells of each
 *   row by vhaddps (adds adjacent lanes: the pair, in a specified order).
 * SPDX-License-Identifier: MIT */
#include "listing/leaf_list.h"
#include "matvec/strip.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <immintrin.h>

#define MV_TARGET SGFP4_TARGET_AVX2
#define MV_FN static __attribute__((target(MV_TARGET)))
#define MV_INLINE static inline __attribute__((target(MV_TARGET), always_inline))

typedef struct __attribute__((aligned(32))) mv_prep_a {
    int8_t qperm[64]; /* q with each cell's columns as 0, 2, 1, 3 (the FP4 byte order) */
    int8_t q[64];
    int32_t m8is[16], mis[16]; /* -8 is, -is: the accumulators' starts */
    float isf[16];
    float d;
} mv_prep_a;

typedef struct __attribute__((aligned(32))) mv_prep_b {
    float xm[8][4][2]; /* [pair p][column m][cell j]: x of column 8p + 4j + m */
} mv_prep_b;

typedef struct mv_work {
    float c2[SGFP4_MATVEC_CHUNK][8][SGFP4_MB][2] __attribute__((aligned(32)));
    union {
        mv_prep_a a[SGFP4_MATVEC_CHUNK];
        mv_prep_b b[SGFP4_MATVEC_CHUNK];
    } prep;
    uint32_t valid[8][4][2] __attribute__((aligned(32)));
    float scale[SGFP4_MAX_LEAVES] __attribute__((aligned(32)));
    float bias[SGFP4_MAX_LEAVES] __attribute__((aligned(32)));
} mv_work;

/* FP4 nibble -> value is the sign-extended nibble; T158 2-bit symbol -> 0, 1, -1, 0 (D4). */
static const float t158_value[8] __attribute__((aligned(32))) = {0, 1, -1, 0, 0, 1, -1, 0};

MV_INLINE __m256i bcast64i(const void *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return _mm256_set1_epi64x(v);
}

MV_INLINE __m256 bcast64f(const void *p)
{
    double v;
    memcpy(&v, p, 8);
    return _mm256_castpd_ps(_mm256_set1_pd(v));
}

/* ---- a unit's codes ------------------------------------------------------------------- */

/* FP4 unit (pair pi, rows 8 gi.. of a leaf of class cls): its 8 rows of 4 bytes. */
MV_INLINE __m256i fp4_unit(const uint8_t *payload, unsigned cls, unsigned gi, unsigned pi)
{
    if (cls == 1)
        return _mm256_loadu_si256((const __m256i *)payload);
    const int row_bytes = 2 << cls;
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32(row_bytes));
    return _mm256_i32gather_epi32((const int *)(payload + 8 * gi * row_bytes + 4 * pi), rows, 1);
}

/* T158 unit: its 8 rows of 2 bytes (cells 2 pi, 2 pi + 1). */
MV_INLINE __m128i t158_unit(const uint8_t *payload, unsigned cls, unsigned gi, unsigned pi)
{
    if (cls == 1)
        return _mm_loadu_si128((const __m128i *)payload);
    const int row_bytes = 1 << cls;
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32(row_bytes));
    /* the dword holding the row's two bytes (at an even offset: the low or high half) */
    __m256i d = _mm256_i32gather_epi32(
        (const int *)(payload + 8 * gi * row_bytes + 4 * (pi / 2)), rows, 1);
    d = (pi & 1u) ? _mm256_srli_epi32(d, 16) : _mm256_and_si256(d, _mm256_set1_epi32(0xFFFF));
    const __m256i words = _mm256_packus_epi32(d, d); /* per lane: w0..w3 w0..w3 */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(words, 0x08)); /* w0..w7 */
}

/* ---- Class A -------------------------------------------------------------------------- */

/* u of rows 4h..4h + 3 from the unit's FP4 bytes already XORed with 0x88. */
MV_INLINE __m256i fp4_u(__m256i flipped, unsigned h)
{
    const __m256i w = _mm256_cvtepu16_epi32(h ? _mm256_extracti128_si256(flipped, 1)
                                              : _mm256_castsi256_si128(flipped));
    return _mm256_and_si256(_mm256_or_si256(w, _mm256_slli_epi32(w, 12)),
                            _mm256_set1_epi8(0x0F));
}

/* u of T158 lanes (cell bytes zero-extended): d | d << 6 puts B >> 2 in byte 1, that |
 * that << 12 puts B >> 4 and B >> 6 in bytes 2 and 3; the table maps each byte's low 2 bits
 * (bits 2..3 repeat it) to code + 1. */
MV_INLINE __m256i t158_u(__m256i d)
{
    const __m256i e = _mm256_or_si256(d, _mm256_slli_epi32(d, 6));
    const __m256i f = _mm256_and_si256(_mm256_or_si256(e, _mm256_slli_epi32(e, 12)),
                                       _mm256_set1_epi8(0x0F));
    const __m256i table = _mm256_setr_epi8(1, 2, 0, 1, 1, 2, 0, 1, 1, 2, 0, 1, 1, 2, 0, 1, 1, 2,
                                           0, 1, 1, 2, 0, 1, 1, 2, 0, 1, 1, 2, 0, 1);
    return _mm256_shuffle_epi8(table, f);
}

/* acc + the sum of each lane's 4 products u * q. */
MV_INLINE __m256i dot_u8_s8(__m256i acc, __m256i u, __m256i q)
{
    const __m256i pairs = _mm256_maddubs_epi16(u, q);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

/* c of 4 rows x 2 cells (8 lanes) from u. */
MV_INLINE __m256 cells_a(const mv_prep_a *a, __m256i u, unsigned mode, unsigned p, float scale,
                         float bias)
{
    const __m256i acc = dot_u8_s8(bcast64i(mode ? a->mis + 2 * p : a->m8is + 2 * p), u,
                                  bcast64i(mode ? a->q + 8 * p : a->qperm + 8 * p));
    const __m256 shifted = _mm256_mul_ps(bcast64f(a->isf + 2 * p), _mm256_set1_ps(bias));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(scale), shifted);
}

/* ---- Class B -------------------------------------------------------------------------- */

/* The weights of column m of rows 4h.. (4 rows x 2 cells). */
MV_INLINE __m256 fp4_column(__m256i words, unsigned m, __m256 scale, __m256 bias)
{
    /* nibble m sign-extended: to the top, then an arithmetic shift */
    const __m256i code = _mm256_srai_epi32(_mm256_sll_epi32(words, _mm_cvtsi32_si128((int)(28 - 4 * m))), 28);
    return _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(code), bias); /* exact product */
}

MV_INLINE __m256 t158_column(__m256i bytes, unsigned m, __m256 table)
{
    return _mm256_permutevar8x32_ps(table, _mm256_srl_epi32(bytes, _mm_cvtsi32_si128((int)(2 * m))));
}

/* c of 4 rows x 2 cells from the 4 weight columns. */
MV_INLINE __m256 cells_b(const mv_work *w, unsigned v, const __m256 wc[4], unsigned p,
                         bool padded)
{
    const float(*xm)[2] = w->prep.b[v].xm[p];
    __m256 pr[4];
    for (unsigned m = 0; m < 4; m++) {
        pr[m] = _mm256_mul_ps(wc[m], bcast64f(xm[m]));
        if (padded) /* D8: +0 in padding columns, not w * 0 */
            pr[m] = _mm256_and_ps(pr[m], bcast64f(w->valid[p][m]));
    }
    return _mm256_add_ps(_mm256_add_ps(pr[0], pr[1]), _mm256_add_ps(pr[2], pr[3]));
}

/* ---- units and leaves ----------------------------------------------------------------- */

/* One unit (pair p, rows row..row + 7) of every vector. */
MV_INLINE void unit(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned mode,
                    const uint8_t *payload, unsigned cls, unsigned gi, unsigned pi, unsigned p,
                    unsigned row, float scale, float bias, bool padded)
{
    if (mode == SGFP4_MODE_FP4) {
        const __m256i raw = fp4_unit(payload, cls, gi, pi);
        if (s->class_a) {
            const __m256i flipped = _mm256_xor_si256(raw, _mm256_set1_epi8((char)0x88));
            const __m256i u0 = fp4_u(flipped, 0), u1 = fp4_u(flipped, 1);
            for (unsigned v = 0; v < nv; v++) {
                const mv_prep_a *a = &w->prep.a[v];
                _mm256_store_ps(w->c2[v][p][row], cells_a(a, u0, mode, p, scale, bias));
                _mm256_store_ps(w->c2[v][p][row + 4], cells_a(a, u1, mode, p, scale, bias));
            }
        } else {
            const __m256 sv = _mm256_set1_ps(scale), bv = _mm256_set1_ps(bias);
            for (unsigned h = 0; h < 2; h++) {
                const __m256i words = _mm256_cvtepu16_epi32(
                    h ? _mm256_extracti128_si256(raw, 1) : _mm256_castsi256_si128(raw));
                __m256 wc[4];
                for (unsigned m = 0; m < 4; m++)
                    wc[m] = fp4_column(words, m, sv, bv);
                for (unsigned v = 0; v < nv; v++)
                    _mm256_store_ps(w->c2[v][p][row + 4 * h], cells_b(w, v, wc, p, padded));
            }
        }
        return;
    }
    const __m128i bytes = t158_unit(payload, cls, gi, pi);
    const __m256i d0 = _mm256_cvtepu8_epi32(bytes);
    const __m256i d1 = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
    if (s->class_a) {
        const __m256i u0 = t158_u(d0), u1 = t158_u(d1);
        for (unsigned v = 0; v < nv; v++) {
            const mv_prep_a *a = &w->prep.a[v];
            _mm256_store_ps(w->c2[v][p][row], cells_a(a, u0, mode, p, scale, bias));
            _mm256_store_ps(w->c2[v][p][row + 4], cells_a(a, u1, mode, p, scale, bias));
        }
    } else {
        const __m256 table = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_load_ps(t158_value),
                                             _mm256_set1_ps(bias));
        for (unsigned h = 0; h < 2; h++) {
            __m256 wc[4];
            for (unsigned m = 0; m < 4; m++)
                wc[m] = t158_column(h ? d1 : d0, m, table);
            for (unsigned v = 0; v < nv; v++)
                _mm256_store_ps(w->c2[v][p][row + 4 * h], cells_b(w, v, wc, p, padded));
        }
    }
}

/* Every unit of rows [lo, hi) of a leaf of class cls (1..4: 8x8 .. 64x64). */
MV_INLINE void leaf_units(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned cls,
                          unsigned mode, const uint8_t *payload, unsigned y, unsigned x,
                          float scale, float bias, unsigned lo, unsigned hi, bool padded)
{
    const unsigned units = 1u << (cls - 1);
    for (unsigned gi = 0; gi < units; gi++) {
        const unsigned row = y + 8 * gi;
        if (row < lo || row >= hi)
            continue;
        for (unsigned pi = 0; pi < units; pi++)
            unit(w, s, nv, mode, payload, cls, gi, pi, x / 8 + pi, row, scale, bias, padded);
    }
}

/* A 4x4 leaf: cell x / 4 of rows y..y + 3 (4 lanes), stored to every other float. */
MV_INLINE void leaf_4x4(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned mode,
                        const uint8_t *payload, unsigned y, unsigned x, float scale, float bias,
                        bool padded)
{
    const unsigned k = x / 4, p = x / 8, j = k & 1u;
    const __m256i spread = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256i store = j ? _mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1)
                            : _mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0);
    uint64_t raw8 = 0;
    memcpy(&raw8, payload, mode ? 4 : 8);
    const __m128i raw = _mm_cvtsi64_si128((long long)raw8);
    __m256 c[SGFP4_MATVEC_CHUNK];
    if (s->class_a) {
        const __m256i u = mode ? t158_u(_mm256_cvtepu8_epi32(raw))
                               : fp4_u(_mm256_castsi128_si256(_mm_xor_si128(raw, _mm_set1_epi8((char)0x88))), 0);
        for (unsigned v = 0; v < nv; v++) {
            const mv_prep_a *a = &w->prep.a[v];
            int32_t q4;
            memcpy(&q4, (mode ? a->q : a->qperm) + 4 * k, 4);
            const __m256i acc = dot_u8_s8(_mm256_set1_epi32(mode ? a->mis[k] : a->m8is[k]), u,
                                          _mm256_set1_epi32(q4));
            c[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(scale),
                                   _mm256_set1_ps(bias * a->isf[k]));
        }
    } else {
        __m256 wc[4];
        if (mode) {
            const __m256 table = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_load_ps(t158_value),
                                                 _mm256_set1_ps(bias));
            for (unsigned m = 0; m < 4; m++)
                wc[m] = t158_column(_mm256_cvtepu8_epi32(raw), m, table);
        } else {
            const __m256i words = _mm256_cvtepu16_epi32(raw);
            for (unsigned m = 0; m < 4; m++)
                wc[m] = fp4_column(words, m, _mm256_set1_ps(scale), _mm256_set1_ps(bias));
        }
        for (unsigned v = 0; v < nv; v++) {
            const float(*xm)[2] = w->prep.b[v].xm[p];
            __m256 pr[4];
            for (unsigned m = 0; m < 4; m++) {
                pr[m] = _mm256_mul_ps(wc[m], _mm256_set1_ps(xm[m][j]));
                if (padded)
                    pr[m] = _mm256_and_ps(pr[m], _mm256_castsi256_ps(_mm256_set1_epi32((int)w->valid[p][m][j])));
            }
            c[v] = _mm256_add_ps(_mm256_add_ps(pr[0], pr[1]), _mm256_add_ps(pr[2], pr[3]));
        }
    }
    for (unsigned v = 0; v < nv; v++)
        _mm256_maskstore_ps(w->c2[v][p][y], store, _mm256_permutevar8x32_ps(c[v], spread));
}

/* The leaves of one kind from the block's entries. */
MV_INLINE void kind_leaves(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned kind,
                           const uint8_t *rec, const uint32_t *entries, unsigned count,
                           unsigned lo, unsigned hi, bool padded)
{
    const unsigned cls = kind >> 1, mode = kind & 1u, size = 4u << cls;
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

/* S and B of a record's n leaf headers, 8 at a time (exact conversions). */
MV_INLINE void convert_headers(mv_work *w, const uint8_t *h, unsigned n)
{
    unsigned i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(h + 4 * i));
        const __m256i lo16 = _mm256_and_si256(v, _mm256_set1_epi32(0xFFF0));
        const __m256i hi16 = _mm256_srli_epi32(v, 16);
        /* 8 dwords -> 8 words (values below 2^16: no saturation) */
        const __m128i s16 = _mm_packus_epi32(_mm256_castsi256_si128(hi16), _mm256_extracti128_si256(hi16, 1));
        const __m128i b16 = _mm_packus_epi32(_mm256_castsi256_si128(lo16), _mm256_extracti128_si256(lo16, 1));
        _mm256_store_ps(w->scale + i, _mm256_cvtph_ps(s16));
        _mm256_store_ps(w->bias + i, _mm256_cvtph_ps(b16));
    }
    for (; i < n; i++) {
        const uint32_t v = sgfp4_load_u32le(h + 4 * i);
        w->scale[i] = sgfp4_half_to_float_finite(v >> 16);
        w->bias[i] = sgfp4_half_to_float_finite(v & 0xFFF0u);
    }
}

/* ---- per-vector data of a block --------------------------------------------------------- */

MV_INLINE void prep_a(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, uint64_t bx)
{
    const __m256i order = _mm256_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15,
                                           0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15);
    for (unsigned v = 0; v < nv; v++) {
        mv_prep_a *a = &w->prep.a[v];
        const int8_t *q = sgfp4_q8_q(s->x, s->n0 + v) + bx * SGFP4_MB;
        for (unsigned h = 0; h < 2; h++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(q + 32 * h));
            _mm256_store_si256((__m256i *)(a->q + 32 * h), qv);
            _mm256_store_si256((__m256i *)(a->qperm + 32 * h), _mm256_shuffle_epi8(qv, order));
            const __m256i is = dot_u8_s8(_mm256_setzero_si256(), _mm256_set1_epi8(1), qv);
            const __m256i mis = _mm256_sub_epi32(_mm256_setzero_si256(), is);
            _mm256_store_si256((__m256i *)(a->mis + 8 * h), mis);
            _mm256_store_si256((__m256i *)(a->m8is + 8 * h), _mm256_slli_epi32(mis, 3));
            _mm256_store_ps(a->isf + 8 * h, _mm256_cvtepi32_ps(is));
        }
        a->d = sgfp4_q8_d(s->x, s->n0 + v, s->t->tiles_x, bx);
    }
}

MV_INLINE bool prep_b(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, uint64_t bx)
{
    const uint64_t c0 = bx * SGFP4_MB;
    const unsigned width = (unsigned)(s->t->cols - c0 < SGFP4_MB ? s->t->cols - c0 : SGFP4_MB);
    /* out lane 2m + j of a pair reads its column 4j + m */
    const __m256i arrange = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (unsigned v = 0; v < nv; v++) {
        const uint8_t *in = s->x->data + (s->n0 + v) * s->x->vector_bytes;
        float x[SGFP4_MB] __attribute__((aligned(32)));
        if (width == SGFP4_MB && s->x->dtype == SGFP4_DTYPE_F32) {
            memcpy(x, in + 4 * c0, sizeof x);
        } else {
            for (unsigned jj = 0; jj < SGFP4_MB; jj++)
                x[jj] = jj < width ? sgfp4_matvec_x_at(in, s->x->dtype, c0 + jj) : 0.0f;
        }
        for (unsigned p = 0; p < 8; p++) {
            const __m256 xv = _mm256_load_ps(x + 8 * p);
            const __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(xv), _mm256_set1_epi32(0x7FFFFFFF));
            const __m256i below = _mm256_cmpgt_epi32(_mm256_set1_epi32((127 - 60) << 23), magnitude);
            const __m256 kept = _mm256_andnot_ps(_mm256_castsi256_ps(below), xv);
            _mm256_store_ps(&w->prep.b[v].xm[p][0][0], _mm256_permutevar8x32_ps(kept, arrange));
        }
    }
    if (width == SGFP4_MB)
        return false;
    for (unsigned p = 0; p < 8; p++)
        for (unsigned m = 0; m < 4; m++)
            for (unsigned j = 0; j < 2; j++)
                w->valid[p][m][j] = 8 * p + 4 * j + m < width ? ~UINT32_C(0) : 0;
    return true;
}

/* ---- the cell tree ---------------------------------------------------------------------- */

MV_INLINE void cell_trees(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv,
                          float (*t)[SGFP4_MB])
{
    for (unsigned v = 0; v < nv; v++) {
        const float(*c)[SGFP4_MB][2] = w->c2[v];
        const __m256 d = _mm256_set1_ps(s->class_a ? w->prep.a[v].d : 1.0f);
        for (unsigned g = s->g0; g < s->g1; g++) {
            __m256 half[2];
            for (unsigned h = 0; h < 2; h++) {
                const unsigned r = 8 * g + 4 * h;
                const __m256 a0 = _mm256_add_ps(_mm256_load_ps(c[0][r]), _mm256_load_ps(c[4][r]));
                const __m256 a1 = _mm256_add_ps(_mm256_load_ps(c[1][r]), _mm256_load_ps(c[5][r]));
                const __m256 a2 = _mm256_add_ps(_mm256_load_ps(c[2][r]), _mm256_load_ps(c[6][r]));
                const __m256 a3 = _mm256_add_ps(_mm256_load_ps(c[3][r]), _mm256_load_ps(c[7][r]));
                half[h] = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
            }
            /* lanes r0 r1 r4 r5 | r2 r3 r6 r7, then in row order */
            const __m256 pairs = _mm256_hadd_ps(half[0], half[1]);
            const __m256 rows = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xD8));
            _mm256_storeu_ps(t[v] + 8 * g, s->class_a ? _mm256_mul_ps(rows, d) : rows);
        }
    }
}

/* ---- the block -------------------------------------------------------------------------- */

#include "matvec/block_walk.h"

MV_INLINE void mv_add(float *restrict a, const float *restrict b, unsigned count)
{
    for (unsigned i = 0; i < count; i += 8)
        _mm256_storeu_ps(a + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
}

/* prefetch the next strip while computing this one (strip_driver.h) */
#define MV_PREFETCH_NEXT 1
#include "matvec/strip_driver.h"

MV_FN void avx2_rows_q8(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                        const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    mv_strip(plan, r0, r1, x, y, true);
}

MV_FN void avx2_rows_float(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                           const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    mv_strip(plan, r0, r1, x, y, false);
}

/* The Class A quantizer: the reference's bytes, as the AVX-512 one computes them
 * (avx512_block.h): integer maximum of the magnitude bits, the reference's e, q = x * 2^-e
 * rounded to nearest even by the conversion (the products run in the default
 * floating-point environment; the scaling is exact where the result can round to nonzero). */
MV_FN void avx2_quantize(const void *in, sgfp4_dtype dtype, uint64_t cols, int8_t *q, uint8_t *d)
{
    const uint64_t tiles = (cols + 63u) / 64u;
    for (uint64_t b = 0; b < tiles; b++) {
        const uint64_t c0 = b * 64u;
        const unsigned width = (unsigned)(cols - c0 < 64u ? cols - c0 : 64u);
        float x[64] __attribute__((aligned(32)));
        if (width == 64 && dtype == SGFP4_DTYPE_F32) {
            memcpy(x, (const float *)in + c0, sizeof x);
        } else if (width == 64) {
            for (unsigned g = 0; g < 8; g++)
                _mm256_store_ps(x + 8 * g, _mm256_cvtph_ps(_mm_loadu_si128(
                                               (const __m128i *)((const uint16_t *)in + c0 + 8 * g))));
        } else {
            for (unsigned j = 0; j < 64; j++)
                x[j] = j < width ? sgfp4_matvec_x_at(in, dtype, c0 + j) : 0.0f;
        }
        __m256i m = _mm256_setzero_si256();
        for (unsigned g = 0; g < 8; g++)
            m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(_mm256_load_ps(x + 8 * g)),
                                                     _mm256_set1_epi32(0x7FFFFFFF)));
        uint32_t lanes[8];
        _mm256_storeu_si256((__m256i *)lanes, m);
        uint32_t max = 0;
        for (unsigned i = 0; i < 8; i++)
            max = lanes[i] > max ? lanes[i] : max;
        if (max < SGFP4_MATVEC_Q8_FLOOR) {
            memset(q + c0, 0, 64);
            sgfp4_store_u32le(d + 4 * b, 0);
            continue;
        }
        const int e = sgfp4_matvec_block_exponent(max);
        const __m256 scale = _mm256_castsi256_ps(_mm256_set1_epi32((127 - e) << 23)); /* 2^-e */
        for (unsigned g = 0; g < 2; g++) {
            __m256i qi[4];
            for (unsigned k = 0; k < 4; k++)
                qi[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_load_ps(x + 32 * g + 8 * k), scale));
            /* 32 int32 in [-127, 127] -> bytes in order (the packs work per 128-bit lane) */
            const __m256i w01 = _mm256_packs_epi32(qi[0], qi[1]), w23 = _mm256_packs_epi32(qi[2], qi[3]);
            const __m256i bytes = _mm256_packs_epi16(w01, w23);
            const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(q + c0 + 32 * g), ordered);
        }
        sgfp4_store_u32le(d + 4 * b, (uint32_t)(e + 127) << 23);
    }
}

const sgfp4_matvec_kernels sgfp4_matvec_kernels_avx2 = {"avx2", avx2_rows_q8, avx2_rows_float,
                                                        avx2_quantize, false};
#endif
