/* The fast decoder: macroblock rows (or requested rows) decoded through the kernels of
 * kernels.h, spread over threads. Each work item writes its own output rows, so the result
 * does not depend on the thread count.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "common/parallel.h"
#include "decode/kernels.h"

/* Rows requested per gather work item. */
#define GATHER_ROWS_PER_ITEM 16u

/* The last-level cache size: sysfs first (glibc's sysconf reports a host-wide figure on
 * some virtual machines), then sysconf; 0 if neither says. */
static uint64_t llc_bytes(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        unsigned long long n = 0;
        char unit = 0;
        const int got = fscanf(f, "%llu%c", &n, &unit);
        fclose(f);
        if (got >= 1 && n > 0)
            return n << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc > 0)
        return (uint64_t)llc;
#endif
    return 0;
}

bool sgfp4_decode_streams(uint64_t output_bytes)
{
    static _Atomic uint64_t cached = 0;
    uint64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v)
        return output_bytes >= v;
    const uint64_t llc = llc_bytes();
    v = llc > 0 ? llc : (uint64_t)8 << 20;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return output_bytes >= v;
}

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
    /* gathers */
    const uint64_t *rows;
    size_t count;
} job;

/* Decodes tensor rows [r0, r1), all inside macroblock row `by`, to output rows out_row.. */
static void decode_band(const job *j, unsigned worker, uint64_t by, uint64_t r0, uint64_t r1,
                        uint64_t out_row)
{
    j->k->decode_band(j->t, by, (unsigned)(r0 - by * SGFP4_MB), (unsigned)(r1 - by * SGFP4_MB),
                      j->out->base + out_row * j->out->row_stride_bytes,
                      j->out->row_stride_bytes, j->out->dtype, j->streaming,
                      j->scratch + worker * j->scratch_stride);
}

static void rows_item(void *context, uint64_t item, unsigned worker)
{
    const job *j = context;
    const uint64_t by = j->first_by + item;
    const uint64_t r0 = by * SGFP4_MB > j->row_begin ? by * SGFP4_MB : j->row_begin;
    const uint64_t r1 = (by + 1) * SGFP4_MB < j->row_end ? (by + 1) * SGFP4_MB : j->row_end;
    decode_band(j, worker, by, r0, r1, r0 - j->row_begin);
    j->k->finish();
}

static void gather_item(void *context, uint64_t item, unsigned worker)
{
    const job *j = context;
    const size_t first = (size_t)item * GATHER_ROWS_PER_ITEM;
    const size_t last = first + GATHER_ROWS_PER_ITEM < j->count ? first + GATHER_ROWS_PER_ITEM
                                                                : j->count;
    for (size_t i = first; i < last; i++)
        decode_band(j, worker, j->rows[i] / SGFP4_MB, j->rows[i], j->rows[i] + 1, i);
    j->k->finish();
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
    job j = {t, k, out, streaming, NULL, 0, row_begin, row_end, row_begin / SGFP4_MB, NULL, 0};
    run(&j, (row_end - 1) / SGFP4_MB - j.first_by + 1, threads, rows_item);
}

void sgfp4_tiled_decode_gather(const sgfp4_tensor *t, const uint64_t *rows, size_t count,
                               const sgfp4_output *out, const sgfp4_decode_kernels *k,
                               unsigned threads, bool streaming)
{
    job j = {t, k, out, streaming, NULL, 0, 0, 0, 0, rows, count};
    run(&j, (count + GATHER_ROWS_PER_ITEM - 1) / GATHER_ROWS_PER_ITEM, threads, gather_item);
}
