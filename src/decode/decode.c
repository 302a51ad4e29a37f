/* Public decode entry points: argument checks, then the selected kernel.
 * SPDX-License-Identifier: MIT */
#include "decode/decode_internal.h"

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
        return SGFP4_ERR_ARGUMENT;
    out->base = dst;
    out->row_stride_bytes = (size_t)stride_bytes;
    out->dtype = dtype;
    return SGFP4_OK;
}

sgfp4_status sgfp4_decode_rows(const sgfp4_tensor *tensor, uint64_t row_begin, uint64_t row_end,
                               sgfp4_dtype dtype, void *dst, size_t row_stride,
                               size_t dst_capacity, const sgfp4_decode_options *options)
{
    if (!tensor || row_begin >= row_end || row_end > tensor->rows)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_output out;
    const sgfp4_status s = prepare_output(tensor, row_end - row_begin, dtype, dst, row_stride,
                                          dst_capacity, &out);
    if (s != SGFP4_OK)
        return s;
    (void)options; /* every backend currently resolves to the reference kernel */
    sgfp4_scalar_decode_rows(tensor, row_begin, row_end, &out);
    return SGFP4_OK;
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

sgfp4_status sgfp4_decode_gather(const sgfp4_tensor *tensor, const uint64_t *rows, size_t count,
                                 sgfp4_dtype dtype, void *dst, size_t row_stride,
                                 size_t dst_capacity, const sgfp4_decode_options *options)
{
    if (!tensor || !rows || count == 0)
        return SGFP4_ERR_ARGUMENT;
    for (size_t k = 0; k < count; k++)
        if (rows[k] >= tensor->rows)
            return SGFP4_ERR_ARGUMENT;
    sgfp4_output out;
    const sgfp4_status s =
        prepare_output(tensor, count, dtype, dst, row_stride, dst_capacity, &out);
    if (s != SGFP4_OK)
        return s;
    (void)options;
    sgfp4_scalar_decode_gather(tensor, rows, count, &out);
    return SGFP4_OK;
}
