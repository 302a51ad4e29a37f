/* The two matrix products of the calibrated encoder (docs/encoder.md, "Calibrated encoding"):
 * the error feedback of the column sweep in float32 and the Hessian's factorization in
 * float64. Both compute, for i < m and j < n,
 *     acc = 0;  for p = 0 .. k-1:  acc = acc + A(i, p) * B[p][j];  C[i][j] = C[i][j] +- acc
 * with every operation one IEEE rounding (no fused multiply-add, no reordering), so every
 * kernel set gives the same bits: they differ only in how many columns j share a register.
 * A(i, p) is a[i * a_row + p * a_col] (either orientation of a row-major matrix), B and C
 * are row-major with leading dimensions ldb and ldc.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_GEMM_H
#define SGFP4_ENCODE_GEMM_H

#include <stddef.h>

typedef struct sgfp4_gemm_kernels {
    const char *name;
    /* C += A B in float32 */
    void (*add_f32)(unsigned m, unsigned k, unsigned n, const float *a, size_t a_row,
                    size_t a_col, const float *b, size_t ldb, float *c, size_t ldc);
    /* C -= A B in float64 */
    void (*sub_f64)(unsigned m, unsigned k, unsigned n, const double *a, size_t a_row,
                    size_t a_col, const double *b, size_t ldb, double *c, size_t ldc);
} sgfp4_gemm_kernels;

#define SGFP4_GEMM_SETS 3u

/* The widest set this CPU runs. */
const sgfp4_gemm_kernels *sgfp4_gemm_kernels_best(void);
/* Every set this build has and this CPU runs, widest first, into sets; returns how many. */
unsigned sgfp4_gemm_kernels_all(const sgfp4_gemm_kernels *sets[SGFP4_GEMM_SETS]);

#endif
