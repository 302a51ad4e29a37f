/* The AVX-512 matvec set, part 2 of 5 (matvec/avx512_units.h says what the set is and how it
 * is included): the leaves of the plan's table gathered into units whose cells go through the
 * tile, the per-vector data of a block, and the cell trees. No include guard: one instance per
 * file, after part 1.
 * SPDX-License-Identifier: MIT */

/* ---- leaves to units -------------------------------------------------------------------- */

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

