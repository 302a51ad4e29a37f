/* Filling a caller's result struct, the same way for every call that fills one (sgfp4.h,
 * "Result structs"; docs/api.md, "Conventions"). Every public result struct begins with
 * `size_t struct_size`, set by the caller's sgfp4_<x>_init() to sizeof the struct its header
 * declares; fields are only ever appended, so an older caller's struct is a prefix of the
 * current one. A call first checks the struct (SGFP4_RESULT_KNOWN: a size that is no
 * released layout is refused before any work, nothing written), fills a whole struct of its
 * own, then copies the caller's struct_size bytes of it (SGFP4_RESULT_STORE).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_RESULTS_H
#define SGFP4_COMMON_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/options.h"
#include "sgfp4.h"

/* Whether the caller's struct at `result` (not NULL) carries a struct_size that is a released
 * layout (`layouts`, oldest first) of a struct that is `size` bytes long now. */
bool sgfp4_result_known(const void *result, size_t size, const size_t *layouts,
                        size_t layout_count);

/* Copies the fields of `full` (the whole struct) inside the caller's struct_size bytes to
 * `result`, whose struct_size was checked; struct_size itself stays the caller's. */
void sgfp4_result_store(void *result, const void *full);

/* Zeroes the fields inside the caller's struct_size bytes (checked), struct_size kept. */
void sgfp4_result_clear(void *result);

/* The released layouts of each result struct, as SGFP4_LAYOUTS_ of the options structs
 * (common/options.h): when a field is appended, append the new sizeof; never remove one.
 * tests/api/test_results.c fills each one behind canaries. */
#define SGFP4_LAYOUTS_sgfp4_tensor_info sizeof(sgfp4_tensor_info)
#define SGFP4_LAYOUTS_sgfp4_quality sizeof(sgfp4_quality)
#define SGFP4_LAYOUTS_sgfp4_encode_report sizeof(sgfp4_encode_report)
#define SGFP4_LAYOUTS_sgfp4_model_verify_result sizeof(sgfp4_model_verify_result)
#define SGFP4_LAYOUTS_sgfp4_model_summary sizeof(sgfp4_model_summary)
#define SGFP4_LAYOUTS_sgfp4_model_decision sizeof(sgfp4_model_decision)
#define SGFP4_LAYOUTS_sgfp4_vk_device_info sizeof(sgfp4_vk_device_info)

/* SGFP4_RESULT_KNOWN(type, result): whether `result` (a type *, not NULL) may be filled. */
#define SGFP4_RESULT_KNOWN(type, result)                                                       \
    sgfp4_result_known((result), sizeof(type), SGFP4_LAYOUT_LIST(type),                        \
                       SGFP4_LAYOUT_COUNT(type))

#endif
