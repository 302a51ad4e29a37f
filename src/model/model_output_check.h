/* Checks of a model file just written (model_output_check.c), for model_output.c.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_OUTPUT_CHECK_H
#define SGFP4_MODEL_OUTPUT_CHECK_H

#include "sgfp4_model.h"

/* Opens the file at `path` (shown as `shown`) into *out; on failure the status is `failure`
 * (SGFP4_OK: the open's own status). */
sgfp4_status sgfp4_model_check_opens(const char *path, const char *shown, sgfp4_model **out,
                                     sgfp4_status failure, sgfp4_diag *diag);
/* What sgfp4_model_encode wrote from `src`: verified, D6-aligned, every tensor there and
 * every pass-through tensor byte for byte the source's. */
sgfp4_status sgfp4_model_check_encoded(const char *path, const char *shown,
                                       const sgfp4_model *src, sgfp4_diag *diag);
/* What sgfp4_model_decode wrote from `src`: opens, with every tensor. */
sgfp4_status sgfp4_model_check_decoded(const char *path, const char *shown,
                                       const sgfp4_model *src, sgfp4_diag *diag);

#endif
