/* The contract between the public decode entry points and the decode kernels.
 * Arguments are checked before any kernel runs; kernels never fail.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_DECODE_INTERNAL_H
#define SGFP4_DECODE_INTERNAL_H

#include "container/tensor.h"

/* Where decoded rows go: output row k (the k-th row requested) starts at
 * base + k * row_stride_bytes and holds `cols` elements of `dtype`. */
typedef struct sgfp4_output {
    uint8_t *base;
    size_t row_stride_bytes;
    sgfp4_dtype dtype;
} sgfp4_output;

/* What the decode calls answer for these options (NULL: the defaults) before they look at
 * anything else: SGFP4_OK, SGFP4_ERR_ARGUMENT or SGFP4_ERR_UNAVAILABLE (decode/decode.c).
 * For callers that must refuse bad options before they start writing. */
sgfp4_status sgfp4_decode_options_check(const sgfp4_decode_options *options);

/* Reference decoder (decode/decode_scalar.c): the oracle every other path is tested against.
 * Decodes tensor rows [row_begin, row_end) to output rows 0.. */
void sgfp4_scalar_decode_rows(const sgfp4_tensor *t, uint64_t row_begin, uint64_t row_end,
                              const sgfp4_output *out);
/* Decodes tensor row rows[k] to output row k, for k in [0, count). */
void sgfp4_scalar_decode_gather(const sgfp4_tensor *t, const uint64_t *rows, size_t count,
                                const sgfp4_output *out);
/* Decodes columns [col_begin, col_end) of tensor row `row` to out->base (one partial row:
 * for rows too wide to decode whole within a memory budget). */
void sgfp4_scalar_decode_row_columns(const sgfp4_tensor *t, uint64_t row, uint64_t col_begin,
                                     uint64_t col_end, const sgfp4_output *out);

/* Stores one decoded weight as dtype (F16/BF16 rounded to nearest even from the f32). */
static inline void sgfp4_store_weight(uint8_t *dst, sgfp4_dtype dtype, float w)
{
    if (dtype == SGFP4_DTYPE_F32) {
        memcpy(dst, &w, 4);
    } else {
        const uint16_t h =
            dtype == SGFP4_DTYPE_F16 ? sgfp4_float_to_half(w) : sgfp4_float_to_bf16(w);
        memcpy(dst, &h, 2);
    }
}

#endif
