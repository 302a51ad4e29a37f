/* Reading a caller's options struct (see options.h).
 * SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "common/options.h"

sgfp4_status sgfp4_options_copy(const void *given, void *out, size_t size,
                                const size_t *layouts, size_t layout_count)
{
    if (!given)
        return SGFP4_OK;
    size_t struct_size;
    memcpy(&struct_size, given, sizeof struct_size);
    bool known = false;
    for (size_t k = 0; k < layout_count && !known; k++)
        known = layouts[k] == struct_size && struct_size <= size;
    if (!known)
        return SGFP4_ERR_ARGUMENT;
    memcpy(out, given, struct_size);
    memcpy(out, &size, sizeof size);
    return SGFP4_OK;
}
