/* Inputs read whole: regular files mapped, pipes and standard input read into memory.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

static bool read_stream(FILE *f, const char *name, fileio_input *in, char *err)
{
    size_t cap = 1 << 16, size = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (buf && size == cap) {
            uint8_t *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!bigger)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
        if (!buf)
            return snprintf(err, FILEIO_ERROR_SIZE, "%s: out of memory", name), false;
        const size_t got = fread(buf + size, 1, cap - size, f);
        size += got;
        if (got == 0 && ferror(f)) {
            free(buf);
            return snprintf(err, FILEIO_ERROR_SIZE, "%s: read error: %s", name,
                            strerror(errno)),
                   false;
        }
        if (got == 0)
            break;
    }
    in->data = in->owned = buf;
    in->size = size;
    return true;
}

bool fileio_read(const char *path, fileio_input *in, char *err)
{
    memset(in, 0, sizeof *in);
    if (strcmp(path, "-") == 0)
        return read_stream(stdin, "standard input", in, err);
    const int fd = open(path, O_RDONLY);
    struct stat st;
    const char *failed = fd < 0 ? "cannot open" : fstat(fd, &st) != 0 ? "cannot stat" : NULL;
    if (failed) {
        snprintf(err, FILEIO_ERROR_SIZE, "%s: %s: %s", path, failed, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: is a directory", path), false;
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            close(fd);
            in->data = in->mapping = map;
            in->size = (size_t)st.st_size;
            return true;
        }
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot read: %s", path, strerror(errno)),
               false;
    }
    const bool ok = read_stream(f, path, in, err);
    fclose(f);
    return ok;
}

void fileio_input_release(fileio_input *in)
{
    if (in->mapping)
        munmap(in->mapping, in->size);
    free(in->owned);
    memset(in, 0, sizeof *in);
}
