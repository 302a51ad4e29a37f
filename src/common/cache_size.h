/* Cache sizes of the machine, as the operating system reports them.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_CACHE_SIZE_H
#define SGFP4_COMMON_CACHE_SIZE_H

#include <stdint.h>

/* The size in bytes of cpu0's level-`level` data or unified cache (sysfs, else sysconf);
 * 0 if the system does not say. Reads files: callers that need it often keep the answer. */
uint64_t sgfp4_cache_bytes(unsigned level);

#endif
