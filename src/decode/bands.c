/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "container/tensor.h"
#include "decode/bands.h"

#define BAND_BYTES ((uint64_t)16 << 20)

sgfp4_status sgfp4_decode_bands(const sgfp4_tensor *tensor, const sgfp4_decode_options *options,
                                sgfp4_band_fn fn, void *context)
{
    if (!tensor || !fn)
        return SGFP4_ERR_ARGUMENT;
    const uint64_t rows = tensor->rows, cols = tensor->cols;
    const uint64_t row_bytes = cols * sizeof(float);
    uint64_t band = BAND_BYTES / row_bytes / 64 * 64; /* whole macroblock rows */
    if (band == 0)
        band = row_bytes <= BAND_BYTES ? BAND_BYTES / row_bytes : 1;
    if (band > rows)
        band = rows;
    if (band > SIZE_MAX / row_bytes)
        return SGFP4_ERR_NOMEM;
    float *buffer = malloc((size_t)(band * row_bytes));
    if (!buffer)
        return SGFP4_ERR_NOMEM;
    sgfp4_status s = SGFP4_OK;
    for (uint64_t r = 0; s == SGFP4_OK && r < rows; r += band) {
        const uint64_t end = r + band < rows ? r + band : rows;
        s = sgfp4_decode_rows(tensor, r, end, SGFP4_DTYPE_F32, buffer, 0,
                              (size_t)((end - r) * row_bytes), options);
        if (s == SGFP4_OK)
            s = fn(context, r, end, buffer);
    }
    free(buffer);
    return s;
}
