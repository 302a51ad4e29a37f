/* The AVX-512 matvec set, part 4 of 5 (matvec/avx512_units.h says what the set is and how it
 * is included): the blocks whose row groups are summed in registers: UNIFORM_8 records and
 * 64x64 leaves of FP4 leaves, and the blocks of the repacked layout. No include guard: one
 * instance per file, after part 3.
 * SPDX-License-Identifier: MIT */

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
    __m512 pending[MV_WIDE_CHUNK] = {0};
    unit_source src = {.w = w, .padded = padded, .bis = bis};
    for (unsigned g = s->g0; g < s->g1; g++) {
        src.codes = payload + 256 * g;
        src.scale = scale + 8 * g;
        src.bias = bias + 8 * g;
        __m512 rows[MV_WIDE_CHUNK];
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
    __m512 pending[MV_WIDE_CHUNK] = {0};
    for (unsigned g = s->g0; g < s->g1; g++) {
        const uint8_t *lines = payload + 256 * g;
        const __m512i z0 = _mm512_loadu_si512(lines), z1 = _mm512_loadu_si512(lines + 64);
        const __m512i z2 = _mm512_loadu_si512(lines + 128), z3 = _mm512_loadu_si512(lines + 192);
        for (unsigned k = 0; k < 2; k++) {
            const __m512i pick = _mm512_load_si512(rows_words_f64[k]);
            src.top[k] = _mm512_permutex2var_epi16(z0, pick, z1);
            src.bottom[k] = _mm512_permutex2var_epi16(z2, pick, z3);
        }
        __m512 rows[MV_WIDE_CHUNK];
        if (s->class_a)
            group_tree(UNITS_WHOLE_A, &src, nv, rows);
        else
            group_tree(UNITS_WHOLE_B, &src, nv, rows);
        for (unsigned v = 0; v < nv; v++)
            emit_group(t[v], rows[v], &pending[v], g, s->g0, s->g1,
                       s->class_a ? w->prep.a[v].d : 1.0f, s->class_a);
    }
}

/* ---- repacked paths: blocks of the plan's repacked layout ------------------------------- */

/* How far ahead of a repacked block its products prefetch, and how much (about one block at
 * 4.5 bits per weight), spread over its row groups, since one burst of prefetches per block
 * stalls the core (docs/notes/2026-12-matvec-experiments.md) */
#define MV_RP_AHEAD 8192u
#define MV_RP_BLOCK_GUESS 2560u

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

/* A group's tables (rp_group) from its meta. */
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
                                   __m512 rows[MV_WIDE_CHUNK])
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
    __m512 pending[MV_WIDE_CHUNK] = {0};
    for (unsigned g = s->g0; g < s->g1; g++) {
        repacked_prefetch(blk, g, s->n0 == 0);
        unsigned count;
        const uint8_t *meta = repacked_meta(blk, g, &count);
        /* the activations' pairs are broadcast from memory in each unit: opaque_pointer()
         * hides that they are the same in every group */
        unit_source src = {.w = w, .codes = blk + 256 * g, .prep = opaque_pointer(w->prep.a)};
        __m512 rows[MV_WIDE_CHUNK];
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
    __m512 pending[MV_WIDE_CHUNK] = {0};
    for (unsigned g = s->g0; g < s->g1; g++) {
        repacked_prefetch(blk, g, s->n0 == 0);
        unsigned count;
        const uint8_t *meta = repacked_meta(blk, g, &count);
        unit_source src = {.w = w, .padded = padded, .codes = blk + 256 * g};
        __m512 rows[MV_WIDE_CHUNK];
        repacked_group_tree(false, &src, meta, count, &scratch, nv, rows);
        for (unsigned v = 0; v < nv; v++)
            emit_group(t[v], rows[v], &pending[v], g, s->g0, s->g1, 1.0f, false);
    }
}

