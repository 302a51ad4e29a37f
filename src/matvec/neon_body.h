/* The AArch64 Advanced SIMD (NEON) matvec kernels, compiled twice: matvec_neon_dot.c
 * (MV_DOT 1: the dot products by SDOT, Armv8.2 DotProd, detected at run time) and
 * matvec_neon.c (MV_DOT 0: SMULL + pairwise adds, every AArch64 CPU). The includer
 * defines MV_DOT, MV_ATTR (the function attributes: a target or nothing), MV_SET_NAME and
 * MV_SET. No include guard: one instance per file.
 *
 * The plan of the x86 sets (matvec/avx512_units.h) in 4-lane registers: units of 8 rows x 2
 * cells (four registers of 2 rows x 2 cells) in an 8x8 leaf's row-major layout (plain loads
 * for 8x8 leaves, de-interleaving loads (LD2/LD4) or lane loads for larger ones), the
 * [cell pair][row][2] tile, the cell tree as vertical adds and the pairs by FADDP.
 *
 * Codes are signed bytes (FP4 nibbles sign-extended by shifts, T158 symbols through a
 * table), so the integer dot products need no offset: Class A iq = dot(code, q) exactly,
 * c = fma(S, iq, B is) (both products exact: one rounding of the exact sum, D8). FP4 cells
 * are laid out [lo b0, lo b1, hi b0, hi b1] (columns 0, 2, 1, 3, q permuted to match),
 * T158 cells in column order. Class B takes each column's code from those bytes, w =
 * fma(B, S, code) (exact product: D1), p = w * x, c = (p0 + p1) + (p2 + p3).
 * SPDX-License-Identifier: MIT */
#include <arm_neon.h>

#include "listing/leaf_list.h"
#include "matvec/strip.h"

#define MV_FN static MV_ATTR
#define MV_INLINE static inline MV_ATTR __attribute__((always_inline))

typedef struct __attribute__((aligned(16))) mv_prep_a {
    int8_t qperm[64]; /* q with each cell's columns as 0, 2, 1, 3 (the FP4 byte order) */
    int8_t q[64];
    float isf[16]; /* the cell sums is, as float */
    float d;
} mv_prep_a;

typedef struct __attribute__((aligned(16))) mv_prep_b {
    float xm[8][4][2]; /* [pair p][column m][cell j]: x of column 8p + 4j + m */
} mv_prep_b;

typedef struct mv_work {
    float c2[SGFP4_MATVEC_CHUNK][8][SGFP4_MB][2] __attribute__((aligned(16)));
    union {
        mv_prep_a a[SGFP4_MATVEC_CHUNK];
        mv_prep_b b[SGFP4_MATVEC_CHUNK];
    } prep;
    uint32_t valid[8][4][2] __attribute__((aligned(16)));
    float scale[SGFP4_MAX_LEAVES] __attribute__((aligned(16)));
    float bias[SGFP4_MAX_LEAVES] __attribute__((aligned(16)));
} mv_work;

/* ---- codes ---------------------------------------------------------------------------- */

/* FP4: 16 payload bytes (8 cells) -> two registers of 4 cells, each [lo b0, lo b1, hi b0,
 * hi b1] sign-extended. */
MV_INLINE void fp4_codes(uint8x16_t v, int8x16_t out[2])
{
    const int8x16_t s = vreinterpretq_s8_u8(v);
    const int8x16_t lo = vshrq_n_s8(vshlq_n_s8(s, 4), 4), hi = vshrq_n_s8(s, 4);
    out[0] = vreinterpretq_s8_s16(vzip1q_s16(vreinterpretq_s16_s8(lo), vreinterpretq_s16_s8(hi)));
    out[1] = vreinterpretq_s8_s16(vzip2q_s16(vreinterpretq_s16_s8(lo), vreinterpretq_s16_s8(hi)));
}

/* T158: 4 cell bytes (bytes 4k..4k + 3 of v) -> 4 cells of 4 signed codes in column order. */
MV_INLINE int8x16_t t158_codes(uint8x16_t v, unsigned k)
{
    const uint8x16_t spread = vaddq_u8(vcombine_u8(vcreate_u8(0x0101010100000000ull),
                                                   vcreate_u8(0x0303030302020202ull)),
                                       vdupq_n_u8((uint8_t)(4 * k)));
    const int8x16_t shifts = vreinterpretq_s8_u32(vdupq_n_u32(0xFAFCFE00u)); /* 0, -2, -4, -6 */
    const uint8x16_t symbols =
        vandq_u8(vshlq_u8(vqtbl1q_u8(v, spread), shifts), vdupq_n_u8(3));
    const int8x16_t value = vreinterpretq_s8_u32(vdupq_n_u32(0x00FF0100u)); /* 0, 1, -1, 0 */
    return vqtbl1q_s8(value, symbols);
}

/* The 4 cells' dot products with q (4 bytes per lane). */
MV_INLINE int32x4_t dot4(int8x16_t codes, int8x16_t q)
{
#if MV_DOT
    return vdotq_s32(vdupq_n_s32(0), codes, q);
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(codes), vget_low_s8(q));
    const int16x8_t hi = vmull_high_s8(codes, q);
    return vpaddlq_s16(vpaddq_s16(lo, hi)); /* pairs of at most 2 * 8 * 127: no overflow */
#endif
}

/* A unit's 8 rows of 4 FP4 bytes (cells 2 pi, 2 pi + 1) of a leaf of class cls, rows
 * 8 gi.. : row i at bytes 4i of the two registers. */
MV_INLINE void fp4_unit(const uint8_t *payload, unsigned cls, unsigned gi, unsigned pi,
                        uint8x16_t out[2])
{
    const unsigned row_bytes = 2u << cls;
    const uint8_t *p = payload + 8 * gi * row_bytes;
    if (cls == 1) {
        out[0] = vld1q_u8(p);
        out[1] = vld1q_u8(p + 16);
    } else if (cls == 2) { /* rows of 2 dwords: de-interleave 4 rows at a time */
        const uint32x4x2_t a = vld2q_u32((const uint32_t *)(const void *)p);
        const uint32x4x2_t b = vld2q_u32((const uint32_t *)(const void *)(p + 32));
        out[0] = vreinterpretq_u8_u32(pi ? a.val[1] : a.val[0]);
        out[1] = vreinterpretq_u8_u32(pi ? b.val[1] : b.val[0]);
    } else if (cls == 3) { /* rows of 4 dwords */
        const uint32x4x4_t a = vld4q_u32((const uint32_t *)(const void *)p);
        const uint32x4x4_t b = vld4q_u32((const uint32_t *)(const void *)(p + 64));
        out[0] = vreinterpretq_u8_u32(a.val[pi]);
        out[1] = vreinterpretq_u8_u32(b.val[pi]);
    } else { /* rows of 8 dwords: one lane at a time */
        uint32x4_t r[2] = {vdupq_n_u32(0), vdupq_n_u32(0)};
        const uint8_t *q = p + 4 * pi;
        r[0] = vld1q_lane_u32((const uint32_t *)(const void *)q, r[0], 0);
        r[0] = vld1q_lane_u32((const uint32_t *)(const void *)(q + row_bytes), r[0], 1);
        r[0] = vld1q_lane_u32((const uint32_t *)(const void *)(q + 2 * row_bytes), r[0], 2);
        r[0] = vld1q_lane_u32((const uint32_t *)(const void *)(q + 3 * row_bytes), r[0], 3);
        r[1] = vld1q_lane_u32((const uint32_t *)(const void *)(q + 4 * row_bytes), r[1], 0);
        r[1] = vld1q_lane_u32((const uint32_t *)(const void *)(q + 5 * row_bytes), r[1], 1);
        r[1] = vld1q_lane_u32((const uint32_t *)(const void *)(q + 6 * row_bytes), r[1], 2);
        r[1] = vld1q_lane_u32((const uint32_t *)(const void *)(q + 7 * row_bytes), r[1], 3);
        out[0] = vreinterpretq_u8_u32(r[0]);
        out[1] = vreinterpretq_u8_u32(r[1]);
    }
}

/* A unit's 8 rows of 2 T158 bytes: row i at bytes 2i. */
MV_INLINE uint8x16_t t158_unit(const uint8_t *payload, unsigned cls, unsigned gi, unsigned pi)
{
    const unsigned row_bytes = 1u << cls;
    const uint8_t *p = payload + 8 * gi * row_bytes;
    if (cls == 1)
        return vld1q_u8(p);
    if (cls == 2) { /* rows of 2 words */
        const uint16x8x2_t a = vld2q_u16((const uint16_t *)(const void *)p);
        return vreinterpretq_u8_u16(pi ? a.val[1] : a.val[0]);
    }
    if (cls == 3) { /* rows of 4 words */
        const uint16x8x4_t a = vld4q_u16((const uint16_t *)(const void *)p);
        return vreinterpretq_u8_u16(a.val[pi]);
    }
    uint16x8_t r = vdupq_n_u16(0);
    const uint8_t *q = p + 2 * pi;
    r = vld1q_lane_u16((const uint16_t *)(const void *)q, r, 0);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + row_bytes), r, 1);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + 2 * row_bytes), r, 2);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + 3 * row_bytes), r, 3);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + 4 * row_bytes), r, 4);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + 5 * row_bytes), r, 5);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + 6 * row_bytes), r, 6);
    r = vld1q_lane_u16((const uint16_t *)(const void *)(q + 7 * row_bytes), r, 7);
    return vreinterpretq_u8_u16(r);
}

/* The code dwords of a unit: 4 registers of 4 cells (rows 2r, 2r + 1, cells j). */
MV_INLINE void unit_codes(const uint8_t *payload, unsigned cls, unsigned mode, unsigned gi,
                          unsigned pi, int8x16_t codes[4])
{
    if (mode == SGFP4_MODE_FP4) {
        uint8x16_t raw[2];
        fp4_unit(payload, cls, gi, pi, raw);
        fp4_codes(raw[0], codes);
        fp4_codes(raw[1], codes + 2);
    } else {
        const uint8x16_t raw = t158_unit(payload, cls, gi, pi);
        for (unsigned k = 0; k < 4; k++)
            codes[k] = t158_codes(raw, k);
    }
}

/* ---- cells ---------------------------------------------------------------------------- */

MV_INLINE int8x16_t dup64(const int8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return vreinterpretq_s8_u64(vdupq_n_u64(v));
}

MV_INLINE float32x4_t dup64f(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return vreinterpretq_f32_u64(vdupq_n_u64(v));
}

/* Class A: c of 4 cells. q: the cells' q bytes in the codes' order; shifted = B * is. */
MV_INLINE float32x4_t cells_a(int8x16_t codes, int8x16_t q, float32x4_t scale,
                              float32x4_t shifted)
{
    return vfmaq_f32(shifted, scale, vcvtq_f32_s32(dot4(codes, q)));
}

/* Class B: the weight of column m (byte `pos` of each code dword), times x. */
MV_INLINE float32x4_t column_product(int8x16_t codes, unsigned pos, float32x4_t scale,
                                     float32x4_t bias, float32x4_t x)
{
    const int32x4_t d = vreinterpretq_s32_s8(codes);
    int32x4_t code;
    switch (pos) { /* the byte sign-extended: to the top, then an arithmetic shift */
    case 0: code = vshrq_n_s32(vshlq_n_s32(d, 24), 24); break;
    case 1: code = vshrq_n_s32(vshlq_n_s32(d, 16), 24); break;
    case 2: code = vshrq_n_s32(vshlq_n_s32(d, 8), 24); break;
    default: code = vshrq_n_s32(d, 24); break;
    }
    const float32x4_t w = vfmaq_f32(bias, scale, vcvtq_f32_s32(code)); /* exact product */
    return vmulq_f32(w, x);
}

MV_INLINE float32x4_t cells_b(const mv_work *w, unsigned v, int8x16_t codes, unsigned mode,
                              unsigned p, float32x4_t scale, float32x4_t bias, bool padded)
{
    static const unsigned fp4_pos[4] = {0, 2, 1, 3}; /* column m's byte in an FP4 dword */
    const float(*xm)[2] = w->prep.b[v].xm[p];
    float32x4_t pr[4];
    for (unsigned m = 0; m < 4; m++) {
        pr[m] = column_product(codes, mode ? m : fp4_pos[m], scale, bias, dup64f(xm[m]));
        if (padded) /* D8: +0 in padding columns, not w * 0 */
            pr[m] = vreinterpretq_f32_u32(
                vandq_u32(vreinterpretq_u32_f32(pr[m]), vreinterpretq_u32_f32(dup64f(w->valid[p][m]))));
    }
    return vaddq_f32(vaddq_f32(pr[0], pr[1]), vaddq_f32(pr[2], pr[3]));
}

/* ---- units and leaves ----------------------------------------------------------------- */

MV_INLINE void unit(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned cls,
                    unsigned mode, const uint8_t *payload, unsigned gi, unsigned pi, unsigned p,
                    unsigned row, float scale, float bias, bool padded)
{
    int8x16_t codes[4];
    unit_codes(payload, cls, mode, gi, pi, codes);
    const float32x4_t sv = vdupq_n_f32(scale), bv = vdupq_n_f32(bias);
    for (unsigned v = 0; v < nv; v++) {
        if (s->class_a) {
            const mv_prep_a *a = &w->prep.a[v];
            const int8x16_t q = dup64((mode ? a->q : a->qperm) + 8 * p);
            const float32x4_t shifted = vmulq_f32(dup64f(a->isf + 2 * p), bv);
            for (unsigned r = 0; r < 4; r++)
                vst1q_f32(w->c2[v][p][row + 2 * r], cells_a(codes[r], q, sv, shifted));
        } else {
            for (unsigned r = 0; r < 4; r++)
                vst1q_f32(w->c2[v][p][row + 2 * r], cells_b(w, v, codes[r], mode, p, sv, bv, padded));
        }
    }
}

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
            unit(w, s, nv, cls, mode, payload, gi, pi, x / 8 + pi, row, scale, bias, padded);
    }
}

/* A 4x4 leaf: cell x / 4 of rows y..y + 3, one lane per row. */
MV_INLINE void leaf_4x4(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, unsigned mode,
                        const uint8_t *payload, unsigned y, unsigned x, float scale, float bias,
                        bool padded)
{
    const unsigned k = x / 4, p = x / 8, j = k & 1u;
    uint8_t raw[16] = {0};
    memcpy(raw, payload, mode ? 4 : 8);
    int8x16_t codes;
    if (mode == SGFP4_MODE_FP4) {
        int8x16_t two[2];
        fp4_codes(vld1q_u8(raw), two); /* words 0..3 are the rows */
        codes = two[0];
    } else {
        codes = t158_codes(vld1q_u8(raw), 0);
    }
    const float32x4_t sv = vdupq_n_f32(scale), bv = vdupq_n_f32(bias);
    for (unsigned v = 0; v < nv; v++) {
        float32x4_t c;
        if (s->class_a) {
            const mv_prep_a *a = &w->prep.a[v];
            uint32_t q4;
            memcpy(&q4, (mode ? a->q : a->qperm) + 4 * k, 4);
            c = cells_a(codes, vreinterpretq_s8_u32(vdupq_n_u32(q4)), sv,
                        vdupq_n_f32(bias * a->isf[k]));
        } else {
            static const unsigned fp4_pos[4] = {0, 2, 1, 3};
            const float(*xm)[2] = w->prep.b[v].xm[p];
            float32x4_t pr[4];
            for (unsigned m = 0; m < 4; m++) {
                pr[m] = column_product(codes, mode ? m : fp4_pos[m], sv, bv, vdupq_n_f32(xm[m][j]));
                if (padded)
                    pr[m] = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(pr[m]),
                                                            vdupq_n_u32(w->valid[p][m][j])));
            }
            c = vaddq_f32(vaddq_f32(pr[0], pr[1]), vaddq_f32(pr[2], pr[3]));
        }
        float *out = &w->c2[v][p][y][j];
        vst1q_lane_f32(out, c, 0);
        vst1q_lane_f32(out + 2, c, 1);
        vst1q_lane_f32(out + 4, c, 2);
        vst1q_lane_f32(out + 6, c, 3);
    }
}

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

/* S and B of a record's n leaf headers (exact: fp16 subnormals as an exact scaling). */
MV_INLINE void convert_headers(mv_work *w, const uint8_t *h, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const uint32_t v = sgfp4_load_u32le(h + 4 * i);
        w->scale[i] = sgfp4_half_to_float_finite(v >> 16);
        w->bias[i] = sgfp4_half_to_float_finite(v & 0xFFF0u);
    }
}

/* ---- per-vector data -------------------------------------------------------------------- */

MV_INLINE void prep_a(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, uint64_t bx)
{
    const uint8x16_t order = vcombine_u8(vcreate_u8(0x0705060403010200ull),
                                         vcreate_u8(0x0F0D0E0C0B090A08ull));
    for (unsigned v = 0; v < nv; v++) {
        mv_prep_a *a = &w->prep.a[v];
        const int8_t *q = sgfp4_q8_q(s->x, s->n0 + v) + bx * SGFP4_MB;
        for (unsigned h = 0; h < 4; h++) {
            const int8x16_t qv = vld1q_s8(q + 16 * h);
            vst1q_s8(a->q + 16 * h, qv);
            vst1q_s8(a->qperm + 16 * h, vqtbl1q_s8(qv, order));
            vst1q_f32(a->isf + 4 * h, vcvtq_f32_s32(vpaddlq_s16(vpaddlq_s8(qv))));
        }
        a->d = sgfp4_q8_d(s->x, s->n0 + v, s->t->tiles_x, bx);
    }
}

MV_INLINE bool prep_b(mv_work *w, const sgfp4_matvec_strip *s, unsigned nv, uint64_t bx)
{
    const uint64_t c0 = bx * SGFP4_MB;
    const unsigned width = (unsigned)(s->t->cols - c0 < SGFP4_MB ? s->t->cols - c0 : SGFP4_MB);
    for (unsigned v = 0; v < nv; v++) {
        const uint8_t *in = s->x->data + (s->n0 + v) * s->x->vector_bytes;
        float x[SGFP4_MB] __attribute__((aligned(16)));
        for (unsigned jj = 0; jj < SGFP4_MB; jj++) {
            const float f = jj < width ? sgfp4_matvec_x_at(in, s->x->dtype, c0 + jj) : 0.0f;
            x[jj] = (sgfp4_float_to_bits(f) & 0x7FFFFFFFu) < (127u - 60u) << 23 ? 0.0f : f;
        }
        for (unsigned p = 0; p < 8; p++) {
            const float32x4_t first = vld1q_f32(x + 8 * p), second = vld1q_f32(x + 8 * p + 4);
            vst1q_f32(&w->prep.b[v].xm[p][0][0], vzip1q_f32(first, second));
            vst1q_f32(&w->prep.b[v].xm[p][2][0], vzip2q_f32(first, second));
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
        const float32x4_t d = vdupq_n_f32(s->class_a ? w->prep.a[v].d : 1.0f);
        for (unsigned g = s->g0; g < s->g1; g++) {
            float32x4_t rows2[4]; /* rows 2r, 2r + 1, two cells each */
            for (unsigned r = 0; r < 4; r++) {
                const unsigned y = 8 * g + 2 * r;
                const float32x4_t a0 = vaddq_f32(vld1q_f32(c[0][y]), vld1q_f32(c[4][y]));
                const float32x4_t a1 = vaddq_f32(vld1q_f32(c[1][y]), vld1q_f32(c[5][y]));
                const float32x4_t a2 = vaddq_f32(vld1q_f32(c[2][y]), vld1q_f32(c[6][y]));
                const float32x4_t a3 = vaddq_f32(vld1q_f32(c[3][y]), vld1q_f32(c[7][y]));
                rows2[r] = vaddq_f32(vaddq_f32(a0, a2), vaddq_f32(a1, a3));
            }
            for (unsigned h = 0; h < 2; h++) {
                const float32x4_t sum = vpaddq_f32(rows2[2 * h], rows2[2 * h + 1]);
                vst1q_f32(t[v] + 8 * g + 4 * h, s->class_a ? vmulq_f32(sum, d) : sum);
            }
        }
    }
}

/* ---- the block -------------------------------------------------------------------------- */

#include "matvec/block_walk.h"

MV_INLINE void mv_add(float *restrict a, const float *restrict b, unsigned count)
{
    for (unsigned i = 0; i < count; i += 4)
        vst1q_f32(a + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
}

#include "matvec/strip_driver.h"

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

/* The Class A quantizer: the reference's bytes (matvec/matvec_quantize.c): integer maximum of the
 * magnitude bits, the reference's e, q = x * 2^-e converted with FCVTNS (nearest even, by
 * its encoding). The scaling by a power of two is exact where the product can round to a
 * nonzero q (below 2^-126, |x * 2^-e| < 2^-80 rounds to 0 under any FPCR mode). */
MV_FN void mv_quantize(const void *in, sgfp4_dtype dtype, uint64_t cols, int8_t *q, uint8_t *d)
{
    const uint64_t tiles = (cols + 63u) / 64u;
    for (uint64_t b = 0; b < tiles; b++) {
        const uint64_t c0 = b * 64u;
        const unsigned width = (unsigned)(cols - c0 < 64u ? cols - c0 : 64u);
        float x[64] __attribute__((aligned(16)));
        if (width == 64 && dtype == SGFP4_DTYPE_F32)
            memcpy(x, (const float *)in + c0, sizeof x);
        else
            for (unsigned j = 0; j < 64; j++)
                x[j] = j < width ? sgfp4_matvec_x_at(in, dtype, c0 + j) : 0.0f;
        uint32x4_t m = vdupq_n_u32(0);
        for (unsigned g = 0; g < 16; g++)
            m = vmaxq_u32(m, vandq_u32(vreinterpretq_u32_f32(vld1q_f32(x + 4 * g)),
                                       vdupq_n_u32(0x7FFFFFFFu)));
        const uint32_t max = vmaxvq_u32(m);
        if (max < SGFP4_MATVEC_Q8_FLOOR) {
            memset(q + c0, 0, 64);
            sgfp4_store_u32le(d + 4 * b, 0);
            continue;
        }
        const int e = sgfp4_matvec_block_exponent(max);
        const float32x4_t scale = vreinterpretq_f32_u32(vdupq_n_u32((uint32_t)(127 - e) << 23));
        for (unsigned g = 0; g < 4; g++) {
            int16x8_t h[2];
            for (unsigned k = 0; k < 2; k++) {
                const int32x4_t a = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 16 * g + 8 * k), scale));
                const int32x4_t c = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 16 * g + 8 * k + 4), scale));
                h[k] = vcombine_s16(vmovn_s32(a), vmovn_s32(c));
            }
            vst1q_s8(q + c0 + 16 * g, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
        }
        sgfp4_store_u32le(d + 4 * b, (uint32_t)(e + 127) << 23);
    }
}

const sgfp4_matvec_kernels MV_SET = {MV_SET_NAME, mv_rows_q8, mv_rows_float, mv_quantize, false};
