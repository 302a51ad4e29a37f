/* The block-by-block decode loop the SIMD kernel sets share: a block's leaves are decoded
 * into one of two 64x64 f32 tiles (32 KB: L1) while the previous tile's rows are written
 * out in proportion to the work done (after each leaf, up to rows * weights_done / 4096),
 * so that the memory writes overlap the computation instead of coming in one burst. Whole
 * blocks go kind by kind (size class and mode: straight-line code per kind, no per-leaf
 * dispatch), one 64x64 leaf row by row; a gather decodes only the leaves, and in them the
 * vectors, that hold requested rows.
 *
 * Included at the end of a kernel file (after tile_job.h and its own code), which defines:
 *   TILE_INLINE, TILE_FN  the attributes of its always-inlined and out-of-line functions
 *                         (its target ISA)
 *   tile_codes            a leaf's per-leaf set-up, and
 *     TILE_INLINE tile_codes tile_codes_of(const sgfp4_leaf_list *, unsigned i, unsigned mode);
 *     TILE_INLINE void tile_leaf_whole(const sgfp4_leaf_list *, unsigned i, float *tile,
 *                                      unsigned size, unsigned mode);
 *     TILE_INLINE void tile_leaf_row64(const tile_codes *, float *tile, unsigned y,
 *                                      unsigned mode);          row y of a 64x64 leaf
 *     TILE_FN void tile_leaf_selected(const sgfp4_leaf_list *, unsigned i, uint64_t rows,
 *                                     float *tile);             the vectors holding `rows`
 *     TILE_FN unsigned tile_list_leaves(const sgfp4_tensor *, uint64_t b, sgfp4_leaf_list *);
 *     TILE_INLINE void tile_store_plain(uint8_t *p, const float *src, unsigned width,
 *                                       sgfp4_dtype);   `width` values of a tile row, plainly
 *   TILE_CAN_STREAM          1 if the set has streaming stores, then (write_row() below
 *                            decides which runs):
 *     TILE_STREAM_ALIGN      the address granule (bytes) of rows it can stream
 *     TILE_INLINE void tile_stream_aligned(uint8_t *p, const float *src, sgfp4_dtype);
 *                                                    a whole tile row at a line start
 *     TILE_INLINE void tile_stream_inner(uint8_t *p, const float *src, sgfp4_dtype,
 *                                        unsigned shift, uint8_t carry[64]);
 *                            a whole tile row neither first nor last in its output row,
 *                            `shift` bytes past a line start: the line it completes and
 *                            the lines it fills; keeps its unfinished line in the carry
 *     TILE_INLINE void tile_stream_edge(uint8_t *p, const float *src, sgfp4_dtype,
 *                                       unsigned bytes, unsigned shift, bool first,
 *                                       bool last, uint8_t carry[64]);
 *                            the same for the row's first or last piece: partial lines
 *                            at the row's ends as plain stores
 * Defines tile_decode_rows(), a sgfp4_decode_kernels.decode_rows (scratch: 2 tiles).
 * SPDX-License-Identifier: MIT */

/* A decoded tile whose rows ys[next..count) still have to be written out, `width` values
 * each at byte `column` of their output rows. */
typedef struct pending_tile {
    const float *tile;
    size_t column;
    unsigned next, count, width;
} pending_tile;

/* The first `width` values (1..64) of tile row y, `elem` bytes each, to its output row at
 * byte `column`: streaming where allowed and the address suits the kernel set (whole lines
 * only; a row not starting on a line assembles the line that spans two blocks from its
 * carry), plain stores otherwise. */
TILE_INLINE void write_row(tile_job *j, unsigned y, const float *src, size_t column,
                           unsigned width, unsigned elem)
{
    uint8_t *p = j->dst[y] + column;
    const sgfp4_dtype dtype = elem == 4 ? SGFP4_DTYPE_F32 : j->dtype;
#if TILE_CAN_STREAM
    const unsigned shift = (unsigned)((uintptr_t)p & 63u);
    const unsigned bytes = width * elem;
    if (j->streaming && shift % TILE_STREAM_ALIGN == 0) {
        const bool first = column == 0, last = column + bytes >= j->row_bytes;
        if (bytes == SGFP4_MB * elem && shift == 0)
            tile_stream_aligned(p, src, dtype);
        else if (bytes == SGFP4_MB * elem && !first && !last)
            tile_stream_inner(p, src, dtype, shift, j->carry[y]);
        else
            tile_stream_edge(p, src, dtype, bytes, shift, first, last, j->carry[y]);
        return;
    }
#endif
    tile_store_plain(p, src, width, dtype);
}

/* Writes the pending tile's rows up to index `until`; whole-width f32 rows (the common
 * case) through a copy of the writer specialised for them. */
TILE_INLINE void flush_rows(pending_tile *p, unsigned until, tile_job *j)
{
    const bool whole_f32 = p->width == SGFP4_MB && j->dtype == SGFP4_DTYPE_F32;
    for (; p->next < until; p->next++) {
        const unsigned y = j->ys[p->next];
        if (whole_f32)
            write_row(j, y, p->tile + SGFP4_MB * y, p->column, SGFP4_MB, 4);
        else
            write_row(j, y, p->tile + SGFP4_MB * y, p->column, p->width, j->elem);
    }
}

/* Writes the pending tile's rows in proportion to `done` of `total` units of this block's
 * work, so that its stores spread evenly over the decoding of the next block. */
TILE_INLINE void flush_share(pending_tile *p, tile_job *j, unsigned done, unsigned total)
{
    flush_rows(p, (unsigned)((uint64_t)j->nrows * done / total), j);
}

/* The 64 block rows of one 64x64 leaf (v1, uniform-64) of mode `mode`, one pending row out
 * per row decoded. */
TILE_INLINE void leaf_64_rows(const sgfp4_leaf_list *list, float *tile, pending_tile *prev,
                              tile_job *j, unsigned mode)
{
    const tile_codes c = tile_codes_of(list, 0, mode);
    for (unsigned y = 0; y < SGFP4_MB; y++) {
        tile_leaf_row64(&c, tile, y, mode);
        flush_share(prev, j, y + 1, SGFP4_MB);
    }
}

/* The leaves of kind k (size class k / 2, mode k % 2; a constant at every call, so that each
 * kind's loop is specialised), whole; `done` counts the block's weights decoded before them.
 * Returns the count after them. */
TILE_INLINE unsigned decode_kind(const sgfp4_leaf_list *list, unsigned k, float *tile,
                                 pending_tile *prev, tile_job *j, unsigned done)
{
    for (unsigned g = 0; g < list->kind_count[k]; g++) {
        tile_leaf_whole(list, list->by_kind[k][g], tile, 4u << (k / 2), k % 2);
        done += 16u << (k / 2 * 2);
        flush_share(prev, j, done, TILE_FLOATS);
    }
    return done;
}

/* Decodes block b of t into `tile`: whole (rows selects all 64 block rows) or only the
 * vectors holding selected rows; writes the pending tile out along the way. */
TILE_FN void decode_block(const sgfp4_tensor *t, uint64_t b, uint64_t rows, float *tile,
                          pending_tile *prev, tile_job *j)
{
    sgfp4_leaf_list list;
    const unsigned n = tile_list_leaves(t, b, &list);
    if (rows == ~UINT64_C(0)) {
        if (list.desc[0] >> 16 == 4) { /* one 64x64 leaf */
            if (list.mode[0] == SGFP4_MODE_FP4)
                leaf_64_rows(&list, tile, prev, j, SGFP4_MODE_FP4);
            else
                leaf_64_rows(&list, tile, prev, j, SGFP4_MODE_T158);
            return;
        }
        unsigned done = decode_kind(&list, 0, tile, prev, j, 0);
        done = decode_kind(&list, 1, tile, prev, j, done);
        done = decode_kind(&list, 2, tile, prev, j, done);
        done = decode_kind(&list, 3, tile, prev, j, done);
        done = decode_kind(&list, 4, tile, prev, j, done);
        done = decode_kind(&list, 5, tile, prev, j, done);
        done = decode_kind(&list, 6, tile, prev, j, done);
        (void)decode_kind(&list, 7, tile, prev, j, done);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        tile_leaf_selected(&list, i, rows, tile);
        flush_share(prev, j, i + 1, n);
    }
}

TILE_FN void tile_decode_rows(const sgfp4_tensor *t, uint64_t by, uint64_t rows,
                              uint8_t *const dst[SGFP4_MB], sgfp4_dtype dtype, bool streaming,
                              void *scratch)
{
    float *tiles = scratch; /* [2][TILE_FLOATS], 64-byte aligned */
    const size_t elem = sgfp4_dtype_size(dtype);
    tile_job j;
    j.dst = dst;
    j.row_bytes = (size_t)t->cols * elem;
    j.dtype = dtype;
    j.elem = (unsigned)elem;
    j.streaming = streaming;
    j.nrows = 0;
    for (unsigned y = 0; y < SGFP4_MB; y++)
        if ((rows >> y) & 1u)
            j.ys[j.nrows++] = (uint8_t)y;
    pending_tile prev = {tiles, 0, j.nrows, j.nrows, 0}; /* nothing pending yet */
    for (uint64_t bx = 0; bx < t->tiles_x; bx++) {
        float *tile = tiles + (bx & 1u) * TILE_FLOATS;
        decode_block(t, by * t->tiles_x + bx, rows, tile, &prev, &j);
        flush_rows(&prev, j.nrows, &j);
        const uint64_t c0 = bx * SGFP4_MB;
        prev = (pending_tile){tile, (size_t)c0 * elem, 0, j.nrows,
                              (unsigned)(t->cols - c0 < SGFP4_MB ? t->cols - c0 : SGFP4_MB)};
    }
    flush_rows(&prev, j.nrows, &j);
}

/* The scratch tile_decode_rows() needs per thread. */
#define TILE_SCRATCH_BYTES (2 * TILE_FLOATS * sizeof(float))
