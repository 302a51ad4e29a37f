/* The checks of an encode call before any work (encode_checks.c): shared by the encode
 * entry points and the rate curve.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_CHECKS_H
#define SGFP4_ENCODE_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "sgfp4.h"

/* Whether rows x cols is a shape the encoder takes (1..2^40 each, at most 2^40 weights and
 * 2^32 blocks of 64x64); *blocks receives the number of blocks. */
int sgfp4_encode_shape_ok(uint64_t rows, uint64_t cols, uint64_t *blocks);

/* NULL when the options are valid, else what is wrong, naming the field (into buf). */
const char *sgfp4_encode_options_problem(const sgfp4_encode_options *o, char *buf, size_t size);

/* Whether every input is finite; *clipped counts the values beyond the fp16 range and
 * *max_abs is the largest magnitude. */
int sgfp4_encode_inputs_scan(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                             uint64_t *clipped, float *max_abs);

/* The mean of w^2 (clipped to the fp16 range): the threshold policy's scale. */
double sgfp4_encode_mean_square(const float *src, uint64_t rows, uint64_t cols, size_t stride);

/* The checks of an encode call's arguments and input: on success *o holds the options
 * (profile AUTO resolved), *blocks the number of 64x64 blocks, *stride the row stride, and
 * the report the input's clipped count and largest magnitude; on failure the diag names
 * what is wrong (a non-finite input by row, column and byte offset). */
sgfp4_status sgfp4_encode_arguments_check(const float *src, uint64_t rows, uint64_t cols,
                                          size_t *stride, const size_t *written,
                                          sgfp4_encode_options *o, uint64_t *blocks,
                                          sgfp4_diag *diag);

#endif
