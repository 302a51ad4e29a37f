/* Decoding a whole tensor band by band, for the calls that only need to look at the decoded
 * values once (hashes, comparisons): memory stays at one band whatever the tensor's size.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_DECODE_BANDS_H
#define SGFP4_DECODE_BANDS_H

#include "sgfp4.h"

/* Receives rows [row_begin, row_end) of the tensor as packed float32 rows. A status other
 * than SGFP4_OK stops the walk and is returned. */
typedef sgfp4_status (*sgfp4_band_fn)(void *context, uint64_t row_begin, uint64_t row_end,
                                      const float *band);

/* Decodes the tensor to float32 in bands of whole macroblock rows (about 16 MiB each, at
 * least one row) with `options`, and hands each band to fn in row order. */
sgfp4_status sgfp4_decode_bands(const sgfp4_tensor *tensor, const sgfp4_decode_options *options,
                                sgfp4_band_fn fn, void *context);

#endif
