/* Filling a caller's result struct (see results.h).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/results.h"

static size_t struct_size_of(const void *result)
{
    size_t size;
    memcpy(&size, result, sizeof size);
    return size;
}

bool sgfp4_result_known(const void *result, size_t size, const size_t *layouts,
                        size_t layout_count)
{
    const size_t struct_size = struct_size_of(result);
    for (size_t k = 0; k < layout_count; k++)
        if (layouts[k] == struct_size && struct_size <= size)
            return true;
    return false;
}

void sgfp4_result_store(void *result, const void *full)
{
    const size_t struct_size = struct_size_of(result);
    memcpy((unsigned char *)result + sizeof struct_size,
           (const unsigned char *)full + sizeof struct_size, struct_size - sizeof struct_size);
}

void sgfp4_result_clear(void *result)
{
    const size_t struct_size = struct_size_of(result);
    memset((unsigned char *)result + sizeof struct_size, 0, struct_size - sizeof struct_size);
}
