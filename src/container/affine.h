/* The affine rule every leaf header obeys in both profiles (DECISIONS D2): a packed half2
 * word whose scale is finite and not negative (-0 is allowed) and whose bias, after the
 * profile's mask, is finite.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CONTAINER_AFFINE_H
#define SGFP4_CONTAINER_AFFINE_H

#include "sgfp4.h"

/* SGFP4_OK, or the first rule the header breaks (SGFP4_ERR_SCALE_NONFINITE,
 * SGFP4_ERR_SCALE_NEGATIVE, SGFP4_ERR_BIAS_NONFINITE). Formats nothing: it runs once per leaf
 * of every open, so the message is left to sgfp4_affine_fail() on the failure path. */
static inline sgfp4_status sgfp4_affine_check(uint32_t header, uint32_t bias_mask)
{
    const uint32_t scale = header >> 16, bias = header & bias_mask & 0xFFFFu;
    if ((scale & 0x7C00u) == 0x7C00u)
        return SGFP4_ERR_SCALE_NONFINITE;
    if ((scale & 0x8000u) && (scale & 0x7FFFu))
        return SGFP4_ERR_SCALE_NEGATIVE;
    if ((bias & 0x7C00u) == 0x7C00u)
        return SGFP4_ERR_BIAS_NONFINITE;
    return SGFP4_OK;
}

/* Records `status` (what sgfp4_affine_check() returned for `header`) in *diag with the
 * message "<where> header at byte N: scale 0x.... is ..." and returns it. `where` names the
 * leaf ("v2 record 3 leaf 7:"); offset is the header's byte, block and leaf as in
 * sgfp4_diag. */
sgfp4_status sgfp4_affine_fail(sgfp4_status status, uint32_t header, uint32_t bias_mask,
                               int64_t offset, int64_t block, int32_t leaf, const char *where,
                               sgfp4_diag *diag);

#endif
