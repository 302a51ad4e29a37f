/* The AVX-512 matvec set, part 5 of 5 (matvec/avx512_units.h says what the set is and how it
 * is included): the block (which path reads it), the strip loop's entry points, the Class A
 * quantizer and the kernel table. No include guard: one instance per file, after part 4.
 * SPDX-License-Identifier: MIT */

/* ---- the block -------------------------------------------------------------------------- */

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
        const uint32_t h = sgfp4_load_u32le(d + 4 * b);
        const uint8_t *payload = sgfp4_v1_payload(tensor, b);
        const float scale = sgfp4_half_to_float_finite(h >> 16);
        const float bias = sgfp4_half_to_float_finite(h & 0xFFFFu);
        if (!sgfp4_v1_mode(tensor, b)) {
            whole_fp4(w, s, nv, payload, scale, bias, t, padded);
            return;
        }
        leaf_units(w, s, nv, 4, SGFP4_MODE_T158, payload, 0, 0, scale, bias, lo, hi, padded);
        cell_trees(w, s, nv, t);
        return;
    }
    const uint8_t *rec = sgfp4_record_start(tensor, b);
    const unsigned layout = sgfp4_record_layout(tensor, b);
    const bool all_fp4 = sgfp4_record_all_fp4(tensor, b);
    if (layout == SGFP4_LAYOUT_UNIFORM_8 && all_fp4) {
        uniform8_fp4(w, s, nv, rec, t, padded);
        return;
    }
    if (layout == SGFP4_LAYOUT_UNIFORM_64 && all_fp4) {
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

/* A block of the repacked layout for a wide chunk of nv vectors (up to MV_WIDE_CHUNK): the
 * chunks mv_wide() allows. */
MV_INLINE void block_wide(const sgfp4_matvec_strip *s, uint64_t bx, float (*t)[SGFP4_MB],
                          mv_work *w, const unsigned nv)
{
    const uint8_t *blk = sgfp4_matvec_repacked_block(s->plan, s->by * s->t->tiles_x + bx);
    if (s->class_a) {
        prep_a(w, s, nv, bx);
        repacked_a(w, s, nv, blk, t);
    } else if (prep_b(w, s, nv, bx, true)) { /* padded: a constant in each copy */
        repacked_b(w, s, nv, blk, t, true);
    } else {
        repacked_b(w, s, nv, blk, t, false);
    }
}

/* Whether the strip loop may hand mv_block() up to MV_WIDE_CHUNK vectors: on the repacked
 * layout, whose paths hold no per-vector tile. */
MV_INLINE bool mv_wide(const sgfp4_matvec_plan *plan, bool class_a)
{
    (void)class_a;
    return plan->repack != NULL;
}

/* The block for the chunk's vector count, a constant in each copy. */
MV_INLINE void mv_block(const sgfp4_matvec_strip *s, uint64_t bx, float (*t)[SGFP4_MB],
                        mv_work *w)
{
    switch (s->nv) {
    case 1: block_nv(s, bx, t, w, 1); break;
    case 2: block_nv(s, bx, t, w, 2); break;
    case 3: block_nv(s, bx, t, w, 3); break;
    case 4: block_nv(s, bx, t, w, 4); break;
    case 5: block_wide(s, bx, t, w, 5); break;
    case 6: block_wide(s, bx, t, w, 6); break;
    case 7: block_wide(s, bx, t, w, 7); break;
    default: block_wide(s, bx, t, w, 8); break;
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
 * MV_RP_AHEAD bytes ahead instead of the touch pass and the next-strip prefetch
 * (docs/notes/2026-12-matvec-experiments.md) */
#define MV_READS_REPACK 1
/* the strip loop inlined into each class's entry point, so that each is compiled for its
 * class alone (one shared copy slows Class A: docs/notes/2026-12-matvec-experiments.md) */
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
