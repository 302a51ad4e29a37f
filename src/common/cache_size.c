/* Cache sizes: the L2 decides when decode streams its stores, the last-level cache how much
 * memory `sgfp4 bench` writes per round.
 * SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cache_size.h"
#include "sgfp4_experimental.h"

/* The first line of a sysfs file into buf (newline dropped); false if it cannot be read. */
static bool read_line(const char *path, char *buf, int size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    const bool ok = fgets(buf, size, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* sysfs first: glibc's sysconf reports a host-wide figure on some virtual machines. The
 * cache/indexN folders are not in a fixed order, so each one's level and type are read. */
static uint64_t sysfs_cache_bytes(unsigned level)
{
    for (unsigned i = 0; i < 16; i++) {
        char path[96], text[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/level", i);
        if (!read_line(path, text, sizeof text))
            break;
        if ((unsigned)strtoul(text, NULL, 10) != level)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/type", i);
        if (read_line(path, text, sizeof text) && strcmp(text, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/size", i);
        unsigned long long n = 0;
        char unit = 0;
        if (!read_line(path, text, sizeof text) || sscanf(text, "%llu%c", &n, &unit) < 1 || !n)
            continue;
        return n << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
    }
    return 0;
}

uint64_t sgfp4_cache_bytes(unsigned level)
{
    const uint64_t from_sysfs = sysfs_cache_bytes(level);
    if (from_sysfs)
        return from_sysfs;
    long n = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    if (level == 2)
        n = sysconf(_SC_LEVEL2_CACHE_SIZE);
    else if (level == 3)
        n = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return n > 0 ? (uint64_t)n : 0;
}

uint64_t sgfp4_llc_bytes(void) { return sgfp4_cache_bytes(3); }
