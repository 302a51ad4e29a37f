/* The strip loop of matvec/strip.h, instantiated once per kernel set (this file has no
 * include guard: a set includes it after defining MV_FN, mv_work, mv_block and mv_add, and,
 * for chunks wider than SGFP4_MATVEC_CHUNK, MV_WIDE_CHUNK and mv_wide(plan, class_a): where
 * mv_wide() holds, mv_block() takes up to MV_WIDE_CHUNK vectors at once).
 * SPDX-License-Identifier: MIT */
MV_FN void mv_strip(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                    const sgfp4_matvec_x *x, const sgfp4_matvec_y *y, bool class_a)
{
    const sgfp4_tensor *t = plan->tensor;
    unsigned levels = 0;
    while ((UINT64_C(1) << levels) < t->tiles_x && levels < 63)
        levels++;
    if (levels + 1 > SGFP4_MATVEC_STACK) {
        const sgfp4_matvec_kernels *k = &sgfp4_matvec_kernels_scalar;
        (class_a ? k->rows_q8 : k->rows_float)(plan, r0, r1, x, y);
        return;
    }
    const uint64_t by = r0 / SGFP4_MB;
    const unsigned ya = (unsigned)(r0 % SGFP4_MB), yb = ya + (unsigned)(r1 - r0);
    sgfp4_matvec_strip s = {plan, t, x, class_a, by, ya / 8, (yb + 7) / 8, 0, 0};
    const unsigned lo = 8 * s.g0, count = 8 * (s.g1 - s.g0);
    /* the stack's memory: STACK entries of CHUNK vectors, or, for a set's wide chunks, as
     * many entries of MV_WIDE_CHUNK vectors as fit (enough for rows of 2^(that - 1) blocks) */
    float stack_mem[SGFP4_MATVEC_STACK * SGFP4_MATVEC_CHUNK][SGFP4_MB] __attribute__((aligned(64)));
    unsigned chunk = SGFP4_MATVEC_CHUNK;
#ifdef MV_WIDE_CHUNK
    if (mv_wide(plan, class_a) && x->batch > SGFP4_MATVEC_CHUNK &&
        (levels + 1) * MV_WIDE_CHUNK <= SGFP4_MATVEC_STACK * SGFP4_MATVEC_CHUNK)
        chunk = MV_WIDE_CHUNK;
#endif
    mv_work work;
    float *out = y->base + (by * SGFP4_MB + ya - y->row_begin);
#ifdef MV_READS_REPACK
    const bool repacked = plan->repack != NULL;
#else
    const bool repacked = false;
#endif
    if (!repacked) /* the repacked layout is prefetched as the blocks stream (the set's) */
        sgfp4_matvec_touch_strip(plan, by);
#ifdef MV_PREFETCH_NEXT
    /* the next strip's bytes, a slice after each block visit of the first chunk (a set
     * defines MV_PREFETCH_NEXT where this pays: docs/notes/2026-12-matvec-experiments.md) */
    const bool ahead = !repacked && (by + 1) * SGFP4_MB < t->rows;
    sgfp4_matvec_strip_bytes next;
    if (ahead)
        sgfp4_matvec_strip_bytes_get(plan, by + 1, &next);
#endif
    for (unsigned n0 = 0; n0 < x->batch; n0 += chunk) {
        s.n0 = n0;
        s.nv = x->batch - n0 < chunk ? x->batch - n0 : chunk;
        float(*const stack)[SGFP4_MB] = stack_mem; /* entry e, vector v: stack[e * chunk + v] */
        unsigned top = 0;
        for (uint64_t k = 0; k < UINT64_C(1) << levels; k++) {
            const uint64_t bx = sgfp4_bit_reverse(k, levels);
            if (bx < t->tiles_x) {
                mv_block(&s, bx, stack + top * chunk, &work);
            } else {
                for (unsigned v = 0; v < s.nv; v++) /* D8's +0 padding */
                    memset(stack[top * chunk + v] + lo, 0, count * sizeof(float));
            }
            top++;
#ifdef MV_PREFETCH_NEXT
            if (ahead && n0 == 0)
                sgfp4_matvec_prefetch_slice(&next, k, levels);
#endif
            for (uint64_t m = k; m & 1u; m >>= 1) {
                top--;
                for (unsigned v = 0; v < s.nv; v++)
                    mv_add(stack[(top - 1) * chunk + v] + lo, stack[top * chunk + v] + lo, count);
            }
        }
        for (unsigned v = 0; v < s.nv; v++)
            memcpy(out + (n0 + v) * y->stride, stack[v] + ya, (yb - ya) * sizeof(float));
    }
}

