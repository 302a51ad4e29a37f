/* The Laplacian-weighted error of a decoded leaf and the spec's dual-mode rule
 * (error_metric.c, mode_choice.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_ERROR_METRIC_H
#define SGFP4_ENCODE_ERROR_METRIC_H

#include "encode/block_plan.h"
#include "sgfp4.h"

/* Laplacian-weighted error of the valid rows x cols part of a leaf (row-major, dense; the
 * whole leaf when rows = cols = size) decoded with p (docs/encoder.md):
 * sum e^2 + sum over 2x2 cells ((e00+e01+e10+e11)/2)^2, a cell cut by the edge of the
 * valid part summing only its valid errors. *max_abs gets max |e|. */
double sgfp4_laplacian_error(const float *w, unsigned rows, unsigned cols,
                             const sgfp4_leaf_params *p, sgfp4_profile profile, float *scratch,
                             float *max_abs);
/* The spec's dual-mode rule: T158 when err_t158 <= (1 + delta) err_fp4 and no weight's
 * error exceeds 5 S. Returns the chosen mode and its Laplacian-weighted error. */
unsigned sgfp4_choose_mode_reference(const float *w, unsigned rows, unsigned cols,
                                     const sgfp4_leaf_params *fp4,
                                     const sgfp4_leaf_params *t158, double delta,
                                     sgfp4_profile profile, float *scratch, double *error);

#endif
