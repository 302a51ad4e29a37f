/* Public decode entry points: argument checks, then the selected kernel.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/fp_env.h"
#include "common/options.h"
#include "common/parallel.h"
#include "decode/decode_internal.h"
#include "decode/kernels.h"

/* The oracle on several threads: one work item per macroblock row of [row_begin, row_end). */
typedef struct scalar_rows_job {
    const sgfp4_tensor *t;
    const sgfp4_output *out;
    uint64_t row_begin, row_end;
} scalar_rows_job;

static void scalar_rows_item(void *context, uint64_t item, unsigned worker)
{
    (void)worker;
    const scalar_rows_job *j = context;
    const uint64_t by = j->row_begin / SGFP4_MB + item;
    const uint64_t r0 = by * SGFP4_MB > j->row_begin ? by * SGFP4_MB : j->row_begin;
    const uint64_t r1 = (by + 1) * SGFP4_MB < j->row_end ? (by + 1) * SGFP4_MB : j->row_end;
    sgfp4_output part = *j->out;
    part.base += (r0 - j->row_begin) * part.row_stride_bytes;
    sgfp4_scalar_decode_rows(j->t, r0, r1, &part);
}

sgfp4_status sgfp4_decode_options_init_sized(sgfp4_decode_options *options, size_t size)
{
    sgfp4_decode_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.backend = SGFP4_BACKEND_AUTO;
    defaults.threads = 0;
    defaults.store = SGFP4_STORE_AUTO;
    return SGFP4_OPTIONS_INIT(sgfp4_decode_options, options, size, &defaults);
}

/* The caller's options (NULL: the defaults) read into *o and checked; *kernels is NULL for
 * the scalar oracle. Afterwards o->threads is the count to use (at least 1). */
static sgfp4_status resolve_options(const sgfp4_decode_options *options,
                                    sgfp4_decode_options *o,
                                    const sgfp4_decode_kernels **kernels)
{
    if (SGFP4_OPTIONS_READ(sgfp4_decode_options, options, o) != SGFP4_OK ||
        (unsigned)o->store > SGFP4_STORE_STREAMING)
        return SGFP4_ERR_ARGUMENT;
    if ((o->threads = sgfp4_threads_resolve(o->threads)) == 0)
        return SGFP4_ERR_ARGUMENT;
    switch (o->backend) {
    case SGFP4_BACKEND_AUTO: *kernels = sgfp4_decode_kernels_best(); return SGFP4_OK;
    case SGFP4_BACKEND_SCALAR: *kernels = NULL; return SGFP4_OK;
    case SGFP4_BACKEND_GENERIC:
    case SGFP4_BACKEND_AVX2:
    case SGFP4_BACKEND_AVX512:
    case SGFP4_BACKEND_NEON:
        *kernels = sgfp4_decode_kernels_forced(o->backend);
        return *kernels ? SGFP4_OK : SGFP4_ERR_UNAVAILABLE;
    default: return SGFP4_ERR_ARGUMENT;
    }
}

/* Whether a call writing `bytes` over `items` macroblock-row work items streams its stores. */
static bool use_streaming(const sgfp4_decode_options *o, uint64_t bytes, uint64_t items)
{
    if (o->store != SGFP4_STORE_AUTO)
        return o->store == SGFP4_STORE_STREAMING;
    const uint64_t threads = o->threads;
    return bytes >= sgfp4_decode_stream_bytes((unsigned)(threads < items ? threads : items));
}

/* Checks the destination for `count` output rows; fills *out. */
static sgfp4_status prepare_output(const sgfp4_tensor *t, uint64_t count, sgfp4_dtype dtype,
                                   void *dst, size_t row_stride, size_t dst_capacity,
                                   sgfp4_output *out)
{
    const size_t elem = sgfp4_dtype_size(dtype);
    if (!t || !dst || elem == 0)
        return SGFP4_ERR_ARGUMENT;
    if (row_stride == 0)
        row_stride = (size_t)t->cols;
    if (row_stride < t->cols)
        return SGFP4_ERR_ARGUMENT;
    /* bytes needed: (count - 1) full strides plus one row, without overflow */
    if (count == 0)
        return SGFP4_ERR_ARGUMENT;
    const uint64_t stride_bytes = (uint64_t)row_stride * elem;
    if (row_stride > SIZE_MAX / elem || (count - 1) > (UINT64_MAX - t->cols * elem) / stride_bytes)
        return SGFP4_ERR_ARGUMENT;
    const uint64_t needed = (count - 1) * stride_bytes + t->cols * elem;
    if (needed > dst_capacity)
        return SGFP4_ERR_DST_TOO_SMALL;
    out->base = dst;
    out->row_stride_bytes = (size_t)stride_bytes;
    out->dtype = dtype;
    return SGFP4_OK;
}

sgfp4_status sgfp4_decode_options_check(const sgfp4_decode_options *options)
{
    sgfp4_decode_options o;
    const sgfp4_decode_kernels *k;
    return resolve_options(options, &o, &k);
}

const char *sgfp4_decode_backend_name(sgfp4_backend backend)
{
    sgfp4_decode_options given, o;
    sgfp4_decode_options_init(&given);
    given.backend = backend;
    const sgfp4_decode_kernels *k;
    if (resolve_options(&given, &o, &k) != SGFP4_OK)
        return NULL;
    return k ? k->name : "scalar";
}

/* The decode calls below run in the default floating-point environment: the caller's
 * rounding and flush-to-zero modes must not reach the normative arithmetic (D1). */
static sgfp4_status decode_rows_in_scope(const sgfp4_tensor *tensor, uint64_t row_begin,
                                         uint64_t row_end, sgfp4_dtype dtype, void *dst,
                                         size_t row_stride, size_t dst_capacity,
                                         const sgfp4_decode_options *options)
{
    if (!tensor || row_begin >= row_end || row_end > tensor->rows)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_output out;
    sgfp4_decode_options o;
    const sgfp4_decode_kernels *k;
    sgfp4_status s = resolve_options(options, &o, &k);
    if (s != SGFP4_OK || (s = prepare_output(tensor, row_end - row_begin, dtype, dst, row_stride,
                                             dst_capacity, &out)) != SGFP4_OK)
        return s;
    const uint64_t items = (row_end - 1) / SGFP4_MB - row_begin / SGFP4_MB + 1;
    if (k) {
        const uint64_t bytes = (row_end - row_begin) * tensor->cols * sgfp4_dtype_size(dtype);
        sgfp4_tiled_decode_rows(tensor, row_begin, row_end, &out, k, o.threads,
                                use_streaming(&o, bytes, items));
    } else {
        scalar_rows_job job = {tensor, &out, row_begin, row_end};
        sgfp4_parallel_for(items, o.threads, scalar_rows_item, &job);
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_decode_rows(const sgfp4_tensor *tensor, uint64_t row_begin, uint64_t row_end,
                               sgfp4_dtype dtype, void *dst, size_t row_stride,
                               size_t dst_capacity, const sgfp4_decode_options *options)
{
    sgfp4_fp_scope scope;
    sgfp4_fp_scope_enter(&scope);
    const sgfp4_status s = decode_rows_in_scope(tensor, row_begin, row_end, dtype, dst,
                                                row_stride, dst_capacity, options);
    sgfp4_fp_scope_leave(&scope);
    return s;
}

sgfp4_status sgfp4_decode(const sgfp4_tensor *tensor, sgfp4_dtype dtype, void *dst,
                          size_t row_stride, size_t dst_capacity,
                          const sgfp4_decode_options *options)
{
    if (!tensor)
        return SGFP4_ERR_ARGUMENT;
    return sgfp4_decode_rows(tensor, 0, tensor->rows, dtype, dst, row_stride, dst_capacity,
                             options);
}

static sgfp4_status decode_gather_in_scope(const sgfp4_tensor *tensor, const uint64_t *rows,
                                           size_t count, sgfp4_dtype dtype, void *dst,
                                           size_t row_stride, size_t dst_capacity,
                                           const sgfp4_decode_options *options)
{
    if (!tensor || !rows || count == 0)
        return SGFP4_ERR_ARGUMENT;
    for (size_t k = 0; k < count; k++)
        if (rows[k] >= tensor->rows)
            return SGFP4_ERR_ARGUMENT;
    sgfp4_output out;
    sgfp4_decode_options o;
    const sgfp4_decode_kernels *k;
    sgfp4_status s = resolve_options(options, &o, &k);
    if (s != SGFP4_OK ||
        (s = prepare_output(tensor, count, dtype, dst, row_stride, dst_capacity, &out)) != SGFP4_OK)
        return s;
    const uint64_t bytes = (uint64_t)count * tensor->cols * sgfp4_dtype_size(dtype);
    if (k)
        sgfp4_tiled_decode_gather(tensor, rows, count, &out, k, o.threads,
                                  use_streaming(&o, bytes, count));
    else
        sgfp4_scalar_decode_gather(tensor, rows, count, &out);
    return SGFP4_OK;
}

sgfp4_status sgfp4_decode_gather(const sgfp4_tensor *tensor, const uint64_t *rows, size_t count,
                                 sgfp4_dtype dtype, void *dst, size_t row_stride,
                                 size_t dst_capacity, const sgfp4_decode_options *options)
{
    sgfp4_fp_scope scope;
    sgfp4_fp_scope_enter(&scope);
    const sgfp4_status s = decode_gather_in_scope(tensor, rows, count, dtype, dst, row_stride,
                                                  dst_capacity, options);
    sgfp4_fp_scope_leave(&scope);
    return s;
}
