/* The walk over one block for the kernel sets without in-register record paths (AVX2,
 * NEON): v1's one leaf, or the v2 leaf table's entries kind by kind (constant kinds, so each
 * loop is specialised), then the cell trees; mv_block picks the vector count as a constant.
 * The includer defines the set's prep_a, prep_b, convert_headers, leaf_units, kind_leaves
 * and cell_trees (and MV_INLINE) before including it. No include guard: one instance per
 * file, like strip_driver.h.
 * SPDX-License-Identifier: MIT */

MV_INLINE void block_nv(const sgfp4_matvec_strip *s, uint64_t bx, float (*t)[SGFP4_MB],
                        mv_work *w, const unsigned nv)
{
    const sgfp4_tensor *tensor = s->t;
    const uint64_t b = s->by * tensor->tiles_x + bx;
    const bool padded = s->class_a ? (prep_a(w, s, nv, bx), false) : prep_b(w, s, nv, bx);
    const unsigned lo = 8 * s->g0, hi = 8 * s->g1;
    if (tensor->profile == SGFP4_PROFILE_V1) {
        const uint32_t h = sgfp4_load_u32le(tensor->data + 4 * b);
        const float scale = sgfp4_half_to_float_finite(h >> 16);
        const float bias = sgfp4_half_to_float_finite(h & 0xFFFFu);
        const uint8_t *payload = sgfp4_v1_payload(tensor, b);
        if (sgfp4_v1_mode(tensor, b))
            leaf_units(w, s, nv, 4, SGFP4_MODE_T158, payload, 0, 0, scale, bias, lo, hi, padded);
        else
            leaf_units(w, s, nv, 4, SGFP4_MODE_FP4, payload, 0, 0, scale, bias, lo, hi, padded);
    } else {
        sgfp4_matvec_block_view view;
        sgfp4_matvec_block_view_get(s->plan, b, &view);
        convert_headers(w, view.headers, view.leaves);
        const uint32_t *e = view.entries;
        for (unsigned kind = 0; kind < SGFP4_LEAF_KINDS; e += view.count[kind], kind++) {
            const unsigned n = view.count[kind];
            if (!n)
                continue;
            switch (kind) { /* constant kinds, so that each loop is specialised */
            case 0: kind_leaves(w, s, nv, 0, view.rec, e, n, lo, hi, padded); break;
            case 1: kind_leaves(w, s, nv, 1, view.rec, e, n, lo, hi, padded); break;
            case 2: kind_leaves(w, s, nv, 2, view.rec, e, n, lo, hi, padded); break;
            case 3: kind_leaves(w, s, nv, 3, view.rec, e, n, lo, hi, padded); break;
            case 4: kind_leaves(w, s, nv, 4, view.rec, e, n, lo, hi, padded); break;
            case 5: kind_leaves(w, s, nv, 5, view.rec, e, n, lo, hi, padded); break;
            case 6: kind_leaves(w, s, nv, 6, view.rec, e, n, lo, hi, padded); break;
            case 7: kind_leaves(w, s, nv, 7, view.rec, e, n, lo, hi, padded); break;
            case 8: kind_leaves(w, s, nv, 8, view.rec, e, n, lo, hi, padded); break;
            default: kind_leaves(w, s, nv, 9, view.rec, e, n, lo, hi, padded); break;
            }
        }
    }
    cell_trees(w, s, nv, t);
}

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
