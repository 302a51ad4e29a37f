/* Initialising and reading a caller's options struct (see options.h).
 * SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "common/options.h"

/* Whether `struct_size` is a released layout of a struct that is `size` bytes long now. */
static bool layout_known(size_t struct_size, size_t size, const size_t *layouts,
                         size_t layout_count)
{
    for (size_t k = 0; k < layout_count; k++)
        if (layouts[k] == struct_size && struct_size <= size)
            return true;
    return false;
}

sgfp4_status sgfp4_options_init(void *options, size_t caller_size, const void *defaults,
                                size_t size, const size_t *layouts, size_t layout_count)
{
    if (!options || !layout_known(caller_size, size, layouts, layout_count))
        return SGFP4_ERR_ARGUMENT;
    memcpy(options, defaults, caller_size);
    memcpy(options, &caller_size, sizeof caller_size);
    return SGFP4_OK;
}

sgfp4_status sgfp4_options_copy(const void *given, void *out, size_t size,
                                const size_t *layouts, size_t layout_count)
{
    if (!given)
        return SGFP4_OK;
    size_t struct_size;
    memcpy(&struct_size, given, sizeof struct_size);
    if (!layout_known(struct_size, size, layouts, layout_count))
        return SGFP4_ERR_ARGUMENT;
    memcpy(out, given, struct_size);
    memcpy(out, &size, sizeof size);
    return SGFP4_OK;
}
