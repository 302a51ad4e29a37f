/* One file of a model: opened by path (a zstd stream first decompressed into an unlinked
 * temporary file), told apart from an index, mapped (or, with the copy option, read into
 * memory) and parsed; or bytes in memory parsed in place (or copied); and freed. The top of
 * the layer (model.c) and the set reader (model_set.c, whose shards are such files) open
 * files through it.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/options.h"
#include "model/model_internal.h"
#include "model/zstd_bounds.h"

static bool json_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool sgfp4_model_looks_like_index(const uint8_t *head, size_t head_size, uint64_t file_size)
{
    if (!head || head_size == 0)
        return false;
    /* A safetensors file: a little-endian header length that fits, then '{'. An index is
     * text, so its first 8 bytes read as a length far beyond any file (>= 2^56). */
    if (head_size >= 9 && head[8] == '{') {
        uint64_t n = 0;
        for (int k = 7; k >= 0; k--)
            n = n << 8 | head[k];
        if (n <= file_size - 8)
            return false;
    }
    size_t k = 0;
    while (k < head_size && json_space(head[k]))
        k++;
    return k == head_size || head[k] == '{';
}

sgfp4_status sgfp4_model_open_options_read(const sgfp4_model_open_options *given,
                                           sgfp4_model_open_options *o, sgfp4_diag *diag)
{
    if (SGFP4_OPTIONS_READ(sgfp4_model_open_options, given, o) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_model_open_options_init)",
                          given->struct_size);
    return SGFP4_OK;
}

/* Parses m's bytes; *out = m, or m is freed. */
static sgfp4_status parse_or_free(sgfp4_model *m, const sgfp4_model_open_options *o,
                                  sgfp4_model **out, sgfp4_diag *diag)
{
    const sgfp4_status s = sgfp4_model_parse(m, o, diag);
    if (s != SGFP4_OK) {
        sgfp4_model_file_free(m);
        return s;
    }
    *out = m;
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_open_memory(const void *data, size_t size, sgfp4_model **out,
                                     const sgfp4_model_open_options *given, sgfp4_diag *diag)
{
    if (!out || (!data && size))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    sgfp4_model_open_options options;
    const sgfp4_status os = sgfp4_model_open_options_read(given, &options, diag);
    if (os != SGFP4_OK)
        return os;
    sgfp4_model *m = calloc(1, sizeof *m);
    if (!m)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    m->base = data;
    m->size = size;
    if (sgfp4_model_looks_like_index(data, size, size)) {
        free(m);
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_INDEX, 0, -1, -1,
                          "the bytes are a JSON document (a sharded model's index?), not a "
                          "safetensors file; an index names files: open it by path");
    }
    if (options.copy && size) {
        if (!(m->copy = malloc(size))) {
            free(m);
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                              "out of memory for the %zu-byte copy of the model", size);
        }
        memcpy(m->copy, data, size);
        m->base = m->copy;
    }
    return parse_or_free(m, &options, out, diag);
}

sgfp4_status sgfp4_model_file_begin(const char *path, const sgfp4_model_open_options *options,
                                    model_file *file, sgfp4_diag *diag)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot open: %s", path,
                          strerror(errno));
    struct stat named;
    if (fstat(fd, &named) != 0) {
        close(fd);
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot open: %s", path,
                          strerror(errno));
    }
    uint8_t magic[4] = {0};
    const ssize_t got = pread(fd, magic, 4, 0);
    const bool compressed = got == 4 && magic[0] == 0x28 && magic[1] == 0xB5 &&
                            magic[2] == 0x2F && magic[3] == 0xFD;
    if (compressed) {
        int plain = -1;
        const sgfp4_status s = sgfp4_zstd_decompress_to_temp(fd, path, options, &plain, diag);
        close(fd);
        if (s != SGFP4_OK)
            return s;
        fd = plain;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1, "%s: too large to map", path);
    }
    uint8_t head[64];
    const ssize_t head_size = pread(fd, head, sizeof head, 0);
    *file = (model_file){fd, (uint64_t)st.st_size, compressed,
                         head_size > 0 && sgfp4_model_looks_like_index(head, (size_t)head_size,
                                                                       (uint64_t)st.st_size),
                         (unsigned long long)named.st_dev, (unsigned long long)named.st_ino};
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_keep_file(sgfp4_model *model, const char *path, const model_file *file,
                                   sgfp4_diag *diag)
{
    model->file_path = strdup(path);
    if (!model->file_path)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    model->file_dev = file->dev;
    model->file_ino = file->ino;
    return SGFP4_OK;
}

/* Reads the m->size bytes of the file at fd into memory m owns (the copy option). */
static sgfp4_status read_whole(int fd, const char *path, sgfp4_model *m, sgfp4_diag *diag)
{
    if (!(m->copy = malloc((size_t)m->size)))
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "%s: out of memory for a %llu-byte copy of the file", path,
                          (unsigned long long)m->size);
    for (uint64_t done = 0; done < m->size;) {
        const uint64_t left = m->size - done;
        const ssize_t got = pread(fd, m->copy + done, left < (1u << 30) ? (size_t)left : 1u << 30,
                                  (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot read: %s", path,
                              strerror(errno));
        if (got == 0)
            return sgfp4_fail(diag, SGFP4_ERR_IO, (int64_t)done, -1, -1,
                              "%s: ended at byte %llu of %llu while it was read (it changed "
                              "after it was opened)",
                              path, (unsigned long long)done, (unsigned long long)m->size);
        done += (uint64_t)got;
    }
    m->base = m->copy;
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_file_finish(model_file *file, const char *path,
                                     const sgfp4_model_open_options *options, sgfp4_model **out,
                                     sgfp4_diag *diag)
{
    sgfp4_model *m = calloc(1, sizeof *m);
    if (!m) {
        close(file->fd);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    m->size = file->size;
    m->compressed = file->compressed;
    if (m->size && options->copy) {
        const sgfp4_status s = read_whole(file->fd, path, m, diag);
        close(file->fd);
        if (s != SGFP4_OK) {
            sgfp4_model_file_free(m);
            return s;
        }
        return parse_or_free(m, options, out, diag);
    }
    if (m->size) {
        void *map = mmap(NULL, (size_t)m->size, PROT_READ, MAP_PRIVATE, file->fd, 0);
        if (map == MAP_FAILED) {
            const int error = errno;
            close(file->fd);
            free(m);
            return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot map: %s", path,
                              strerror(error));
        }
        m->mapping = map;
        m->base = map;
    }
    close(file->fd); /* the mapping keeps the (possibly unlinked) file alive */
    if (sgfp4_model_keep_file(m, path, file, diag) != SGFP4_OK) {
        sgfp4_model_file_free(m);
        return SGFP4_ERR_NOMEM;
    }
    return parse_or_free(m, options, out, diag);
}

sgfp4_status sgfp4_model_open_file(const char *path, sgfp4_model **out,
                                   const sgfp4_model_open_options *given, sgfp4_diag *diag)
{
    if (!out || !path)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    sgfp4_model_open_options options;
    sgfp4_status s = sgfp4_model_open_options_read(given, &options, diag);
    if (s != SGFP4_OK)
        return s;
    model_file file;
    if ((s = sgfp4_model_file_begin(path, &options, &file, diag)) != SGFP4_OK)
        return s;
    if (file.is_index) {
        close(file.fd);
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_INDEX, 0, -1, -1,
                          "%s: a JSON document (an index?) where a safetensors file must be",
                          path);
    }
    return sgfp4_model_file_finish(&file, path, &options, out, diag);
}

void sgfp4_model_file_free(sgfp4_model *m)
{
    if (!m)
        return;
    sgfp4_model_free_parsed(m);
    free(m->file_path);
    if (m->mapping)
        munmap(m->mapping, (size_t)m->size);
    free(m->copy);
    free(m);
}
