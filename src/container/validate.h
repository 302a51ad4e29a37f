/* Acceptance checks of the two profiles (DECISIONS D2). Each validator reads only inside
 * [t->data, t->data + t->size), fills the statistics in t->info, and returns the status of
 * the first violated rule (with *diag filled) or SGFP4_OK.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CONTAINER_VALIDATE_H
#define SGFP4_CONTAINER_VALIDATE_H

#include "container/tensor.h"

sgfp4_status sgfp4_validate_v1(sgfp4_tensor *t, sgfp4_diag *diag);
sgfp4_status sgfp4_validate_v2(sgfp4_tensor *t, sgfp4_diag *diag);

/* Checks a leaf's packed half2 header: scale finite and not negative (-0 allowed), bias
 * finite after `bias_mask`. `where` names the leaf in messages. */
sgfp4_status sgfp4_check_affine(uint32_t header, uint32_t bias_mask, int64_t offset,
                                int64_t block, int32_t leaf, const char *where,
                                sgfp4_diag *diag);

#endif
