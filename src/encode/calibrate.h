/* The calibrated sweep (docs/encoder.md, "Calibrated encoding"): with the leaves and modes of
 * every block fixed, each band of 64 rows is swept column by column in natural order with
 * GPTQ's error feedback. When the sweep reaches a leaf's first column, the leaf's scale and
 * bias are fitted (the usual fitter, error weights row_weight x col_weight) on the weights as
 * compensated so far; each weight's code is the nearest one on its compensated value. The
 * band's records are written as soon as its blocks are done. Bands are independent: each is
 * a function of its own rows, so the bytes do not depend on the threads.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_CALIBRATE_H
#define SGFP4_ENCODE_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "encode/block_plan.h"
#include "encode/gemm.h"
#include "encode/hessian.h"

typedef struct sgfp4_sweep {
    const float *src;               /* the tensor, rows x cols, rows `stride` apart */
    uint64_t rows, cols, tiles_x, blocks;
    size_t stride;
    const sgfp4_hessian *hessian;   /* dim == cols */
    const float *row_weight;        /* the metric's weights, padded to the 64-grid */
    const float *col_weight;
    sgfp4_fit fit;
    sgfp4_profile profile;
    sgfp4_block_plan *plans;        /* one per block; the sweep rewrites scales and biases */
    const uint64_t *offsets;        /* v2: record offsets relative to the record region */
    uint8_t *out;                   /* the container */
    float *scratch;                 /* sgfp4_sweep_scratch() floats per worker */
    const sgfp4_gemm_kernels *kernels;
} sgfp4_sweep;

/* Floats of scratch one worker needs for a tensor of `cols` columns. */
size_t sgfp4_sweep_scratch(uint64_t cols);

/* Sweeps band `band` (block row) and writes its blocks (a job for sgfp4_team_run; the
 * context is an sgfp4_sweep). */
void sgfp4_sweep_band(void *ctx, uint64_t band, unsigned worker);

#endif
