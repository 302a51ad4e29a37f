/* Library allocation through a caller's sgfp4_allocator (all three fields set) or malloc.
 * Objects that the library builds keep the allocator they were made with and free through it.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_ALLOC_H
#define SGFP4_COMMON_ALLOC_H

#include "sgfp4.h"

/* size bytes (at least 1) from the allocator a, or malloc when a is NULL or incomplete. */
void *sgfp4_alloc_with(const sgfp4_allocator *a, size_t size);
/* Frees what sgfp4_alloc_with(a, ...) returned; NULL does nothing. */
void sgfp4_free_with(const sgfp4_allocator *a, void *ptr);

#endif
