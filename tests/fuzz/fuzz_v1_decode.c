/* libFuzzer target: v1 (`.fp4`) open + decode.
 * Input: a 4-byte fuzz_prefix (fuzz_common.h) choosing the shape, then the container. The
 * block count is the container length / 2056, so most inputs reach the per-block rules.
 * SPDX-License-Identifier: MIT */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_PREFIX_BYTES)
        return 0;
    const fuzz_prefix prefix = {data[0], data[1], data[2], data[3]};
    const uint8_t *container = data + FUZZ_PREFIX_BYTES;
    const size_t bytes = size - FUZZ_PREFIX_BYTES;
    uint64_t rows, cols;
    fuzz_carve_shape(&prefix, bytes / 2056, &rows, &cols);
    fuzz_open_and_check(&prefix, container, bytes, SGFP4_PROFILE_V1, rows, cols);
    return 0;
}
