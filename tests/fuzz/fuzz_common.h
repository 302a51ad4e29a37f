/* Shared pieces of the libFuzzer targets in tests/fuzz/: carving a tensor shape from the
 * fuzz input, and the checks every successfully opened tensor must pass.
 * A failed check calls FUZZ_ASSERT, which aborts: libFuzzer and the regression driver both
 * report an abort as a finding.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_FUZZ_COMMON_H
#define SGFP4_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sgfp4.h"

/* The entry point every target defines (libFuzzer's name and contract). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

/* Largest tensor a decode target decodes (elements), so that two fuzzers running at once
 * stay within a few hundred MB. Bigger shapes are opened with this as max_elements and must
 * fail with SGFP4_ERR_LIMIT. */
#define FUZZ_MAX_ELEMENTS (UINT64_C(1) << 20)

/* The 4-byte prefix of the decode targets' inputs; the container bytes follow it.
 *   tiles_pick: which divisor of the block count becomes tiles_y (tiles_x = B / tiles_y)
 *   crop_y, crop_x: rows = 64 * tiles_y - crop_y % 64 (likewise cols)
 *   flags: FUZZ_FLAG_* below */
typedef struct fuzz_prefix {
    uint8_t tiles_pick, crop_y, crop_x, flags;
} fuzz_prefix;
#define FUZZ_PREFIX_BYTES 4
enum {
    FUZZ_FLAG_DTYPE_MASK = 0x03,  /* extra output dtype to compare: f32, f16, bf16 */
    FUZZ_FLAG_THREADS = 0x04,     /* compare a multi-threaded decode */
    FUZZ_FLAG_BACKEND = 0x08,     /* unused (it chose between AUTO and its retired twin) */
    FUZZ_FLAG_STREAMING = 0x10,   /* ranges, gathers and 16-bit outputs with streaming stores */
    FUZZ_FLAG_LIMIT_BYTES = 0x40, /* max_container_bytes = size - 1: the open must fail */
    FUZZ_FLAG_FREE_SHAPE = 0x80   /* shape from the crop bytes alone, ignoring B */
};

/* Shape for a container whose block count is `blocks` (0 if unknown), per the prefix. */
void fuzz_carve_shape(const fuzz_prefix *prefix, uint64_t blocks, uint64_t *rows,
                      uint64_t *cols);

/* Opens container[0..size) with the prefix's options, and when it opens runs every check
 * of fuzz_check_tensor(). Used by the v1 and v2 targets. */
void fuzz_open_and_check(const fuzz_prefix *prefix, const uint8_t *container, size_t size,
                         sgfp4_profile profile, uint64_t rows, uint64_t cols);

/* Checks an opened tensor: info consistency, the leaves tile each macroblock exactly and lie
 * inside the container, the scalar decode matches an independent per-leaf reconstruction,
 * every value is finite and not subnormal (DECISIONS D1), every backend / thread count /
 * row range / gather / dtype gives the same bits. */
void fuzz_check_tensor(const sgfp4_tensor *t, const uint8_t *container, size_t size,
                       uint8_t flags);

#endif
