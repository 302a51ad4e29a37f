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

/* Decodes tensor rows [r0, r1), all inside macroblock row `by`, to output rows out_row.. */
static void decode_band(const sgfp4_tensor *t, const sgfp4_decode_kernels *k, uint64_t by,
                        uint64_t r0, uint64_t r1, const sgfp4_output *out, uint64_t out_row,
                        bool streaming)
{
    k->decode_band(t, by, (unsigned)(r0 - by * SGFP4_MB), (unsigned)(r1 - by * SGFP4_MB),
                   out->base + out_row * out->row_stride_bytes, out->row_stride_bytes,
                   out->dtype, streaming);
}

typedef struct rows_job {
    const sgfp4_tensor *t;
    const sgfp4_decode_kernels *k;
    const sgfp4_output *out;
    uint64_t row_begin, row_end, first_by;
    bool streaming;
} rows_job;

static void rows_item(void *context, uint64_t item, unsigned worker)
{
    (void)worker;
    const rows_job *j = context;
    const uint64_t by = j->first_by + item;
    const uint64_t r0 = by * SGFP4_MB > j->row_begin ? by * SGFP4_MB : j->row_begin;
    const uint64_t r1 = (by + 1) * SGFP4_MB < j->row_end ? (by + 1) * SGFP4_MB : j->row_end;
    decode_band(j->t, j->k, by, r0, r1, j->out, r0 - j->row_begin, j->streaming);
    j->k->finish();
}

void sgfp4_tiled_decode_rows(const sgfp4_tensor *t, uint64_t row_begin, uint64_t row_end,
                             const sgfp4_output *out, const sgfp4_decode_kernels *k,
                             unsigned threads, bool streaming)
{
    rows_job job = {t, k, out, row_begin, row_end, row_begin / SGFP4_MB, streaming};
    const uint64_t last_by = (row_end - 1) / SGFP4_MB;
    sgfp4_parallel_for(last_by - job.first_by + 1, threads, rows_item, &job);
}

typedef struct gather_job {
    const sgfp4_tensor *t;
    const sgfp4_decode_kernels *k;
    const sgfp4_output *out;
    const uint64_t *rows;
    size_t count;
    bool streaming;
} gather_job;

static void gather_item(void *context, uint64_t item, unsigned worker)
{
    (void)worker;
    const gather_job *j = context;
    const size_t first = (size_t)item * GATHER_ROWS_PER_ITEM;
    const size_t last = first + GATHER_ROWS_PER_ITEM < j->count ? first + GATHER_ROWS_PER_ITEM
                                                                : j->count;
    for (size_t i = first; i < last; i++) {
        const uint64_t r = j->rows[i];
        decode_band(j->t, j->k, r / SGFP4_MB, r, r + 1, j->out, i, j->streaming);
    }
    j->k->finish();
}

void sgfp4_tiled_decode_gather(const sgfp4_tensor *t, const uint64_t *rows, size_t count,
                               const sgfp4_output *out, const sgfp4_decode_kernels *k,
                               unsigned threads, bool streaming)
{
    gather_job job = {t, k, out, rows, count, streaming};
    sgfp4_parallel_for((count + GATHER_ROWS_PER_ITEM - 1) / GATHER_ROWS_PER_ITEM, threads,
                       gather_item, &job);
}
