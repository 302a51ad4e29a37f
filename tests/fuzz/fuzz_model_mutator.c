/* libFuzzer's custom mutator for the model target: three times in four, a structure-aware
 * change of the safetensors file after the selector byte (st_mutate.h); otherwise, or when
 * the bytes do not parse as one, libFuzzer's own byte-level mutation. Linked into the
 * libFuzzer binary only (the regression driver has no LLVMFuzzerMutate).
 * SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdint.h>

#include "st_mutate.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    if (size >= 2 && max_size >= 2 && data[0] < 0xF0 && seed % 4 != 0) {
        const size_t n = st_mutate(data + 1, size - 1, max_size - 1, seed);
        if (n)
            return n + 1;
    }
    return LLVMFuzzerMutate(data, size, max_size);
}
