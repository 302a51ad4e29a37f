/* Checks of the NEON kernels' parts that the differential decode check reaches only through
 * the values random containers happen to produce: the fp16 -> f32 of leaf headers for every
 * finite half, the row writer's f32 -> f16 / bf16 rounding on every tie, near-tie, overflow
 * and subnormal boundary, and the size-grouped leaf listing, each against the library's
 * scalar code. Built only where the NEON kernels are (SGFP4_HAVE_NEON_KERNELS).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_NEON_PARTS_CHECK_H
#define SGFP4_TESTS_NEON_PARTS_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True if every part matches; otherwise false with the first difference in message. */
bool neon_parts_check(char *message, size_t size);

#endif
