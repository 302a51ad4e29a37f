/* Initialising and reading a caller's options struct, the same way for every options-taking
 * call (docs/api.md, "Conventions"). Every public options struct begins with
 * `size_t struct_size`. Fields are only ever appended, so the struct of a caller built
 * against an older header is a prefix of the current one.
 * - Initialising: the header's inline sgfp4_<x>_options_init() passes sizeof the caller's
 *   struct to sgfp4_<x>_options_init_sized(), which writes the defaults of the fields inside
 *   that many bytes and struct_size = that size, and nothing past it (sgfp4_options_init).
 * - Reading: the library reads the caller's first struct_size bytes and gives every field
 *   past them its default (SGFP4_OPTIONS_READ).
 * Either way a size that is not the size of a released layout of the struct is rejected
 * (SGFP4_ERR_ARGUMENT): an uninitialised struct, or one from a newer header than this
 * library knows.
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

/* Writes the first `caller_size` bytes of `defaults` (the whole struct's defaults, `size`
 * bytes long) to `options`, then struct_size = caller_size. Nothing is written when
 * `options` is NULL or caller_size is not one of `layouts` (SGFP4_ERR_ARGUMENT). */
sgfp4_status sgfp4_options_init(void *options, size_t caller_size, const void *defaults,
                                size_t size, const size_t *layouts, size_t layout_count);

/* The released layouts of each options struct (its sizeof in each state of the API that was
 * published, oldest first; an earlier layout's sizeof is the offset of the first field
 * appended after it). When a field is appended, append the new sizeof here; never remove an
 * entry. tests/api/test_options.c initialises and reads each one. */
#define SGFP4_LAYOUTS_sgfp4_open_options                                                       \
    offsetof(sgfp4_open_options, copy), sizeof(sgfp4_open_options)
#define SGFP4_LAYOUTS_sgfp4_decode_options sizeof(sgfp4_decode_options)
#define SGFP4_LAYOUTS_sgfp4_encode_options                                                     \
    offsetof(sgfp4_encode_options, metric), offsetof(sgfp4_encode_options, report),            \
        sizeof(sgfp4_encode_options)
#define SGFP4_LAYOUTS_sgfp4_hessian_options sizeof(sgfp4_hessian_options)
#define SGFP4_LAYOUTS_sgfp4_model_open_options                                                 \
    offsetof(sgfp4_model_open_options, ignore_index_total_size),                               \
        offsetof(sgfp4_model_open_options, max_tensors),                                       \
        offsetof(sgfp4_model_open_options, copy), sizeof(sgfp4_model_open_options)
#define SGFP4_LAYOUTS_sgfp4_model_write_options                                                \
    offsetof(sgfp4_model_write_options, tensor_report),                                        \
        offsetof(sgfp4_model_write_options, max_output_elements),                              \
        offsetof(sgfp4_model_write_options, importance),                                       \
        offsetof(sgfp4_model_write_options, cancel), sizeof(sgfp4_model_write_options)
#define SGFP4_LAYOUTS_sgfp4_output_options sizeof(sgfp4_output_options)
#define SGFP4_LAYOUTS_sgfp4_vk_context_options sizeof(sgfp4_vk_context_options)
#define SGFP4_LAYOUTS_sgfp4_matvec_options                                                     \
    offsetof(sgfp4_matvec_options, pool), offsetof(sgfp4_matvec_options, fast),               \
        sizeof(sgfp4_matvec_options)
#define SGFP4_LAYOUTS_sgfp4_vk_matvec_options                                                  \
    offsetof(sgfp4_vk_matvec_options, fast), sizeof(sgfp4_vk_matvec_options)
#define SGFP4_LAYOUTS_sgfp4_vk_decode_options sizeof(sgfp4_vk_decode_options)

#define SGFP4_LAYOUT_LIST(type) (const size_t[]){SGFP4_LAYOUTS_##type}
#define SGFP4_LAYOUT_COUNT(type) (sizeof((const size_t[]){SGFP4_LAYOUTS_##type}) / sizeof(size_t))

/* SGFP4_OPTIONS_INIT(type, options, caller_size, defaults): the body of type_init_sized();
 * `defaults` is a const type * to the whole struct with every default set. */
#define SGFP4_OPTIONS_INIT(type, options, caller_size, defaults)                               \
    sgfp4_options_init((options), (caller_size), (defaults), sizeof(type),                     \
                       SGFP4_LAYOUT_LIST(type), SGFP4_LAYOUT_COUNT(type))

/* SGFP4_OPTIONS_READ(type, given, out): *out = the defaults (type_init), then the caller's
 * fields of `given` (a const type *, NULL for defaults). Evaluates to an sgfp4_status. */
#define SGFP4_OPTIONS_READ(type, given, out)                                                   \
    (type##_init(out), sgfp4_options_copy((given), (out), sizeof(type),                        \
                                          SGFP4_LAYOUT_LIST(type), SGFP4_LAYOUT_COUNT(type)))

/* The `threads` rule of every call: 0 means 1 (the calling thread only); above
 * SGFP4_MAX_THREADS is SGFP4_ERR_ARGUMENT. Returns the count to use, or 0 for an error. */
static inline unsigned sgfp4_threads_resolve(unsigned threads)
{
    return threads == 0 ? 1 : threads <= SGFP4_MAX_THREADS ? threads : 0;
}

#endif
