/* The error weights of the options' metric, per row and column of a tensor (error_weights.c;
 * docs/encoder.md, "Error metrics").
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_ERROR_WEIGHTS_H
#define SGFP4_ENCODE_ERROR_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "sgfp4.h"

/* Whether the options' metric weighs errors (anything but plain squared error). */
int sgfp4_metric_is_weighted(const sgfp4_encode_options *o);
/* Whether an importance vector is acceptable: NULL, or `count` finite values >= 0 with a
 * positive finite sum. */
int sgfp4_importance_ok(const float *importance, uint64_t count);
/* Fills row_weight[ceil(rows/64)*64] and col_weight[ceil(cols/64)*64]: the metric's error
 * weights (each normalized to mean 1 over the tensor, floored above 0), 0 in the padding. */
void sgfp4_error_weights(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                         const sgfp4_encode_options *o, float *row_weight, float *col_weight);

#endif
