/* The fast decoder: macroblock rows (or requested rows) decoded through the kernels of
 * kernels.h, spread over threads. Each work item writes its own output rows, so the result
 * does not depend on the thread count.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cache_size.h"
#include "common/parallel.h"
#include "decode/kernels.h"
#include "sgfp4_experimental.h"

uint64_t sgfp4_decode_stream_bytes(unsigned threads)
{
    /* a benign race: every thread reads the same size */
    static _Atomic uint64_t cached_l2 = 0;
    uint64_t l2 = atomic_load_explicit(&cached_l2, memory_order_relaxed);
    if (!l2) {
        l2 = sgfp4_cache_bytes(2);
        if (!l2)
            l2 = (uint64_t)1 << 20;
        atomic_store_explicit(&cached_l2, l2, memory_order_relaxed);
    }
    return 2 * l2 * (threads > 1 ? threads : 1);
}

/* One requested gather row: tensor row `row` goes to output row `k`. */
typedef struct request {
    uint64_t row;
    size_t k;
} request;

/* What every work item of one call shares. */
typedef struct job {
    const sgfp4_tensor *t;
    const sgfp4_decode_kernels *k;
    const sgfp4_output *out;
    bool streaming;
    uint8_t *scratch; /* per worker: scratch + worker * scratch_stride */
    size_t scratch_stride;
    /* row ranges */
    uint64_t row_begin, row_end, first_by;
    /* gathers: requests sorted by row; item i covers requests [group[i], group[i + 1]) */
    const request *requests;
    const size_t *group;
} job;

static void decode_selected(const job *j, unsigned worker, uint64_t by, uint64_t rows,
                            uint8_t *const dst[SGFP4_MB])
{
    /* kernels without scratch memory get NULL (no arithmetic on a null pointer) */
    void *scratch = j->scratch ? j->scratch + worker * j->scratch_stride : NULL;
    j->k->decode_rows(j->t, by, rows, dst, j->out->dtype, j->streaming, scratch);
}

static void rows_item(void *context, uint64_t item, unsigned worker)
{
    const job *j = context;
    const uint64_t by = j->first_by + item;
    const uint64_t r0 = by * SGFP4_MB > j->row_begin ? by * SGFP4_MB : j->row_begin;
    const uint64_t r1 = (by + 1) * SGFP4_MB < j->row_end ? (by + 1) * SGFP4_MB : j->row_end;
    const unsigned y0 = (unsigned)(r0 - by * SGFP4_MB), y1 = (unsigned)(r1 - by * SGFP4_MB);
    uint8_t *dst[SGFP4_MB];
    for (unsigned y = y0; y < y1; y++)
        dst[y] = j->out->base + (by * SGFP4_MB + y - j->row_begin) * j->out->row_stride_bytes;
    decode_selected(j, worker, by, sgfp4_leaf_row_mask(y0, y1 - y0), dst);
    j->k->finish();
}

/* One macroblock row's requests (sorted by row): each distinct row is decoded once, to its
 * first requester's output row, which repeats then copy. */
static void gather_item(void *context, uint64_t item, unsigned worker)
{
    const job *j = context;
    const request *first = j->requests + j->group[item], *last = j->requests + j->group[item + 1];
    const uint64_t by = first->row / SGFP4_MB;
    uint8_t *dst[SGFP4_MB];
    uint64_t rows = 0;
    for (const request *r = first; r < last; r++) {
        const unsigned y = (unsigned)(r->row - by * SGFP4_MB);
        if (!((rows >> y) & 1u)) {
            rows |= UINT64_C(1) << y;
            dst[y] = j->out->base + r->k * j->out->row_stride_bytes;
        }
    }
    decode_selected(j, worker, by, rows, dst);
    j->k->finish();
    const size_t row_bytes = (size_t)j->t->cols * sgfp4_dtype_size(j->out->dtype);
    for (const request *r = first; r < last; r++) {
        uint8_t *to = j->out->base + r->k * j->out->row_stride_bytes;
        const uint8_t *from = dst[r->row - by * SGFP4_MB];
        if (to != from)
            memcpy(to, from, row_bytes);
    }
}

/* Runs `items` work items with per-worker scratch memory for the kernels; if that memory
 * cannot be had, with the generic kernels, which need none (decode does not fail). */
static void run(job *j, uint64_t items, unsigned threads, sgfp4_work_fn fn)
{
    uint64_t workers = threads > 1 ? threads : 1;
    if (workers > items)
        workers = items;
    if (workers > 256)
        workers = 256; /* sgfp4_parallel_for's most */
    void *block = NULL;
    if (j->k->scratch_bytes) {
        j->scratch_stride = (j->k->scratch_bytes + 63) & ~(size_t)63;
        block = sgfp4_alloc_with(&j->t->allocator, (size_t)workers * j->scratch_stride + 63);
        if (block)
            j->scratch = (uint8_t *)(((uintptr_t)block + 63) & ~(uintptr_t)63);
        else
            j->k = &sgfp4_kernels_generic;
    }
    sgfp4_parallel_for(items, (unsigned)workers, fn, j);
    sgfp4_free_with(&j->t->allocator, block);
}

void sgfp4_tiled_decode_rows(const sgfp4_tensor *t, uint64_t row_begin, uint64_t row_end,
                             const sgfp4_output *out, const sgfp4_decode_kernels *k,
                             unsigned threads, bool streaming)
{
    job j = {t, k, out, streaming, NULL, 0, row_begin, row_end, row_begin / SGFP4_MB, NULL,
             NULL};
    run(&j, (row_end - 1) / SGFP4_MB - j.first_by + 1, threads, rows_item);
}

static int compare_requests(const void *a, const void *b)
{
    const request *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

void sgfp4_tiled_decode_gather(const sgfp4_tensor *t, const uint64_t *rows, size_t count,
                               const sgfp4_output *out, const sgfp4_decode_kernels *k,
                               unsigned threads, bool streaming)
{
    /* Requests sorted by row and grouped by macroblock row, so that a block's leaves are
     * listed once for all the rows wanted from it. */
    request *requests = NULL;
    size_t *group = NULL;
    if (count <= SIZE_MAX / sizeof *requests / 2) {
        requests = sgfp4_alloc_with(&t->allocator, count * sizeof *requests);
        group = sgfp4_alloc_with(&t->allocator, (count + 1) * sizeof *group);
    }
    if (!requests || !group) {
        /* no memory for the sort: one row at a time, through the oracle */
        sgfp4_free_with(&t->allocator, requests);
        sgfp4_free_with(&t->allocator, group);
        sgfp4_scalar_decode_gather(t, rows, count, out);
        return;
    }
    for (size_t i = 0; i < count; i++)
        requests[i] = (request){rows[i], i};
    qsort(requests, count, sizeof *requests, compare_requests);
    size_t groups = 0;
    for (size_t i = 0; i < count; i++)
        if (i == 0 || requests[i].row / SGFP4_MB != requests[i - 1].row / SGFP4_MB)
            group[groups++] = i;
    group[groups] = count;
    job j = {t, k, out, streaming, NULL, 0, 0, 0, 0, requests, group};
    run(&j, groups, threads, gather_item);
    sgfp4_free_with(&t->allocator, requests);
    sgfp4_free_with(&t->allocator, group);
}
