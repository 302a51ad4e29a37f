/* The last-level cache size, which decides when decode uses streaming stores.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <unistd.h>

#include "sgfp4.h"

/* sysfs first: glibc's sysconf reports a host-wide figure on some virtual machines. */
uint64_t sgfp4_llc_bytes(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        unsigned long long n = 0;
        char unit = 0;
        const int got = fscanf(f, "%llu%c", &n, &unit);
        fclose(f);
        if (got >= 1 && n > 0)
            return n << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc > 0)
        return (uint64_t)llc;
#endif
    return 0;
}
