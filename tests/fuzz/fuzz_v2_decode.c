/* libFuzzer target: v2 (`.sgfp4`) open + decode, the shape carved from the input.
 * Input: a 4-byte fuzz_prefix (fuzz_common.h), then the stream. The shape is built from the
 * stream's own block count (bytes 5..8) when it is plausible, so mutations reach the record
 * rules rather than stopping at ERR_V2_BLOCK_COUNT; FUZZ_FLAG_FREE_SHAPE tries any shape.
 * The profile is AUTO, so inputs without the magic also exercise the v1 path.
 * SPDX-License-Identifier: MIT */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_PREFIX_BYTES)
        return 0;
    const fuzz_prefix prefix = {data[0], data[1], data[2], data[3]};
    const uint8_t *stream = data + FUZZ_PREFIX_BYTES;
    const size_t bytes = size - FUZZ_PREFIX_BYTES;
    uint64_t blocks = 0;
    if (bytes >= 9) {
        blocks = (uint64_t)stream[5] | (uint64_t)stream[6] << 8 | (uint64_t)stream[7] << 16 |
                 (uint64_t)stream[8] << 24;
        if (blocks > (UINT64_C(1) << 16))
            blocks = 0; /* implausible: let the free shape decide */
    }
    uint64_t rows, cols;
    fuzz_carve_shape(&prefix, blocks, &rows, &cols);
    fuzz_open_and_check(&prefix, stream, bytes, SGFP4_PROFILE_AUTO, rows, cols);
    return 0;
}
