/* The bounds on what a zstd model input may decompress to (the copy goes to a temporary
 * file): an absolute size, a multiple of the compressed size (never below a floor, so small
 * files are not refused for compressing well), and a share of the temp folder's free space.
 * The smallest bound applies; the message names it and the option that raises it.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_ZSTD_BOUNDS_H
#define SGFP4_MODEL_ZSTD_BOUNDS_H

#include <stdbool.h>

#include "sgfp4_model.h"

typedef struct sgfp4_zstd_bounds {
    uint64_t max_bytes;   /* max_decompressed_bytes */
    uint64_t ratio;       /* max_decompression_ratio */
    uint64_t input_bytes; /* the compressed file's size; 0 if unknown (a pipe) */
    bool space_known;     /* the temp folder reported its free space */
    uint64_t free_bytes;  /* free space there when decompression started */
    unsigned percent;     /* max_temp_space_percent, 1..100 */
} sgfp4_zstd_bounds;

typedef enum sgfp4_zstd_bound {
    SGFP4_ZSTD_BOUND_ABSOLUTE,
    SGFP4_ZSTD_BOUND_RATIO,
    SGFP4_ZSTD_BOUND_SPACE
} sgfp4_zstd_bound;

/* The most bytes the copy may hold once `consumed` compressed bytes were read (that count
 * stands in for the input size when it is unknown), and which bound sets it. */
sgfp4_zstd_bound sgfp4_zstd_limit(const sgfp4_zstd_bounds *bounds, uint64_t consumed,
                                  uint64_t *limit);

/* Decompresses fd (a zstd stream, `path` for messages) into a new unlinked temporary file
 * within the bounds of `options` (NULL: defaults); returns its descriptor in *out_fd. */
sgfp4_status sgfp4_zstd_decompress_to_temp(int fd, const char *path,
                                           const sgfp4_model_open_options *options, int *out_fd,
                                           sgfp4_diag *diag);

#endif
