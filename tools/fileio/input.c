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
    fileio_note_input(path);
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
            fileio_guard_input(path, map, in->size);
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

fileio_kind fileio_sniff(const char *path)
{
    if (strcmp(path, "-") == 0) {
        /* standard input redirected from a file is that file (read from its start, as
         * /dev/stdin opens it); a stream is read once: containers and .npy only */
        struct stat st;
        uint8_t head[16];
        if (fstat(STDIN_FILENO, &st) != 0 || !S_ISREG(st.st_mode))
            return FILEIO_KIND_OTHER;
        const ssize_t got = pread(STDIN_FILENO, head, sizeof head, 0);
        return got < 0 ? FILEIO_KIND_UNREADABLE
                       : fileio_sniff_bytes(head, (size_t)got, (uint64_t)st.st_size);
    }
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return FILEIO_KIND_UNREADABLE;
    }
    uint8_t head[16];
    const ssize_t got = S_ISREG(st.st_mode) ? read(fd, head, sizeof head) : -1;
    close(fd);
    if (got < 0)
        return S_ISREG(st.st_mode) ? FILEIO_KIND_UNREADABLE : FILEIO_KIND_OTHER;
    return fileio_sniff_bytes(head, (size_t)got, (uint64_t)st.st_size);
}

fileio_kind fileio_sniff_bytes(const uint8_t *head, size_t n, uint64_t file_size)
{
    if (n >= 4 && head[0] == 0x28 && head[1] == 0xB5 && head[2] == 0x2F && head[3] == 0xFD)
        return FILEIO_KIND_ZSTD;
    if (fileio_is_npy(head, n))
        return FILEIO_KIND_NPY;
    uint64_t header = 0;
    for (size_t k = 0; k < 8 && k < n; k++)
        header |= (uint64_t)head[k] << (8 * k);
    if (n >= 9 && head[8] == '{' && header >= 2 && file_size >= 8 && header <= file_size - 8)
        return FILEIO_KIND_SAFETENSORS;
    size_t k = 0;
    if (n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF)
        k = 3; /* a UTF-8 byte order mark */
    while (k < n && (head[k] == ' ' || head[k] == '\t' || head[k] == '\n' || head[k] == '\r'))
        k++;
    return k < n && head[k] == '{' ? FILEIO_KIND_INDEX : FILEIO_KIND_OTHER;
}

bool fileio_is_stream(const char *path)
{
    struct stat st;
    const int got = strcmp(path, "-") == 0 ? fstat(STDIN_FILENO, &st) : stat(path, &st);
    return got == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

fileio_kind fileio_sniff_stream(const char *path)
{
    const bool std_in = strcmp(path, "-") == 0;
    const int fd = std_in ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return FILEIO_KIND_UNREADABLE;
    uint8_t head[16];
    size_t n = 0;
    while (n < sizeof head) {
        const ssize_t got = read(fd, head + n, sizeof head - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    if (!std_in)
        close(fd);
    return fileio_sniff_bytes(head, n, UINT64_MAX);
}
