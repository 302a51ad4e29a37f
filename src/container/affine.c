/* The failure messages of the affine header rule (affine.h).
 * SPDX-License-Identifier: MIT */
#include <stdbool.h>

#include "container/affine.h"
#include "common/diag.h"

sgfp4_status sgfp4_affine_fail(sgfp4_status status, uint32_t header, uint32_t bias_mask,
                               int64_t offset, int64_t block, int32_t leaf, const char *where,
                               sgfp4_diag *diag)
{
    const bool is_bias = status == SGFP4_ERR_BIAS_NONFINITE;
    const unsigned half = is_bias ? header & bias_mask & 0xFFFFu : header >> 16;
    const char *why = status == SGFP4_ERR_SCALE_NEGATIVE ? "negative" : "infinite or NaN";
    return sgfp4_fail(diag, status, offset, block, leaf, "%s header at byte %lld: %s 0x%04x is %s",
                      where, (long long)offset, is_bias ? "bias" : "scale", half, why);
}
