/* An LD_PRELOAD library for tests/cli/mapped_input.sh: the first time the process creates a
 * temporary file (the crash-safe output's `.NAME.sgfp4-tmp-XXXXXX`, which the library's
 * output creates with open(O_CREAT | O_EXCL) after the tool's inputs are open and mapped,
 * before any work; or mkstemp / mkostemp), it truncates the file
 * named by $SGFP4_TEST_TRUNCATE to zero bytes, as another program doing `cp new old` would,
 * and creates "$SGFP4_TEST_TRUNCATE.truncated" to say so. The truncation thus falls exactly
 * between the open and the first read of the data, with no timing involved.
 * SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
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

/* open() and open64() (the same call where off_t is 64 bits; which one the tool's code names
 * depends on the headers): a new file whose name is an output's temporary one. */
static int open_hooked(const char *name, const char *path, int flags, mode_t mode)
{
    int (*real)(const char *, int, ...);
    void *symbol = dlsym(RTLD_NEXT, name);
    memcpy(&real, &symbol, sizeof real);
    const int fd = real(path, flags, mode);
    if (fd >= 0 && (flags & O_CREAT) && (flags & O_EXCL) && strstr(path, ".sgfp4-tmp-"))
        truncate_once();
    return fd;
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return open_hooked("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return open_hooked("open64", path, flags, mode);
}
