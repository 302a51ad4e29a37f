/* The calibrated sweep of one band of 64 rows (encode/calibrate.h). Per block of 64 columns:
 *  1. z = E V: the feedback of every earlier column, E the errors w_j - q_j of those columns
 *     (q the decoded values), V their rows of Vu (encode/hessian.h), in chunks of columns;
 *  2. y = w + z G: the weights as GPTQ's sweep holds them when it reaches the block;
 *  3. column by column: the leaves starting at this column are fitted on y; every row's
 *     weight is quantized with its leaf's stored scale and bias; the compensated error
 *     y_x - q_x goes to the block's later columns through G's row x, and w_x - q_x into E.
 * The values y_x at the time each column is quantized are what the writer gets: its nearest
 * codes are then exactly the sweep's.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "encode/block_io.h"
#include "encode/block_plan.h"
#include "encode/block_write.h"
#include "encode/calibrate.h"
#include "encode/leaf_fit.h"
#include "encode/quantize.h"
#include "encode/simd.h"

/* Columns of E and V per product (their chunks stay in the cache while 64 rows use them). */
#define CHUNK 256u

/* Per worker: E (64 rows of the padded width), then the 64x64 blocks w, z, y and the
 * writer's copy, then the fits' leaf, centred values and error weights, then the writer's
 * scratch. */
size_t sgfp4_sweep_scratch(uint64_t cols)
{
    return (size_t)64 * (size_t)((cols + 63) / 64 * 64) + 4u * 4096u + SGFP4_ENCODE_SCRATCH;
}

/* The fp16 range, as the writer clips (a value that is not a number becomes 0: it cannot
 * arise from finite inputs and a damped factorization, and must not reach a code). */
static inline float clip_half_range(float v)
{
    v = v > SGFP4_HALF_MAX ? SGFP4_HALF_MAX : v;
    v = v < -SGFP4_HALF_MAX ? -SGFP4_HALF_MAX : v;
    return v == v ? v : 0.0f;
}

/* Fits leaf l of the plan on the current values y (its valid part) and stores its scale and
 * bias in the plan. */
static void fit_leaf(const sgfp4_sweep *s, sgfp4_plan_leaf *l, const float *y, unsigned rows,
                     unsigned cols, const float *row_weight, const float *col_weight,
                     float *scratch)
{
    const unsigned vr = sgfp4_valid_extent(rows, l->y, l->size);
    const unsigned vc = sgfp4_valid_extent(cols, l->x, l->size);
    const unsigned n = vr * vc;
    if (n == 0)
        return; /* all padding: the plan's S = B = 0 stands */
    float *leaf = scratch, *centred = scratch + 4096, *h = scratch + 8192;
    for (unsigned r = 0; r < vr; r++)
        for (unsigned c = 0; c < vc; c++) {
            leaf[r * vc + c] = clip_half_range(y[(l->y + r) * 64 + l->x + c]);
            h[r * vc + c] = row_weight[l->y + r] * col_weight[l->x + c];
        }
    sgfp4_leaf_stats st;
    sgfp4_leaf_params p;
    sgfp4_leaf_center(leaf, h, n, centred, &st);
    if (l->mode == SGFP4_MODE_FP4)
        sgfp4_fit_fp4(leaf, centred, h, &st, n, s->fit, s->profile, &p);
    else
        sgfp4_fit_t158(leaf, centred, h, &st, n, s->fit, s->profile, &p);
    l->scale = p.scale;
    l->bias = p.bias;
}

/* Steps 3 of one block: the column sweep inside it (see the file comment). */
static void sweep_block(const sgfp4_sweep *s, sgfp4_block_plan *plan, const float *w, float *y,
                        const float *g, unsigned rows, unsigned cols, const float *row_weight,
                        const float *col_weight, float *e, size_t e_pitch, float *out,
                        float *scratch)
{
    /* Which leaf holds each weight, and the leaves by first column. */
    uint16_t owner[64][64];
    int16_t first[64], next[256];
    for (unsigned x = 0; x < 64; x++)
        first[x] = -1;
    for (unsigned i = plan->count; i-- > 0;) {
        const sgfp4_plan_leaf *l = &plan->leaves[i];
        for (unsigned r = 0; r < l->size; r++)
            for (unsigned c = 0; c < l->size; c++)
                owner[l->y + r][l->x + c] = (uint16_t)i;
        next[i] = first[l->x];
        first[l->x] = (int16_t)i;
    }
    float feedback[64];
    for (unsigned x = 0; x < cols; x++) {
        for (int i = first[x]; i >= 0; i = next[i])
            fit_leaf(s, &plan->leaves[i], y, rows, cols, row_weight, col_weight, scratch);
        for (unsigned r = 0; r < rows; r++) {
            const sgfp4_plan_leaf *l = &plan->leaves[owner[r][x]];
            const float scale = sgfp4_half_to_float(l->scale);
            const float bias = sgfp4_half_to_float((uint16_t)(l->bias & 0xFFF0u));
            const float v = clip_half_range(y[r * 64 + x]);
            const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
            const float q = l->mode ? sgfp4_code_of(v, bias, inv, -1.0f, 1.0f)
                                    : sgfp4_code_of(v, bias, inv, -8.0f, 7.0f);
            const float product = scale * q;
            const float decoded = product + bias;
            out[r * 64 + x] = v;
            feedback[r] = y[r * 64 + x] - decoded;
            e[r * e_pitch + x] = w[r * 64 + x] - decoded;
        }
        const float *gx = g + x * 64;
        for (unsigned r = 0; r < rows; r++) {
            float *restrict yr = y + r * 64;
            const float f = feedback[r];
            for (unsigned k = x + 1; k < cols; k++)
                yr[k] -= f * gx[k];
        }
    }
}

void sgfp4_sweep_band(void *ctx, uint64_t band, unsigned worker)
{
    const sgfp4_sweep *s = ctx;
    const size_t e_pitch = (size_t)s->tiles_x * 64;
    float *e = s->scratch + (size_t)worker * sgfp4_sweep_scratch(s->cols);
    float *w = e + 64 * e_pitch, *z = w + 4096, *y = z + 4096, *out = y + 4096;
    float *scratch = out + 4096;
    const unsigned rows = (unsigned)(s->rows - band * 64 < 64 ? s->rows - band * 64 : 64);
    const float *row_weight = s->row_weight + band * 64;
    for (uint64_t bx = 0; bx < s->tiles_x; bx++) {
        const uint64_t b = band * s->tiles_x + bx;
        const unsigned c0 = (unsigned)bx * 64;
        const unsigned cols = (unsigned)(s->cols - c0 < 64 ? s->cols - c0 : 64);
        const float *panel = s->hessian->factor + sgfp4_hessian_panel((unsigned)bx);
        sgfp4_gather_block(s->src, s->rows, s->cols, s->stride, band, bx, w);
        memset(z, 0, 4096 * sizeof *z);
        for (unsigned p = 0; p < c0; p += CHUNK) {
            const unsigned k = c0 - p < CHUNK ? c0 - p : CHUNK;
            s->kernels->add_f32(rows, k, cols, e + p, e_pitch, 1, panel + (size_t)p * 64, 64, z,
                                64);
        }
        memcpy(y, w, 4096 * sizeof *y);
        if (c0 > 0)
            s->kernels->add_f32(rows, cols, cols, z, 64, 1, panel + (size_t)c0 * 64, 64, y, 64);
        memset(out, 0, 4096 * sizeof *out);
        sgfp4_block_plan *plan = &s->plans[b];
        sweep_block(s, plan, w, y, panel + (size_t)c0 * 64, rows, cols, row_weight,
                    s->col_weight + c0, e + c0, e_pitch, out, scratch);
        if (s->profile == SGFP4_PROFILE_V1)
            sgfp4_write_v1_block(plan, out, b, s->blocks, scratch, s->out);
        else
            sgfp4_write_record(plan, out, scratch,
                               s->out + sgfp4_v2_table_bytes(s->blocks) + s->offsets[b]);
    }
}
