/* An independent statement of DECISIONS D8 for the tests, deliberately unlike the library's
 * oracle (src/matvec/matvec_scalar.c):
 *   - the tensor is "expanded": every weight position of the column-padded grid carries its
 *     code and its leaf's S and Bias (no leaves, no payloads, no listing); the expansion
 *     comes from a container's intended content (tools/datagen/generator.c) or, for
 *     containers without one, from the public leaf listing and the test's own unpacking;
 *   - every D8 operation is done in binary64 and rounded once to binary32 by a cast: exact
 *     for one +, - or * of binary32 operands (53 >= 2 * 24 + 2 bits), so a build that
 *     contracted or widened the library's float arithmetic would disagree;
 *   - both trees are written as D8 states them, on arrays (the oracle's block tree is a
 *     recursion);
 *   - the Class A quantizer searches e by comparison in binary64 and rounds with rint().
 * Also a float64 product of the decoded weights with the activations D8 reads, and the
 * error bound the float32 result must meet (docs/matvec.md, "Tolerance").
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_D8_REFERENCE_H
#define SGFP4_TESTS_D8_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sgfp4.h"

/* Every position (r, c), r < rows, c < 64 * ceil(cols / 64), of a tensor. */
typedef struct d8_matrix {
    uint64_t rows, cols, padded_cols;
    int8_t *code;  /* [rows][padded_cols] D4 code values */
    float *scale;  /* [rows][padded_cols] S of the leaf holding the position */
    float *bias;   /* [rows][padded_cols] Bias (v2: after & 0xFFF0) */
} d8_matrix;

/* Allocates the arrays (zeroed); false if out of memory. */
bool d8_matrix_init(d8_matrix *m, uint64_t rows, uint64_t cols);
void d8_matrix_free(d8_matrix *m);

/* Sets the leaf of edge `size` at macroblock (by, bx), offset (y, x), from fp16 bits and
 * code values (row-major in the leaf); rows past m->rows are skipped. */
void d8_matrix_set_leaf(d8_matrix *m, uint64_t by, uint64_t bx, unsigned y, unsigned x,
                        unsigned size, uint16_t scale_bits, uint16_t bias_bits,
                        const int8_t *codes);

/* Expands an opened tensor through the public leaf listing, unpacking the codes from the
 * container bytes `data` (the test's own D4). */
bool d8_matrix_from_tensor(d8_matrix *m, const sgfp4_tensor *t, const uint8_t *data);

/* The D1 weight at (r, c): fl32(S * code + Bias). */
float d8_weight(const d8_matrix *m, uint64_t r, uint64_t c);

/* The test's Class A quantizer of one vector: q[64 * tiles] (0 past cols) and d[tiles]. */
void d8_quantize(const float *x, uint64_t cols, int8_t *q, float *d);

/* The activation Class B reads: +0 for |x| < 2^-60, else x. */
float d8_activation_b(float x);

/* D8 results of rows [0, rows) for one vector into y[rows]. Class A from q, d (as
 * d8_quantize writes them), Class B from x[cols]. Uses malloc; false if out of memory. */
bool d8_product_a(const d8_matrix *m, const int8_t *q, const float *d, float *y);
bool d8_product_b(const d8_matrix *m, const float *x, float *y);

/* The float64 product of the D1 weights with the activations D8 reads (A: q_j * d_b; B: the
 * floored x), per row, and the bound |y - exact| <= bound D8's float32 result meets;
 * bound < 0 where the float32 arithmetic may overflow (no check then). */
void d8_float64_a(const d8_matrix *m, const int8_t *q, const float *d, double *exact,
                  double *bound);
void d8_float64_b(const d8_matrix *m, const float *x, double *exact, double *bound);

/* Bit equality, with any NaN equal to any NaN (D8 leaves NaN signs and payloads open). */
bool d8_same(float a, float b);

#endif
