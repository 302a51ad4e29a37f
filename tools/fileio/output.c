/* Crash-safe outputs: a temporary file in the target's folder (so rename() is atomic),
 * flushed and synced, renamed onto the target only when complete.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

bool fileio_output_open(const char *path, fileio_output *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(path, "-") == 0) {
        if (isatty(STDOUT_FILENO))
            return snprintf(err, FILEIO_ERROR_SIZE,
                            "refusing to write binary output to a terminal"),
                   false;
        out->file = stdout;
        out->path = strdup("-");
        return out->path || (snprintf(err, FILEIO_ERROR_SIZE, "out of memory"), false);
    }
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
    const size_t tmp_len = strlen(path) + 32;
    out->path = strdup(path);
    out->tmp_path = malloc(tmp_len);
    if (!out->path || !out->tmp_path) {
        fileio_output_abort(out);
        return snprintf(err, FILEIO_ERROR_SIZE, "out of memory"), false;
    }
    snprintf(out->tmp_path, tmp_len, "%.*s.%s.tmp-XXXXXX", (int)dir_len, path, path + dir_len);
    const int fd = mkstemp(out->tmp_path);
    if (fd < 0) {
        snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot create a temporary file beside it: %s",
                 path, strerror(errno));
        free(out->tmp_path);
        out->tmp_path = NULL;
        fileio_output_abort(out);
        return false;
    }
    /* mkstemp makes 0600; give the output the usual permissions under the umask */
    const mode_t mask = umask(0);
    umask(mask);
    (void)!fchmod(fd, 0666 & ~mask); /* not fatal: the file would stay private */
    out->file = fdopen(fd, "wb");
    if (!out->file) {
        close(fd);
        snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot open: %s", path, strerror(errno));
        fileio_output_abort(out);
        return false;
    }
    return true;
}

bool fileio_output_write(fileio_output *out, const void *data, size_t size)
{
    if (!out->failed && size && fwrite(data, 1, size, out->file) != size)
        out->failed = true;
    return !out->failed;
}

bool fileio_output_commit(fileio_output *out, char *err)
{
    bool ok = !out->failed && fflush(out->file) == 0;
    if (out->tmp_path) {
        ok = ok && fsync(fileno(out->file)) == 0;
        ok = (fclose(out->file) == 0) && ok;
        out->file = NULL;
        ok = ok && rename(out->tmp_path, out->path) == 0;
    }
    if (!ok) {
        snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot write: %s", out->path, strerror(errno));
        fileio_output_abort(out);
        return false;
    }
    free(out->tmp_path);
    free(out->path);
    memset(out, 0, sizeof *out);
    return true;
}

void fileio_output_abort(fileio_output *out)
{
    if (out->file && out->file != stdout)
        fclose(out->file);
    if (out->tmp_path)
        unlink(out->tmp_path);
    free(out->tmp_path);
    free(out->path);
    memset(out, 0, sizeof *out);
}
