/* A prepared Hessian (sgfp4_hessian_create): what the calibrated sweep (encode/calibrate.c)
 * reads. With H + lambda I = V V^T, V upper triangular (a Cholesky factorization taken from
 * the last column backwards), and Vu = V with each column k divided by V[k][k] (unit upper),
 * the weight of column k, once the columns before it are quantized with errors e_j = w_j -
 * q_j, is compensated to w_k + sum_{j<k} e_j Vu[j][k]: GPTQ's error feedback (docs/encoder.md,
 * "Calibrated encoding").
 *
 * Storage: one panel per 64 columns. Panel c (columns 64c .. 64c + width - 1) is row-major
 * with 64 floats a row: rows j < 64c hold Vu[j][64c + x]; the next `width` rows hold G_c,
 * the inverse of the panel's unit upper diagonal block of Vu (zero below its diagonal).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_HESSIAN_H
#define SGFP4_ENCODE_HESSIAN_H

#include <stddef.h>
#include <stdint.h>

#include "sgfp4.h"

struct sgfp4_hessian {
    uint64_t dim;
    unsigned panels;       /* ceil(dim / 64) */
    float *factor;         /* the panels, panel c at sgfp4_hessian_panel(c) */
    float *diagonal;       /* diag(H) as given: the column importance */
    sgfp4_allocator allocator;
};

/* Offset of panel c, in elements: panel c has at most 64 (c + 1) rows of 64. */
static inline size_t sgfp4_hessian_panel(unsigned c)
{
    return (size_t)4096 * c * (c + 1) / 2;
}

/* Elements of all panels of a dim x dim Hessian (the last panel may be narrower than 64
 * columns and has only as many rows as the dimension). */
static inline size_t sgfp4_hessian_elements(uint64_t dim)
{
    const unsigned last = (unsigned)((dim - 1) / 64);
    return sgfp4_hessian_panel(last) + (size_t)dim * 64;
}

#endif
