/* The spec's dual-mode rule (§22.7): prefer T158 when its Laplacian-weighted error is at
 * most (1 + delta) times FP4's, unless some weight's error exceeds 5 S (the outlier guard).
 * SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/error_metric.h"

unsigned sgfp4_choose_mode_reference(const float *w, unsigned rows, unsigned cols,
                                     const sgfp4_leaf_params *fp4,
                                     const sgfp4_leaf_params *t158, double delta,
                                     sgfp4_profile profile, float *scratch, double *error)
{
    float worst_t158 = 0;
    const double e_fp4 = sgfp4_laplacian_error(w, rows, cols, fp4, profile, scratch, NULL);
    const double e_t158 = sgfp4_laplacian_error(w, rows, cols, t158, profile, scratch, &worst_t158);
    const float s_t158 = sgfp4_half_to_float(t158->scale);
    const int outlier = worst_t158 > 5.0f * s_t158;
    if (!outlier && e_t158 <= (1.0 + delta) * e_fp4) {
        *error = e_t158;
        return SGFP4_MODE_T158;
    }
    *error = e_fp4;
    return SGFP4_MODE_FP4;
}
