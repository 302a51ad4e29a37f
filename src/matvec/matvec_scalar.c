/* The scalar reference of the matrix-vector products: DECISIONS D8 as it reads, one row at
 * a time, one cell at a time. Every other path (SIMD kernel sets, threads, row splits, the
 * Vulkan backend) is tested bit for bit against this file. Deliberately plain: a block's
 * leaves are listed by the container layer for every (row, block), each cell finds its leaf,
 * each weight its code. Every operation on a float is one binary32 operation (the build has
 * -ffp-contract=off, and matvec_internal.h refuses wider evaluation).
 *
 * Per cell k (4 columns) of row r in block b, with the S and Bias of the leaf the cell lies in:
 *   Class A: iq = sum code_j * q_j, is = sum q_j (exact integers; q_j = 0 in padding columns)
 *            c_k = fl32( fl32(S * iq) + fl32(Bias * is) )
 *   Class B: p_j = fl32(w_j * x_j) with w_j the D1 weight and x_j read as +0 when
 *            |x_j| < 2^-60 (p_j = +0 in padding columns)
 *            c_k = fl32( fl32(p0 + p1) + fl32(p2 + p3) )
 * then t_b = tree(c_0 .. c_15), times d_b in Class A, and y_r = tree(t_0 .. t_{n-1}).
 * SPDX-License-Identifier: MIT */
#include "matvec/matvec_internal.h"

typedef enum activation_class { CLASS_A, CLASS_B } activation_class;

/* The D8 tree of 16 values, as written: v_i = fl32(v_i + v_{i+h}) for h = 8, 4, 2, 1. */
static float tree16(float v[SGFP4_MATVEC_CELLS])
{
    for (unsigned h = SGFP4_MATVEC_CELLS / 2; h >= 1; h /= 2)
        for (unsigned i = 0; i < h; i++)
            v[i] = v[i] + v[i + h];
    return v[0];
}

/* The code of the weight at (y, x) of a macroblock, inside `leaf` (row-major in the leaf). */
static int code_at(const sgfp4_leaf_ref *leaf, unsigned y, unsigned x)
{
    const unsigned i = (y - leaf->y) * leaf->size + (x - leaf->x);
    return leaf->mode == SGFP4_MODE_T158 ? sgfp4_t158_code(leaf->payload, i)
                                         : sgfp4_fp4_code(leaf->payload, i);
}

/* The leaf holding position (y, x) of the macroblock: leaves tile the block. */
static const sgfp4_leaf_ref *leaf_at(const sgfp4_leaf_ref *leaves, unsigned n, unsigned y,
                                     unsigned x)
{
    for (unsigned i = 0; i < n; i++)
        if (y >= leaves[i].y && y < (unsigned)leaves[i].y + leaves[i].size && x >= leaves[i].x &&
            x < (unsigned)leaves[i].x + leaves[i].size)
            return &leaves[i];
    return &leaves[0]; /* unreachable for a validated view */
}

/* Class B activation j of vector n: the exact binary32, with |x| < 2^-60 read as +0. */
static float activation_b(const sgfp4_matvec_x *x, unsigned n, uint64_t j)
{
    const float v = sgfp4_matvec_x_at(x->data + n * x->vector_bytes, x->dtype, j);
    return (sgfp4_float_to_bits(v) & 0x7FFFFFFFu) < ((uint32_t)(127 - 60) << 23) ? 0.0f : v;
}

/* What one product call computes a row with. */
typedef struct row_job {
    const sgfp4_tensor *t;
    const sgfp4_matvec_x *x;
    activation_class cls;
    uint64_t row;
} row_job;

/* t_b for every vector: the block partial of row j->row in column block bx. */
static void block_partial(const row_job *j, uint64_t bx, float t[SGFP4_MATVEC_MAX_BATCH])
{
    const sgfp4_tensor *tensor = j->t;
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    const unsigned count =
        sgfp4_block_leaf_refs(tensor, (j->row / SGFP4_MB) * tensor->tiles_x + bx, leaves);
    const unsigned y = (unsigned)(j->row % SGFP4_MB);
    float c[SGFP4_MATVEC_MAX_BATCH][SGFP4_MATVEC_CELLS];
    for (unsigned k = 0; k < SGFP4_MATVEC_CELLS; k++) {
        const sgfp4_leaf_ref *leaf = leaf_at(leaves, count, y, 4 * k);
        for (unsigned n = 0; n < j->x->batch; n++) {
            if (j->cls == CLASS_A) {
                const int8_t *q = sgfp4_q8_q(j->x, n) + bx * SGFP4_MB;
                int32_t iq = 0, is = 0;
                for (unsigned i = 0; i < 4; i++) {
                    const unsigned col = 4 * k + i; /* q is 0 in padding columns */
                    iq += code_at(leaf, y, col) * q[col];
                    is += q[col];
                }
                const float scaled = leaf->scale * (float)iq; /* exact */
                const float shifted = leaf->bias * (float)is; /* exact */
                c[n][k] = scaled + shifted;
            } else {
                float p[4];
                for (unsigned i = 0; i < 4; i++) {
                    const unsigned col = 4 * k + i;
                    const uint64_t column = bx * SGFP4_MB + col;
                    if (column >= tensor->cols) {
                        p[i] = 0.0f; /* padding: +0, not w * 0 */
                        continue;
                    }
                    const float product = leaf->scale * (float)code_at(leaf, y, col);
                    const float w = product + leaf->bias; /* D1 */
                    p[i] = w * activation_b(j->x, n, column);
                }
                const float left = p[0] + p[1];
                const float right = p[2] + p[3];
                c[n][k] = left + right;
            }
        }
    }
    for (unsigned n = 0; n < j->x->batch; n++) {
        t[n] = tree16(c[n]);
        if (j->cls == CLASS_A)
            t[n] = t[n] * sgfp4_q8_d(j->x, n, tensor->tiles_x, bx); /* exact: d_b is 0 or 2^e */
    }
}

/* The D8 tree over the row's n block partials t_0 .. t_{n-1}, padded with +0 to P (the next
 * power of two), restated so that the partials are computed on demand, one block at a time,
 * in no memory beyond the recursion (depth log2 P): every step of the D8 tree but the last
 * (h = P/2 .. 2, even) adds indices of equal parity, so those steps are exactly the D8 tree
 * of the even-indexed and of the odd-indexed subsequence, whose results land in v_0 and v_1;
 * the last step (h = 1) adds the two. So tree(v) = fl32(tree(v_0, v_2, ..) + tree(v_1, v_3, ..)).
 * This call is tree(v_start, v_{start+stride}, ...) over `count` values (a power of two). */
static void block_tree(const row_job *j, uint64_t start, uint64_t stride, uint64_t count,
                       float out[SGFP4_MATVEC_MAX_BATCH])
{
    if (count == 1) {
        if (start < j->t->tiles_x) {
            block_partial(j, start, out);
        } else {
            for (unsigned n = 0; n < j->x->batch; n++)
                out[n] = 0.0f; /* the +0 padding */
        }
        return;
    }
    float odd[SGFP4_MATVEC_MAX_BATCH];
    block_tree(j, start, 2 * stride, count / 2, out);
    block_tree(j, start + stride, 2 * stride, count / 2, odd);
    for (unsigned n = 0; n < j->x->batch; n++)
        out[n] = out[n] + odd[n];
}

static void scalar_rows(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                        const sgfp4_matvec_x *x, const sgfp4_matvec_y *y, activation_class cls)
{
    uint64_t padded = 1;
    while (padded < plan->tensor->tiles_x)
        padded *= 2;
    for (uint64_t r = r0; r < r1; r++) {
        const row_job j = {plan->tensor, x, cls, r};
        float result[SGFP4_MATVEC_MAX_BATCH];
        block_tree(&j, 0, 1, padded, result);
        for (unsigned n = 0; n < x->batch; n++)
            y->base[n * y->stride + (r - y->row_begin)] = result[n];
    }
}

static void scalar_rows_q8(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                           const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    scalar_rows(plan, r0, r1, x, y, CLASS_A);
}

static void scalar_rows_float(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                              const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    scalar_rows(plan, r0, r1, x, y, CLASS_B);
}

const sgfp4_matvec_kernels sgfp4_matvec_kernels_scalar = {
    "scalar", scalar_rows_q8, scalar_rows_float, sgfp4_matvec_quantize_scalar, false};
