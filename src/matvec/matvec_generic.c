/* The portable matvec kernel set ("generic", SGFP4_BACKEND_GENERIC): plain C on the shared
 * strip loop (strip_driver.h), for machines without a SIMD set. Unlike the oracle, which
 * lists a block's leaves again for every row and looks up each cell's leaf, it lists a block
 * once per strip and walks each leaf's cells: the cell formulas are D8's, one binary32
 * operation at a time (the build has -ffp-contract=off).
 * SPDX-License-Identifier: MIT */
#include "listing/leaf_list.h"

#include "matvec/strip.h"

#define MV_FN static

typedef struct mv_work {
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    float c[SGFP4_MATVEC_CHUNK][SGFP4_MB][SGFP4_MATVEC_CELLS]; /* [vector][row][cell] */
} mv_work;

/* Code j (0..3) of cell k of leaf row i (relative to the leaf). */
static int leaf_code(const sgfp4_leaf_ref *leaf, unsigned i, unsigned column)
{
    const unsigned at = i * leaf->size + column;
    return leaf->mode == SGFP4_MODE_T158 ? sgfp4_t158_code(leaf->payload, at)
                                         : sgfp4_fp4_code(leaf->payload, at);
}

/* The D8 tree of 16 values. */
static float tree16(const float v[SGFP4_MATVEC_CELLS])
{
    float w[SGFP4_MATVEC_CELLS];
    memcpy(w, v, sizeof w);
    for (unsigned h = SGFP4_MATVEC_CELLS / 2; h >= 1; h /= 2)
        for (unsigned i = 0; i < h; i++)
            w[i] = w[i] + w[i + h];
    return w[0];
}

static void mv_block(const sgfp4_matvec_strip *s, uint64_t bx, float (*t)[SGFP4_MB], mv_work *w)
{
    const sgfp4_tensor *tensor = s->t;
    const unsigned n = sgfp4_list_block_refs(tensor, s->by * tensor->tiles_x + bx, w->leaves);
    const unsigned lo = 8 * s->g0, hi = 8 * s->g1;
    /* What each vector contributes to this block: Class A q, the cell sums is and d;
     * Class B the activations read as D8 reads them (+0 below 2^-60) and the real columns. */
    int8_t q[SGFP4_MATVEC_CHUNK][SGFP4_MB];
    int32_t is[SGFP4_MATVEC_CHUNK][SGFP4_MATVEC_CELLS];
    float a[SGFP4_MATVEC_CHUNK][SGFP4_MB];
    const uint64_t c0 = bx * SGFP4_MB;
    const unsigned width = (unsigned)(tensor->cols - c0 < SGFP4_MB ? tensor->cols - c0 : SGFP4_MB);
    for (unsigned v = 0; v < s->nv; v++) {
        if (s->class_a) {
            memcpy(q[v], sgfp4_q8_q(s->x, s->n0 + v) + c0, SGFP4_MB);
            for (unsigned k = 0; k < SGFP4_MATVEC_CELLS; k++)
                is[v][k] = q[v][4 * k] + q[v][4 * k + 1] + q[v][4 * k + 2] + q[v][4 * k + 3];
        } else {
            const uint8_t *in = s->x->data + (s->n0 + v) * s->x->vector_bytes;
            for (unsigned j = 0; j < width; j++) {
                const float x = sgfp4_matvec_x_at(in, s->x->dtype, c0 + j);
                a[v][j] = (sgfp4_float_to_bits(x) & 0x7FFFFFFFu) < (127u - 60u) << 23 ? 0.0f : x;
            }
        }
    }
    for (unsigned l = 0; l < n; l++) {
        const sgfp4_leaf_ref *leaf = &w->leaves[l];
        const unsigned r0 = leaf->y > lo ? leaf->y : lo;
        const unsigned r1 = leaf->y + leaf->size < hi ? leaf->y + leaf->size : hi;
        for (unsigned r = r0; r < r1; r++) {
            for (unsigned k = leaf->x / 4; k < (leaf->x + leaf->size) / 4u; k++) {
                int code[4];
                for (unsigned j = 0; j < 4; j++)
                    code[j] = leaf_code(leaf, r - leaf->y, 4 * k + j - leaf->x);
                for (unsigned v = 0; v < s->nv; v++) {
                    if (s->class_a) {
                        int32_t iq = 0;
                        for (unsigned j = 0; j < 4; j++)
                            iq += code[j] * q[v][4 * k + j];
                        const float scaled = leaf->scale * (float)iq;    /* exact */
                        const float shifted = leaf->bias * (float)is[v][k]; /* exact */
                        w->c[v][r][k] = scaled + shifted;
                    } else {
                        float p[4];
                        for (unsigned j = 0; j < 4; j++) {
                            const unsigned col = 4 * k + j;
                            const float product = leaf->scale * (float)code[j];
                            const float weight = product + leaf->bias; /* D1 */
                            p[j] = col < width ? weight * a[v][col] : 0.0f;
                        }
                        const float left = p[0] + p[1];
                        const float right = p[2] + p[3];
                        w->c[v][r][k] = left + right;
                    }
                }
            }
        }
    }
    for (unsigned v = 0; v < s->nv; v++) {
        const float d = s->class_a ? sgfp4_q8_d(s->x, s->n0 + v, tensor->tiles_x, bx) : 1.0f;
        for (unsigned r = lo; r < hi; r++) {
            const float sum = tree16(w->c[v][r]);
            t[v][r] = s->class_a ? sum * d : sum; /* d_b: exact */
        }
    }
}

static void mv_add(float *restrict a, const float *restrict b, unsigned count)
{
    for (unsigned i = 0; i < count; i++)
        a[i] = a[i] + b[i];
}

#include "matvec/strip_driver.h"

static void generic_rows_q8(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                            const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    mv_strip(plan, r0, r1, x, y, true);
}

static void generic_rows_float(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                               const sgfp4_matvec_x *x, const sgfp4_matvec_y *y)
{
    mv_strip(plan, r0, r1, x, y, false);
}

const sgfp4_matvec_kernels sgfp4_matvec_kernels_generic = {
    "generic", generic_rows_q8, generic_rows_float, sgfp4_matvec_quantize_scalar, false};
