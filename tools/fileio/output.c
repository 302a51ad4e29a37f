/* Outputs (fileio.h, "outputs"): what the target is decides how it is written. A regular
 * file, new or replaced, is written crash-safe through a temporary file in its folder
 * (output_temp.c) that is renamed onto it only when complete; everything else (standard
 * output, devices, FIFOs, sockets, inherited descriptors) is written in place. Every check
 * happens when the output is opened, before the caller does any work.
 * SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "output_temp.h"

static bool fail(char *err, const char *format, const char *path, const char *detail)
{
    snprintf(err, FILEIO_ERROR_SIZE, format, path, detail);
    return false;
}

/* The descriptor a path names: "/dev/stdout", "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N"
 * or "/proc/PID/fd/N" with our own PID. -1 for any other path. */
static int descriptor_of(const char *path)
{
    if (strcmp(path, "/dev/stdout") == 0)
        return STDOUT_FILENO;
    if (strcmp(path, "/dev/stderr") == 0)
        return STDERR_FILENO;
    char own[64];
    snprintf(own, sizeof own, "/proc/%ld/fd/", (long)getpid());
    const char *prefixes[] = {"/dev/fd/", "/proc/self/fd/", own};
    for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
        const size_t n = strlen(prefixes[k]);
        if (strncmp(path, prefixes[k], n) != 0 || path[n] < '0' || path[n] > '9')
            continue;
        char *end;
        const long fd = strtol(path + n, &end, 10);
        return *end == '\0' && fd >= 0 && fd <= INT_MAX ? (int)fd : -1;
    }
    return -1;
}

/* The checks every output passes, on the file it will write. */
static bool check_target(const char *path, const struct stat *st, int fd, unsigned flags,
                         char *err)
{
    const char *input = fileio_same_input((unsigned long long)st->st_dev,
                                          (unsigned long long)st->st_ino);
    if (input && (S_ISREG(st->st_mode) || S_ISBLK(st->st_mode)))
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: is the same file as the input %s: refusing "
                        "to overwrite an input", path, input), false;
    if (fd >= 0 && isatty(fd) && !(flags & FILEIO_FORCE))
        return fail(err, "%s: is a terminal: refusing to write binary output to it (-f "
                         "forces)%s", path, "");
    return true;
}

/* A direct output: standard output, or a descriptor, a device, a FIFO or a socket. */
static bool open_direct(fileio_output *out, int fd, bool owned, unsigned flags, char *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        if (owned)
            close(fd);
        return fail(err, "%s: %s", out->path, strerror(errno));
    }
    if (!check_target(out->path, &st, fd, flags, err)) {
        if (owned)
            close(fd);
        return false;
    }
    out->direct = true;
    out->file = owned ? fdopen(fd, "wb") : stdout;
    if (!out->file) {
        close(fd);
        return fail(err, "%s: cannot open: %s", out->path, strerror(errno));
    }
    return true;
}

/* Splits a path into its folder (".", or up to its last '/') and its last component. */
static char *folder_of(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static bool open_regular(fileio_output *out, const struct stat *existing, unsigned flags,
                         char *err)
{
    const char *base;
    char *dir = folder_of(out->target, &base);
    if (!dir)
        return fail(err, "%s: out of memory%s", out->path, "");
    err[0] = '\0';
    const int fd = temp_create(dir, base, &out->tmp_path, &out->slot, &out->stale_removed, err,
                               out->path);
    free(dir);
    if (fd < 0)
        return false;
    if (existing) {
        /* the replacement keeps the file's permissions, and its owner where allowed */
        (void)!fchown(fd, existing->st_uid, existing->st_gid);
        (void)!fchmod(fd, existing->st_mode & 07777);
        out->replace = true;
    } else {
        const mode_t mask = umask(0);
        umask(mask);
        (void)!fchmod(fd, 0666 & ~mask); /* mkstemp made it 0600 */
    }
    (void)flags;
    out->file = fdopen(fd, "wb");
    if (!out->file) {
        close(fd);
        return fail(err, "%s: cannot open: %s", out->path, strerror(errno));
    }
    return true;
}

bool fileio_output_open(const char *path, unsigned flags, fileio_output *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->slot = -1;
    out->path = strdup(path);
    if (!out->path)
        return fail(err, "%s: out of memory%s", path, "");
    bool ok;
    const int descriptor = descriptor_of(path);
    struct stat st;
    if (strcmp(path, "-") == 0) {
        ok = open_direct(out, STDOUT_FILENO, false, flags, err);
        if (!ok && strstr(err, "is a terminal"))
            snprintf(err, FILEIO_ERROR_SIZE, "standard output is a terminal: refusing to write "
                     "binary output to it (-f forces)");
    } else if (descriptor >= 0) {
        const int fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 3);
        ok = fd >= 0 ? open_direct(out, fd, true, flags, err)
                     : fail(err, "%s: not an open descriptor: %s", path, strerror(errno));
    } else if (path[0] == '\0' || path[strlen(path) - 1] == '/') {
        ok = stat(path, &st) == 0 && S_ISDIR(st.st_mode)
                 ? fail(err, "%s: is a directory%s", path, "")
                 : fail(err, "%s: no such folder%s", path, "");
    } else if (lstat(path, &st) != 0) {
        ok = errno == ENOENT ? (out->target = strdup(path)) && open_regular(out, NULL, flags, err)
                             : fail(err, "%s: %s", path, strerror(errno));
    } else {
        if (S_ISLNK(st.st_mode)) {
            /* written through: the link's target is the file written (as cp and zstd do) */
            if (stat(path, &st) != 0)
                ok = fail(err, "%s: is a symbolic link to a missing file: not writing through "
                               "it%s", path, "");
            else
                ok = (out->target = realpath(path, NULL)) != NULL ||
                     fail(err, "%s: %s", path, strerror(errno));
        } else {
            ok = (out->target = strdup(path)) != NULL;
        }
        if (!ok) {
        } else if (S_ISDIR(st.st_mode)) {
            ok = fail(err, "%s: is a directory%s", path, "");
        } else if (!S_ISREG(st.st_mode)) {
            const int fd = open(out->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
            ok = fd >= 0 ? open_direct(out, fd, true, flags, err)
                         : fail(err, "%s: cannot open: %s", path, strerror(errno));
        } else if (!check_target(path, &st, -1, flags, err)) {
            ok = false;
        } else if (!(flags & FILEIO_FORCE)) {
            ok = fail(err, "%s: already exists: not replaced (-f replaces it)%s", path, "");
        } else {
            ok = open_regular(out, &st, flags, err);
        }
    }
    if (!ok) {
        char keep[FILEIO_ERROR_SIZE];
        memcpy(keep, err, sizeof keep);
        fileio_output_abort(out);
        memcpy(err, keep, sizeof keep);
    }
    return ok;
}

bool fileio_output_write(fileio_output *out, const void *data, size_t size)
{
    if (!out->failed && size && fwrite(data, 1, size, out->file) != size)
        out->failed = true;
    return !out->failed;
}

bool fileio_output_finish(fileio_output *out, char *err)
{
    if (!out->file)
        return fail(err, "%s: %s", out->path ? out->path : "output", "not open");
    if (out->failed || fflush(out->file) != 0)
        return fail(err, "%s: cannot write: %s", out->path, strerror(errno));
    if (out->tmp_path && fsync(fileno(out->file)) != 0)
        return fail(err, "%s: cannot write: %s", out->path, strerror(errno));
    return true;
}

/* Makes the rename durable: syncs the target's folder (errors do not matter here). */
static void sync_folder(const char *target)
{
    const char *base;
    char *dir = folder_of(target, &base);
    const int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        (void)!fsync(fd);
        close(fd);
    }
    free(dir);
}

bool fileio_output_commit(fileio_output *out, char *err)
{
    bool ok = fileio_output_finish(out, err);
    if (ok && out->tmp_path) {
        /* A new file must still be new: another program may have created it meanwhile. */
        int moved = out->replace ? rename(out->tmp_path, out->target)
                                 : renameat2(AT_FDCWD, out->tmp_path, AT_FDCWD, out->target,
                                             RENAME_NOREPLACE);
        if (moved != 0 && !out->replace && (errno == EINVAL || errno == ENOSYS))
            moved = link(out->tmp_path, out->target) == 0 ? unlink(out->tmp_path), 0 : -1;
        if (moved != 0)
            ok = errno == EEXIST ? fail(err, "%s: was created by someone else meanwhile: not "
                                             "replaced (-f replaces it)%s", out->path, "")
                                 : fail(err, "%s: cannot rename the temporary file onto it: %s",
                                        out->path, strerror(errno));
        else
            sync_folder(out->target);
    }
    if (!ok) {
        char keep[FILEIO_ERROR_SIZE];
        memcpy(keep, err, sizeof keep);
        fileio_output_abort(out);
        memcpy(err, keep, sizeof keep);
        return false;
    }
    temp_forget(out->slot, out->tmp_path);
    out->slot = -1;
    out->tmp_path = NULL;
    if (out->file != stdout && fclose(out->file) != 0 && out->direct)
        ok = fail(err, "%s: cannot write: %s", out->path, strerror(errno));
    out->file = NULL;
    fileio_output_abort(out); /* frees the rest; nothing left to remove */
    return ok;
}

void fileio_output_abort(fileio_output *out)
{
    if (out->tmp_path)
        unlink(out->tmp_path);
    temp_forget(out->slot, out->tmp_path);
    if (out->file && out->file != stdout)
        fclose(out->file);
    free(out->target);
    free(out->path);
    memset(out, 0, sizeof *out);
    out->slot = -1;
}

bool fileio_is_direct(const char *path)
{
    struct stat st;
    return strcmp(path, "-") == 0 || descriptor_of(path) >= 0 ||
           (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}
