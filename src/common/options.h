/* Reading a caller's options struct, the same way for every options-taking call (docs/api.md,
 * "Conventions"). Every public options struct begins with `size_t struct_size`, which its
 * sgfp4_<x>_options_init() sets to sizeof the struct this library was built with. Fields are
 * only ever appended, so the struct of a caller built against an older header is a prefix of
 * the current one: the library reads the caller's first struct_size bytes and gives every
 * field past them its default. A struct_size that is not the size of a released layout of
 * the struct is rejected (SGFP4_ERR_ARGUMENT): it is an uninitialised struct, or one from a
 * newer header than this library knows.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_OPTIONS_H
#define SGFP4_COMMON_OPTIONS_H

#include <stddef.h>

#include "sgfp4.h"

/* Copies the caller's struct `given` (NULL: nothing to copy) over *out, which holds the
 * defaults and is `size` bytes long; `layouts` lists the sizes of every released layout of
 * the struct, oldest first, the last being `size`. Afterwards out->struct_size is `size`. */
sgfp4_status sgfp4_options_copy(const void *given, void *out, size_t size,
                                const size_t *layouts, size_t layout_count);

/* The released layouts of each options struct (sizeof in each release, oldest first). When a
 * release appends a field, append the new sizeof here; never remove an entry. */
#define SGFP4_LAYOUTS_sgfp4_open_options sizeof(sgfp4_open_options)
#define SGFP4_LAYOUTS_sgfp4_decode_options sizeof(sgfp4_decode_options)
#define SGFP4_LAYOUTS_sgfp4_encode_options                                                     \
    offsetof(sgfp4_encode_options, metric), sizeof(sgfp4_encode_options)
#define SGFP4_LAYOUTS_sgfp4_model_open_options                                                 \
    offsetof(sgfp4_model_open_options, max_tensors), sizeof(sgfp4_model_open_options)
#define SGFP4_LAYOUTS_sgfp4_model_write_options                                                \
    offsetof(sgfp4_model_write_options, max_output_elements), sizeof(sgfp4_model_write_options)
#define SGFP4_LAYOUTS_sgfp4_vk_context_options sizeof(sgfp4_vk_context_options)
#define SGFP4_LAYOUTS_sgfp4_matvec_options sizeof(sgfp4_matvec_options)

/* SGFP4_OPTIONS_READ(type, given, out): *out = the defaults (type_init), then the caller's
 * fields of `given` (a const type *, NULL for defaults). Evaluates to an sgfp4_status. */
#define SGFP4_OPTIONS_READ(type, given, out)                                                   \
    (type##_init(out),                                                                         \
     sgfp4_options_copy((given), (out), sizeof(type), (const size_t[]){SGFP4_LAYOUTS_##type},  \
                        sizeof((const size_t[]){SGFP4_LAYOUTS_##type}) / sizeof(size_t)))

/* The `threads` rule of every call: 0 means 1 (the calling thread only); above
 * SGFP4_MAX_THREADS is SGFP4_ERR_ARGUMENT. Returns the count to use, or 0 for an error. */
static inline unsigned sgfp4_threads_resolve(unsigned threads)
{
    return threads == 0 ? 1 : threads <= SGFP4_MAX_THREADS ? threads : 0;
}

#endif
