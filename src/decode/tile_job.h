/* What the SIMD kernel sets' row writers are given (tile_driver.h runs them): where each
 * row of the macroblock row goes, in which type, and each row's unfinished output line.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_DECODE_TILE_JOB_H
#define SGFP4_DECODE_TILE_JOB_H

#include <stdbool.h>

#include "decode/kernels.h"

#define TILE_FLOATS (SGFP4_MB * SGFP4_MB)

/* Row y of the macroblock row (y in ys[0..nrows)) starts at dst[y]. With streaming stores a
 * row keeps the bytes of its last, unfinished 64-byte line between blocks in carry[y] (in
 * whatever layout the writer chooses), so that every whole line can go out as aligned
 * streaming stores whatever the row's alignment. */
typedef struct tile_job {
    uint8_t carry[SGFP4_MB][64] __attribute__((aligned(64)));
    uint8_t *const *dst;
    size_t row_bytes; /* cols * element size */
    sgfp4_dtype dtype;
    unsigned elem; /* element size */
    bool streaming;
    uint8_t ys[SGFP4_MB]; /* the selected block rows, ascending */
    unsigned nrows;
} tile_job;

#endif
