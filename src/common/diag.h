/* Filling a caller's sgfp4_diag: the status plus where (block/record, leaf, byte offset). Every
 * layer reports its failures through it.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_DIAG_H
#define SGFP4_COMMON_DIAG_H

#include "sgfp4.h"

#if defined(__GNUC__)
#define SGFP4_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define SGFP4_PRINTF_(f, a)
#endif

/* Records the failure in *diag (if not NULL) and returns status. The message is the
 * formatted text; offset, block and leaf are -1 when they do not apply. */
sgfp4_status sgfp4_fail(sgfp4_diag *diag, sgfp4_status status, int64_t offset, int64_t block,
                        int32_t leaf, const char *format, ...) SGFP4_PRINTF_(6, 7);

/* Names the input element (row, col) that a failure recorded in *diag refused (if diag is
 * not NULL); returns status. */
sgfp4_status sgfp4_fail_at_element(sgfp4_diag *diag, sgfp4_status status, uint64_t row,
                                   uint64_t col);

/* Resets *diag (if not NULL) to success. */
void sgfp4_diag_clear(sgfp4_diag *diag);

#endif
