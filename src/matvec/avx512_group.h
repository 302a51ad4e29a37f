/* The AVX-512 matvec set, part 3 of 5 (matvec/avx512_units.h says what the set is and how it
 * is included): the row groups summed in registers: how each form computes a unit's cells
 * (whole FP4 blocks, the repacked layout) and the tree over a group's units. No include guard:
 * one instance per file, after part 2.
 * SPDX-License-Identifier: MIT */

/* ---- a unit's cells in registers, and the direct paths' units --------------------------- */

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

/* ---- the repacked paths' units ---------------------------------------------------------- */

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

/* A group with a unit of several leaves: its tile indices and its S and B tables, 32
 * entries in two registers each (entries past its count are 0). */
typedef struct rp_group {
    const uint8_t *meta;
    __m512 s_lo, s_hi, b_lo, b_hi;
} rp_group;

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

/* ---- the row group tree ----------------------------------------------------------------- */

/* Unit p's cells of every vector, as `form` computes them: c[v], or with `add` c[v] plus
 * them. */
MV_INLINE void unit_cells(unit_form form, const unit_source *src, unsigned p, unsigned nv,
                          __m512 *c, bool add)
{
    __m512 cells[MV_WIDE_CHUNK];
    switch (form) {
    case UNITS_UNIFORM8_A:
    case UNITS_WHOLE_A: direct_unit_a(form, src, p, nv, cells); break;
    case UNITS_UNIFORM8_B:
    case UNITS_WHOLE_B: direct_unit_b(form, src, p, nv, cells); break;
    case UNITS_PAIRS_A: repacked_unit_a(true, src, p, nv, cells); break;
    case UNITS_TABLE_A: repacked_unit_a(false, src, p, nv, cells); break;
    case UNITS_PAIRS_B: repacked_unit_b(true, src, p, nv, cells); break;
    case UNITS_TABLE_B: repacked_unit_b(false, src, p, nv, cells); break;
    }
    MV_UNROLL for (unsigned v = 0; v < nv; v++)
        c[v] = add ? _mm512_add_ps(c[v], cells[v]) : cells[v];
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
 * the second of each pair added as it comes (a + b and b + a are the same bits), so that at
 * most three sets of partial sums are live (a wide chunk's 8 vectors stay in registers). */
MV_INLINE void group_tree(unit_form form, const unit_source *src, unsigned nv,
                          __m512 rows[MV_WIDE_CHUNK])
{
    __m512 l[MV_WIDE_CHUNK], r[MV_WIDE_CHUNK], h[MV_WIDE_CHUNK];
    unit_cells(form, src, 0, nv, l, false);
    unit_cells(form, src, 4, nv, l, true);
    unit_cells(form, src, 2, nv, r, false);
    unit_cells(form, src, 6, nv, r, true);
    add_cells(h, l, r, nv);
    unit_cells(form, src, 1, nv, l, false);
    unit_cells(form, src, 5, nv, l, true);
    unit_cells(form, src, 3, nv, r, false);
    unit_cells(form, src, 7, nv, r, true);
    add_cells(l, l, r, nv);
    add_cells(rows, h, l, nv);
}
