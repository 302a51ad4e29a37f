/* Public matvec entry points: options and arguments checked, then the selected kernel set
 * on the requested threads, in the default floating-point environment.
 * SPDX-License-Identifier: MIT */
#include <math.h>

#include "common/fp_env.h"
#include "common/options.h"
#include "common/parallel.h"
#include "common/pool.h"
#include "common/diag.h"
#include "matvec/matvec_internal.h"

sgfp4_status sgfp4_matvec_options_init_sized(sgfp4_matvec_options *options, size_t size)
{
    sgfp4_matvec_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.backend = SGFP4_BACKEND_AUTO;
    defaults.threads = 0;
    return SGFP4_OPTIONS_INIT(sgfp4_matvec_options, options, size, &defaults);
}

/* The options in effect (src/common/options.h) and the kernels they select. */
static sgfp4_status read_options(const sgfp4_matvec_options *given, sgfp4_matvec_options *o,
                                 const sgfp4_matvec_kernels **kernels)
{
    const sgfp4_status s = SGFP4_OPTIONS_READ(sgfp4_matvec_options, given, o);
    if (s != SGFP4_OK)
        return s;
    if ((o->threads = sgfp4_threads_resolve(o->threads)) == 0)
        return SGFP4_ERR_ARGUMENT;
    int known;
    *kernels = sgfp4_matvec_kernels_for(o->backend, &known);
    if (!known)
        return SGFP4_ERR_ARGUMENT;
    return *kernels ? SGFP4_OK : SGFP4_ERR_UNAVAILABLE;
}

size_t sgfp4_matvec_q8_bytes(uint64_t cols, unsigned batch)
{
    if (cols == 0 || batch == 0 || batch > SGFP4_MATVEC_MAX_BATCH)
        return 0;
    const uint64_t tiles_x = cols / 64u + (cols % 64u != 0);
    if (tiles_x > (UINT64_MAX - 63u) / 68u / SGFP4_MATVEC_MAX_BATCH)
        return 0;
    const uint64_t bytes = (uint64_t)sgfp4_q8_vector_bytes(tiles_x) * batch;
    return bytes > SIZE_MAX ? 0 : (size_t)bytes;
}

/* Bytes from one input vector to the next for `stride` elements of dtype (0 = cols);
 * 0 when the stride is below cols or the size overflows. */
static size_t input_vector_bytes(uint64_t cols, size_t stride, sgfp4_dtype dtype)
{
    const uint64_t elements = stride ? stride : cols;
    const uint64_t size = sgfp4_dtype_size(dtype);
    if (elements < cols || elements > SIZE_MAX / SGFP4_MATVEC_MAX_BATCH / size)
        return 0;
    return (size_t)(elements * size);
}

static sgfp4_status check_input_dtype(sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F32 || dtype == SGFP4_DTYPE_F16)
        return SGFP4_OK;
    return (unsigned)dtype <= SGFP4_DTYPE_BF16 ? SGFP4_ERR_UNSUPPORTED : SGFP4_ERR_ARGUMENT;
}

/* ---- the quantizer ---- */

static sgfp4_status quantize_in_scope(const void *x, sgfp4_dtype dtype, uint64_t cols,
                                      unsigned batch, size_t x_stride, void *q8,
                                      size_t q8_capacity, const sgfp4_matvec_options *options,
                                      sgfp4_diag *diag)
{
    sgfp4_matvec_options o;
    const sgfp4_matvec_kernels *k;
    sgfp4_status s = read_options(options, &o, &k);
    if (s != SGFP4_OK)
        return sgfp4_fail(diag, s, -1, -1, -1, "matvec quantize: %s options",
                          s == SGFP4_ERR_UNAVAILABLE ? "unavailable kernel set in the"
                                                     : "bad");
    if (!x || !q8)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "matvec quantize: NULL %s",
                          x ? "q8" : "x");
    if ((s = check_input_dtype(dtype)) != SGFP4_OK)
        return sgfp4_fail(diag, s, -1, -1, -1,
                          "matvec quantize: activations must be F32 or F16");
    const size_t bytes = sgfp4_matvec_q8_bytes(cols, batch);
    const size_t in_bytes = input_vector_bytes(cols, x_stride, dtype);
    if (bytes == 0 || in_bytes == 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "matvec quantize: bad shape (cols %llu, batch %u, stride %zu)",
                          (unsigned long long)cols, batch, x_stride);
    if (q8_capacity < bytes)
        return sgfp4_fail(diag, SGFP4_ERR_DST_TOO_SMALL, -1, -1, -1,
                          "matvec quantize: q8 buffer of %zu bytes, %zu needed", q8_capacity,
                          bytes);
    const uint8_t *in = x;
    for (unsigned n = 0; n < batch; n++)
        for (uint64_t j = 0; j < cols; j++)
            if (!isfinite(sgfp4_matvec_x_at(in + n * in_bytes, dtype, j))) {
                sgfp4_fail(diag, SGFP4_ERR_ARGUMENT,
                           (int64_t)(n * in_bytes + j * sgfp4_dtype_size(dtype)), -1, -1,
                           "matvec quantize: x vector %u, column %llu is %s (Class A needs "
                           "finite activations)",
                           n, (unsigned long long)j,
                           isnan(sgfp4_matvec_x_at(in + n * in_bytes, dtype, j)) ? "NaN"
                                                                                 : "infinite");
                return sgfp4_fail_at_element(diag, SGFP4_ERR_ARGUMENT, n, j);
            }
    const uint64_t tiles_x = (cols + 63u) / 64u;
    const size_t vector_bytes = sgfp4_q8_vector_bytes(tiles_x);
    for (unsigned n = 0; n < batch; n++) {
        uint8_t *out = (uint8_t *)q8 + n * vector_bytes;
        k->quantize(in + n * in_bytes, dtype, cols, (int8_t *)out, out + tiles_x * 64u);
        memset(out + tiles_x * 68u, 0, vector_bytes - tiles_x * 68u);
    }
    sgfp4_diag_clear(diag);
    return SGFP4_OK;
}

sgfp4_status sgfp4_matvec_quantize(const void *x, sgfp4_dtype dtype, uint64_t cols,
                                   unsigned batch, size_t x_stride, void *q8,
                                   size_t q8_capacity, const sgfp4_matvec_options *options,
                                   sgfp4_diag *diag)
{
    sgfp4_fp_scope scope;
    sgfp4_fp_scope_enter(&scope);
    const sgfp4_status s = quantize_in_scope(x, dtype, cols, batch, x_stride, q8, q8_capacity,
                                             options, diag);
    sgfp4_fp_scope_leave(&scope);
    return s;
}

/* ---- the products ---- */

typedef struct product_job {
    const sgfp4_matvec_plan *plan;
    const sgfp4_matvec_kernels *k;
    bool class_a;
    const sgfp4_matvec_x *x;
    const sgfp4_matvec_y *y;
    uint64_t row_begin, row_end;
    uint64_t parts; /* work items per macroblock row */
} product_job;

/* Item i: part i % parts of macroblock row row_begin / 64 + i / parts, within the range. */
static void product_item(void *context, uint64_t item, unsigned worker)
{
    (void)worker;
    const product_job *j = context;
    const uint64_t by = j->row_begin / SGFP4_MB + item / j->parts;
    const uint64_t a = by * SGFP4_MB > j->row_begin ? by * SGFP4_MB : j->row_begin;
    const uint64_t b = (by + 1) * SGFP4_MB < j->row_end ? (by + 1) * SGFP4_MB : j->row_end;
    const uint64_t part = item % j->parts;
    const uint64_t r0 = a + (b - a) * part / j->parts, r1 = a + (b - a) * (part + 1) / j->parts;
    if (r0 < r1)
        (j->class_a ? j->k->rows_q8 : j->k->rows_float)(j->plan, r0, r1, j->x, j->y);
}

void sgfp4_matvec_run(const sgfp4_matvec_plan *plan, const sgfp4_matvec_kernels *k,
                      bool class_a, const sgfp4_matvec_x *x, const sgfp4_matvec_y *y,
                      uint64_t row_begin, uint64_t row_end, sgfp4_matvec_threads threads)
{
    const uint64_t block_rows = (row_end - 1) / SGFP4_MB - row_begin / SGFP4_MB + 1;
    /* Whole macroblock rows per item while there are enough for every thread; else each is
     * cut in parts. */
    const unsigned n = threads.pool && threads.count > sgfp4_thread_pool_threads(threads.pool)
                           ? sgfp4_thread_pool_threads(threads.pool)
                           : threads.count;
    uint64_t parts = n > block_rows ? (n + block_rows - 1) / block_rows : 1;
    if (parts > SGFP4_MB)
        parts = SGFP4_MB;
    product_job job = {plan, k, class_a, x, y, row_begin, row_end, parts};
    sgfp4_fp_scope scope;
    sgfp4_fp_scope_enter(&scope);
    if (threads.pool)
        sgfp4_pool_run(threads.pool, n, block_rows * parts, product_item, &job);
    else
        sgfp4_parallel_for(block_rows * parts, n, product_item, &job);
    sgfp4_fp_scope_leave(&scope);
}

/* The checks common to both classes: the options, the plan, the rows and y. */
static sgfp4_status check_product(const sgfp4_matvec_plan *plan, unsigned batch,
                                  uint64_t row_begin, uint64_t row_end, float *y,
                                  size_t y_stride, size_t y_capacity,
                                  const sgfp4_matvec_options *options,
                                  const sgfp4_matvec_kernels **k, sgfp4_matvec_threads *threads,
                                  sgfp4_matvec_y *out)
{
    sgfp4_matvec_options o;
    sgfp4_status s = read_options(options, &o, k);
    if (s != SGFP4_OK)
        return s;
    if (o.fast != 0) /* D9's fast products are not offered on the CPU: no D8 in their place */
        return o.fast == 1 ? SGFP4_ERR_UNSUPPORTED : SGFP4_ERR_ARGUMENT;
    if (!plan || !y || batch == 0 || batch > SGFP4_MATVEC_MAX_BATCH)
        return SGFP4_ERR_ARGUMENT;
    if (row_begin >= row_end || row_end > plan->tensor->rows)
        return SGFP4_ERR_ARGUMENT;
    const uint64_t count = row_end - row_begin;
    const uint64_t stride = y_stride ? y_stride : count;
    if (stride < count || stride > SIZE_MAX / sizeof(float) / SGFP4_MATVEC_MAX_BATCH)
        return SGFP4_ERR_ARGUMENT;
    if (((batch - 1) * stride + count) * sizeof(float) > y_capacity)
        return SGFP4_ERR_DST_TOO_SMALL;
    *out = (sgfp4_matvec_y){y, (size_t)stride, row_begin};
    *threads = (sgfp4_matvec_threads){o.threads, o.pool};
    return SGFP4_OK;
}

sgfp4_status sgfp4_matvec_q8(const sgfp4_matvec_plan *plan, const void *q8, size_t q8_size,
                             unsigned batch, uint64_t row_begin, uint64_t row_end, float *y,
                             size_t y_stride, size_t y_capacity,
                             const sgfp4_matvec_options *options)
{
    const sgfp4_matvec_kernels *k;
    sgfp4_matvec_threads threads;
    sgfp4_matvec_y out;
    const sgfp4_status s = check_product(plan, batch, row_begin, row_end, y, y_stride,
                                         y_capacity, options, &k, &threads, &out);
    if (s != SGFP4_OK)
        return s;
    const size_t needed = sgfp4_matvec_q8_bytes(plan->tensor->cols, batch);
    if (!q8 || needed == 0 || q8_size < needed)
        return SGFP4_ERR_ARGUMENT;
    const sgfp4_matvec_x x = {q8, sgfp4_q8_vector_bytes(plan->tensor->tiles_x),
                              SGFP4_DTYPE_F32, batch};
    sgfp4_matvec_run(plan, k, true, &x, &out, row_begin, row_end, threads);
    return SGFP4_OK;
}

sgfp4_status sgfp4_matvec_float(const sgfp4_matvec_plan *plan, const void *x, sgfp4_dtype dtype,
                                unsigned batch, size_t x_stride, uint64_t row_begin,
                                uint64_t row_end, float *y, size_t y_stride, size_t y_capacity,
                                const sgfp4_matvec_options *options)
{
    const sgfp4_matvec_kernels *k;
    sgfp4_matvec_threads threads;
    sgfp4_matvec_y out;
    sgfp4_status s = check_product(plan, batch, row_begin, row_end, y, y_stride, y_capacity,
                                   options, &k, &threads, &out);
    if (s != SGFP4_OK)
        return s;
    if (!x)
        return SGFP4_ERR_ARGUMENT;
    if ((s = check_input_dtype(dtype)) != SGFP4_OK)
        return s;
    const size_t vector_bytes = input_vector_bytes(plan->tensor->cols, x_stride, dtype);
    if (vector_bytes == 0)
        return SGFP4_ERR_ARGUMENT;
    const sgfp4_matvec_x in = {x, vector_bytes, dtype, batch};
    sgfp4_matvec_run(plan, k, false, &in, &out, row_begin, row_end, threads);
    return SGFP4_OK;
}
