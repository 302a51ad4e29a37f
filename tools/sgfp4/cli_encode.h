/* Encoder-side helpers of the CLI: loading a float matrix (raw float32 or .npy f32/f16),
 * the quality report of a container against its reference weights, and the leaf-map picture.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CLI_ENCODE_H
#define SGFP4_CLI_ENCODE_H

#include "cli.h"

/* Loads IN as a row-major float32 matrix: a .npy file (f4 or f2, by its magic), or raw
 * little-endian float32 of shape *rows x *cols (required then; a .npy's shape must match
 * it when given). Returns a malloc'ed buffer or NULL after printing why. */
float *cli_load_matrix(const char *command, const char *path, uint64_t *rows, uint64_t *cols);

/* Loads tensor `name` of a safetensors file as float32 (F32, F16, BF16; rank 2 as is,
 * rank 1 as one row, higher ranks as [prod(leading dims), last]); a --shape given in *rows,
 * *cols must match. Returns a malloc'ed buffer or NULL after printing why. */
float *cli_load_safetensor(const char *command, const char *path, const char *name,
                           uint64_t *rows, uint64_t *cols);

/* Error statistics of a decoded tensor against its reference. */
typedef struct cli_quality {
    double sse, ref_sq, max_abs;
    uint64_t count;
} cli_quality;
void cli_quality_measure(const float *ref, const float *dec, uint64_t count, cli_quality *q);

/* Prints bits per weight, RMSE, relative L2, max abs error, SNR and the share of weights per
 * leaf size and mode of an opened tensor against reference file `ref_path`. Returns an exit
 * code. */
int cli_quality_report(const char *command, const sgfp4_tensor *t, const char *ref_path);

/* Draws the leaf map of an opened tensor to a PNG (docs/cli.md, "Leaf map"). */
int cli_leaf_map(const char *command, const sgfp4_tensor *t, const char *png_path);

/* Decodes a whole tensor to a new float32 buffer (NULL on failure). */
float *cli_decode_f32(const sgfp4_tensor *t, unsigned threads);

#endif
