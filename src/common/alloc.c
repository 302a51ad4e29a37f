/* Allocation through an optional caller allocator (alloc.h), and sgfp4_free() of the public API.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "common/alloc.h"

static int allocator_set(const sgfp4_allocator *a)
{
    return a && a->alloc && a->free;
}

void *sgfp4_alloc_with(const sgfp4_allocator *a, size_t size)
{
    if (size == 0)
        size = 1;
    return allocator_set(a) ? a->alloc(a->user, size) : malloc(size);
}

void sgfp4_free_with(const sgfp4_allocator *a, void *ptr)
{
    if (!ptr)
        return;
    if (allocator_set(a))
        a->free(a->user, ptr);
    else
        free(ptr);
}

void sgfp4_free(void *ptr) { free(ptr); }
