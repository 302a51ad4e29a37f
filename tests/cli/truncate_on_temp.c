/* An LD_PRELOAD library for tests/cli/mapped_input.sh: the first time the process creates a
 * temporary file (mkstemp / mkostemp: the crash-safe output's temporary file, which the tool
 * creates after its inputs are open and mapped, before any work), it truncates the file
 * named by $SGFP4_TEST_TRUNCATE to zero bytes, as another program doing `cp new old` would,
 * and creates "$SGFP4_TEST_TRUNCATE.truncated" to say so. The truncation thus falls exactly
 * between the open and the first read of the data, with no timing involved.
 * SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void truncate_once(void)
{
    static int done;
    const char *path = getenv("SGFP4_TEST_TRUNCATE");
    if (done || !path)
        return;
    done = 1;
    if (truncate(path, 0) != 0)
        return;
    char mark[4096];
    snprintf(mark, sizeof mark, "%s.truncated", path);
    const int fd = open(mark, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

int mkostemp(char *template, int flags)
{
    int (*real)(char *, int);
    void *symbol = dlsym(RTLD_NEXT, "mkostemp");
    memcpy(&real, &symbol, sizeof real);
    const int fd = real(template, flags);
    if (fd >= 0)
        truncate_once();
    return fd;
}

int mkstemp(char *template)
{
    int (*real)(char *);
    void *symbol = dlsym(RTLD_NEXT, "mkstemp");
    memcpy(&real, &symbol, sizeof real);
    const int fd = real(template);
    if (fd >= 0)
        truncate_once();
    return fd;
}
