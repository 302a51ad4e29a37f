/* Internal pieces of the encoder (docs/encoder.md): leaf fitting, error metrics, mode choice,
 * quadtree policies and the v1 / v2 writers. Every function here is a pure function of its
 * arguments, so the encoder's output does not depend on threads (DECISIONS D7).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_INTERNAL_H
#define SGFP4_ENCODE_INTERNAL_H

#include <stdint.h>

#include "encode/simd.h"
#include "sgfp4.h"

#define SGFP4_HALF_MAX 65504.0f
/* Quadtree nodes of one macroblock: 1 + 4 + 16 + 64 + 256. Node (level l, row r, col c) of a
 * 2^l x 2^l grid of edge 64 >> l is at index sgfp4_node_base[l] + r * 2^l + c. */
#define SGFP4_NODES 341u
#define SGFP4_LEVELS 5u
extern const unsigned sgfp4_node_base[SGFP4_LEVELS];

/* Padding (docs/encoder.md, "Edge padding"): the weights of an edge macroblock beyond the
 * tensor (rows >= O or cols >= I of the 64-multiple grid) are cropped by every decoder, so
 * they carry no weight anywhere in the encoder. The valid part of a block is its top-left
 * valid_rows x valid_cols rectangle, and so is the valid part of each of its leaves: the
 * fits, errors and mode choices run on that rectangle alone, gathered densely
 * (sgfp4_gather_leaf_valid); a leaf with no valid weight has error 0 and the cheapest
 * parameters (S = 0, B = 0, T158 where that is cheaper). The writers quantize the whole
 * leaf, so a padding weight (zero) gets the code nearest -B/S: deterministic, never read. */
/* Rows (or columns) of a leaf starting at `at` with edge `size` that lie inside the first
 * `valid` rows (columns) of its block. */
static inline unsigned sgfp4_valid_extent(unsigned valid, unsigned at, unsigned size)
{
    return valid <= at ? 0u : valid - at < size ? valid - at : size;
}

/* A fitted leaf as it will be stored: fp16 scale bits, fp16 bias bits (v2: low 4 bits zero)
 * and the squared error of the decoded leaf against the input. */
typedef struct sgfp4_leaf_params {
    uint16_t scale, bias;
    uint8_t mode;
    float sse;
} sgfp4_leaf_params;

/* One leaf of a block plan. */
typedef struct sgfp4_plan_leaf {
    uint8_t y, x, size, mode;
    uint16_t scale, bias;
} sgfp4_plan_leaf;

/* What one macroblock record will hold: the layout, the split map (MIXED only) and the
 * leaves in storage order. A v1 block is a plan with one 64x64 leaf. */
typedef struct sgfp4_block_plan {
    uint8_t layout;
    uint8_t error_hint; /* v1 only: the mode was chosen by the Laplacian-weighted rule */
    uint16_t count;
    uint32_t split[3];
    sgfp4_plan_leaf leaves[256];
} sgfp4_block_plan;

/* ---- fitting (leaf_stats.c, fit_fp4.c, fit_t158.c, fit_finalize.c) ---- */
typedef struct sgfp4_leaf_stats {
    float mean;          /* mean of w */
    float min, max;      /* of the centred values c = w - mean */
    double sum, sum_sq;  /* sum of c and of c^2 */
    double abs_sum;      /* sum of |c| */
    double weight;       /* sum of the error weights (n when unweighted) */
} sgfp4_leaf_stats;
/* Error weights: a leaf's fits minimize sum h_i (w_i - decoded_i)^2, h the per-weight error
 * weights of the metric (docs/encoder.md, "Error metrics"), or h = NULL: every h_i = 1 (plain
 * squared error). With weights, the sums of sgfp4_leaf_stats are weighted (sum = sum h c,
 * sum_sq = sum h c^2, abs_sum = sum h |c|) and the mean is the weighted mean. */
/* Centres w (n >= 1 weights) into c and fills the statistics. The fits work on c, so
 * their sums do not cancel when a leaf's values sit far from zero. */
void sgfp4_leaf_center(const float *w, const float *h, unsigned n, float *c,
                       sgfp4_leaf_stats *st);
/* Fits a leaf of n weights (w, and c and st from sgfp4_leaf_center) in one mode and returns
 * the stored parameters with the exact (weighted) squared error of the decoded leaf. */
void sgfp4_fit_fp4(const float *w, const float *c, const float *h, const sgfp4_leaf_stats *st,
                   unsigned n, sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out);
void sgfp4_fit_t158(const float *w, const float *c, const float *h, const sgfp4_leaf_stats *st,
                    unsigned n, sgfp4_fit fit, sgfp4_profile profile, sgfp4_leaf_params *out);
/* The searches of those fits alone: the fitted (scale, bias) before rounding to the stored
 * values (bias in w's coordinates, not centred). */
void sgfp4_search_fp4(const float *c, const float *h, const sgfp4_leaf_stats *st, unsigned n,
                      sgfp4_fit fit, float *scale, float *bias);
void sgfp4_search_t158(const float *c, const float *h, const sgfp4_leaf_stats *st, unsigned n,
                       sgfp4_fit fit, float *scale, float *bias);
/* Rounds a fitted (scale, bias) to the stored fp16 values; the codes are those nearest
 * under the stored values. `refine`: refit the bias to the codes after rounding S, and keep
 * the better of the two stored bias neighbours. Fills out. */
void sgfp4_fit_finalize(const float *w, const float *h, unsigned n, unsigned mode, float scale,
                        float bias, int refine, sgfp4_profile profile, sgfp4_leaf_params *out);

/* ---- quantization against stored values (quantize.c) ---- */
/* The stored fp16 value of a bias: v1 nearest fp16; v2 the nearest value whose low 4 bits
 * are zero. `other` (v2) selects the other neighbour instead (the same one when the other
 * is not finite). Clips to the fp16 range. */
uint16_t sgfp4_bias_to_half(float bias, sgfp4_profile profile, int other);
/* The two stored v2 values around a bias at once, as sgfp4_bias_to_half(bias, V2, 0) and
 * (.., 1) give them, with their float values. */
void sgfp4_bias_candidates(float bias, uint16_t *nearest, uint16_t *other, float *nearest_value,
                           float *other_value);
/* The nearest code of one weight w for bias B and inv = 1 / S (0 when S is 0), clipped to
 * [lo, hi]: the one rounding every quantizing loop shares, so that they agree exactly. */
static inline float sgfp4_code_of(float w, float bias, float inv, float lo, float hi)
{
    float x = (w - bias) * inv;
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    return (x + SGFP4_ROUND_MAGIC) - SGFP4_ROUND_MAGIC;
}
/* Codes (as floats) of n weights for S and B: nearest grid point,
 * clipped to the mode's code range; all zero when S is zero. */
void sgfp4_quantize(const float *w, unsigned n, unsigned mode, float scale, float bias,
                    float *codes);
/* Exact squared error of the decoded leaf fl32(S*q + B) against w, q as sgfp4_quantize,
 * each weight's error times h_i (h NULL: unweighted). */
double sgfp4_sse_at(const float *w, const float *h, unsigned n, unsigned mode, float scale,
                    float bias);
/* The (h-weighted) mean of w - S q, q as sgfp4_quantize: the best bias for those codes. */
double sgfp4_bias_for_codes(const float *w, const float *h, unsigned n, unsigned mode,
                            float scale, float bias);
/* Packs codes into a payload (FP4 nibbles or T158 2-bit symbols, spec §22.6). */
void sgfp4_pack_codes(const float *codes, unsigned n, unsigned mode, uint8_t *payload);

/* ---- error metrics and mode choice (error_metric.c, mode_choice.c) ---- */
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

/* ---- macroblock gathering (block_io.c) ---- */
/* Copies macroblock (by, bx) of the tensor into block[64*64], zero padded, clipped to the
 * fp16 range. */
void sgfp4_gather_block(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                        uint64_t by, uint64_t bx, float *block);
/* Copies the size x size leaf at (y, x) of a block into leaf[] row-major. */
void sgfp4_gather_leaf(const float *block, unsigned y, unsigned x, unsigned size, float *leaf);
/* Copies the valid rows x cols top-left part of the leaf at (y, x) into leaf[] densely
 * (row-major with stride cols); the same as sgfp4_gather_leaf when rows = cols = size. */
void sgfp4_gather_leaf_valid(const float *block, unsigned y, unsigned x, unsigned rows,
                             unsigned cols, float *leaf);

/* ---- plans and writers (plan.c, write_v1.c, write_v2.c) ---- */
/* Builds a plan from per-node decisions: choice[node] = 0 FP4 leaf, 1 T158 leaf, 2 split;
 * params[node*2 + mode] holds the leaf parameters. Collapses uniform trees to their
 * uniform layout. */
void sgfp4_plan_from_choices(const uint8_t *choice, const sgfp4_leaf_params *params,
                             sgfp4_block_plan *plan);
/* Bytes of the v2 record a plan produces. */
uint32_t sgfp4_record_bytes(const sgfp4_block_plan *plan);
/* Writes a v2 record (exactly sgfp4_record_bytes bytes) for the block's weights. */
void sgfp4_write_record(const sgfp4_block_plan *plan, const float *block, float *scratch,
                        uint8_t *record);
/* Size of the v2 stream header, offset table and its pad: align16(16 + 4 B). */
uint64_t sgfp4_v2_table_bytes(uint64_t blocks);
/* Writes the v2 stream header and offset table (offsets relative to the record region). */
void sgfp4_write_v2_table(uint64_t blocks, const uint64_t *record_offsets, uint8_t *stream);
/* Writes v1 block b: its header, offset and 2048-byte payload into a v1 container of
 * `blocks` blocks. */
void sgfp4_write_v1_block(const sgfp4_block_plan *plan, const float *block, uint64_t b,
                          uint64_t blocks, float *scratch, uint8_t *container);

/* ---- per-macroblock analysis and policies (analyze.c, policy_*.c) ---- */
/* Fits both modes at every node of a block whose valid part is its top-left
 * valid_rows x valid_cols: params[node*2 + mode]. row_weight and col_weight (64 each, or
 * both NULL: unweighted) give the error weight of block weight (y, x) as
 * row_weight[y] * col_weight[x]. */
void sgfp4_analyze_block(const float *block, unsigned valid_rows, unsigned valid_cols,
                         const float *row_weight, const float *col_weight, sgfp4_fit fit,
                         sgfp4_profile profile, float *scratch,
                         sgfp4_leaf_params params[SGFP4_NODES * 2]);
/* Cost in bytes of a leaf of edge size in mode: 4 (header) + payload padded to 16. */
static inline uint32_t sgfp4_leaf_cost(unsigned size, unsigned mode)
{
    const uint32_t payload = mode ? size * size / 4u : size * size / 2u;
    return 4u + ((payload + 15u) & ~15u);
}
/* Lagrangian pruning: chooses per node minimizing D + lambda R bottom-up; fills choice and
 * returns the bytes of the record it gives (sgfp4_record_bytes of its plan). */
uint32_t sgfp4_prune_rate(const sgfp4_leaf_params params[SGFP4_NODES * 2], double lambda,
                          uint8_t choice[SGFP4_NODES]);
/* The spec's threshold split policy; fills the plan. mean_square: the tensor's mean w^2. */
void sgfp4_plan_threshold(const float *block, unsigned valid_rows, unsigned valid_cols,
                          const sgfp4_encode_options *o, double mean_square, float *scratch,
                          sgfp4_block_plan *plan);
/* One v1 block: a single 64x64 leaf, mode chosen by the reference rule. */
void sgfp4_plan_v1(const float *block, unsigned valid_rows, unsigned valid_cols,
                   const sgfp4_encode_options *o, float *scratch, sgfp4_block_plan *plan);

/* ---- error weights (error_weights.c) ---- */
/* Whether the options' metric weighs errors (anything but plain squared error). */
int sgfp4_metric_is_weighted(const sgfp4_encode_options *o);
/* Whether an importance vector is acceptable: NULL, or `count` finite values >= 0 with a
 * positive finite sum. */
int sgfp4_importance_ok(const float *importance, uint64_t count);
/* Fills row_weight[ceil(rows/64)*64] and col_weight[ceil(cols/64)*64]: the metric's error
 * weights (each normalized to mean 1 over the tensor, floored above 0), 0 in the padding. */
void sgfp4_error_weights(const float *src, uint64_t rows, uint64_t cols, size_t stride,
                         const sgfp4_encode_options *o, float *row_weight, float *col_weight);

/* Scratch floats a worker needs for any of the calls above (16-byte aligned). */
#define SGFP4_ENCODE_SCRATCH (4096u * 4u)

#endif
