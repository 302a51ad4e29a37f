/* Output files (sgfp4_model.h, "output files"): what the target is decides how it is
 * written. A regular file, new or replaced, is written crash-safe through a temporary file
 * in its folder (output_temp.c) that is renamed onto it only when complete; everything else
 * (standard output, devices, FIFOs, sockets, inherited descriptors) is written in place.
 * Every check happens when the output is opened, before the caller does any work.
 * SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/options.h"
#include "model/output_internal.h"

struct sgfp4_output {
    FILE *file;
    char *path;        /* as given, for messages */
    char *target;      /* the file replaced: the path, or a symbolic link's target */
    char *tmp_path;    /* the temporary file; NULL for a direct output */
    char *force_name;  /* how the user forces (options.force_name), or NULL */
    bool direct;       /* written in place */
    bool replace;      /* the target exists and is replaced (SGFP4_OUTPUT_FORCE) */
    bool failed;       /* a write failed: the commit will fail */
    int error;         /* its errno */
    bool committed;
    int slot;          /* the temporary file's entry in the signal list */
    size_t stale;      /* leftovers of dead writers removed when it was opened */
    char shown[SGFP4_SHOWN_SIZE];
};

sgfp4_status sgfp4_output_options_init_sized(sgfp4_output_options *options, size_t size)
{
    sgfp4_output_options defaults;
    memset(&defaults, 0, sizeof defaults); /* every default is 0 or NULL */
    return SGFP4_OPTIONS_INIT(sgfp4_output_options, options, size, &defaults);
}

const char *sgfp4_path_shown(const char *path, char buf[SGFP4_SHOWN_SIZE])
{
    const size_t n = strlen(path);
    if (n <= 80)
        snprintf(buf, SGFP4_SHOWN_SIZE, "%s", path);
    else
        snprintf(buf, SGFP4_SHOWN_SIZE, "%.30s...%s", path, path + n - 47);
    return buf;
}

/* " (-f replaces it)": how to lift a refusal, when the caller named its force. */
static const char *hint(const sgfp4_output *out, const char *verb, char *buf, size_t size)
{
    if (!out->force_name)
        return "";
    snprintf(buf, size, " (%s %s)", out->force_name, verb);
    return buf;
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

static sgfp4_status refuse(sgfp4_diag *diag, const sgfp4_output *out, const char *why,
                           const char *extra)
{
    return sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1, "%s: %s%s", out->shown, why,
                      extra);
}

/* The checks every output passes, on the file it will write (fd: -1 when not open yet). */
static sgfp4_status check_target(const sgfp4_output *out, const struct stat *st, int fd,
                                 unsigned flags, const sgfp4_inputs *inputs, sgfp4_diag *diag)
{
    const char *input = sgfp4_inputs_find(inputs, (unsigned long long)st->st_dev,
                                          (unsigned long long)st->st_ino);
    char buf[SGFP4_SHOWN_SIZE], h[64];
    if (input && (S_ISREG(st->st_mode) || S_ISBLK(st->st_mode)))
        return sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1,
                          "%s: is the same file as the input %s: refusing to overwrite an "
                          "input", out->shown, sgfp4_path_shown(input, buf));
    if (fd >= 0 && isatty(fd) && !(flags & SGFP4_OUTPUT_FORCE)) {
        if (strcmp(out->path, "-") == 0)
            return sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1,
                              "standard output is a terminal: refusing to write binary output "
                              "to it%s", hint(out, "forces", h, sizeof h));
        return refuse(diag, out, "is a terminal: refusing to write binary output to it",
                      hint(out, "forces", h, sizeof h));
    }
    return SGFP4_OK;
}

/* A direct output: standard output, or a descriptor, a device, a FIFO or a socket. */
static sgfp4_status open_direct(sgfp4_output *out, int fd, bool owned, unsigned flags,
                                const sgfp4_inputs *inputs, sgfp4_diag *diag)
{
    struct stat st;
    sgfp4_status s = SGFP4_OK;
    if (fstat(fd, &st) != 0)
        s = sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: %s", out->shown, strerror(errno));
    else
        s = check_target(out, &st, fd, flags, inputs, diag);
    if (s != SGFP4_OK) {
        if (owned)
            close(fd);
        return s;
    }
    out->direct = true;
    out->file = owned ? fdopen(fd, "wb") : stdout;
    if (!out->file) {
        close(fd);
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot open: %s", out->shown,
                          strerror(errno));
    }
    return SGFP4_OK;
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

static sgfp4_status open_regular(sgfp4_output *out, const struct stat *existing,
                                 sgfp4_diag *diag)
{
    const char *base;
    char *dir = folder_of(out->target, &base);
    if (!dir)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "%s: out of memory", out->shown);
    const int fd = sgfp4_temp_create(dir, base, &out->tmp_path, &out->slot, &out->stale,
                                     out->shown, diag);
    free(dir);
    if (fd < 0)
        return diag ? diag->status : SGFP4_ERR_IO;
    if (existing) {
        /* the replacement keeps the file's permissions, and its owner where allowed */
        (void)!fchown(fd, existing->st_uid, existing->st_gid);
        (void)!fchmod(fd, existing->st_mode & 07777);
        out->replace = true;
    }
    out->file = fdopen(fd, "wb");
    if (!out->file) {
        close(fd);
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot open: %s", out->shown,
                          strerror(errno));
    }
    return SGFP4_OK;
}

/* An existing path (lstat in *st): a link written through, a folder, a device, a file. */
static sgfp4_status open_existing(sgfp4_output *out, struct stat *st, unsigned flags,
                                  const sgfp4_inputs *inputs, sgfp4_diag *diag)
{
    char h[64];
    if (S_ISLNK(st->st_mode)) {
        /* written through: the link's target is the file written (as cp and zstd do) */
        if (stat(out->path, st) != 0)
            return refuse(diag, out, "is a symbolic link to a missing file: not writing "
                                     "through it", "");
        out->target = realpath(out->path, NULL);
    } else {
        out->target = strdup(out->path);
    }
    if (!out->target)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: %s", out->shown,
                          strerror(errno));
    if (S_ISDIR(st->st_mode))
        return refuse(diag, out, "is a directory", "");
    if (!S_ISREG(st->st_mode)) {
        const int fd = open(out->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        return fd >= 0 ? open_direct(out, fd, true, flags, inputs, diag)
                       : sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot open: %s",
                                    out->shown, strerror(errno));
    }
    const sgfp4_status s = check_target(out, st, -1, flags, inputs, diag);
    if (s != SGFP4_OK)
        return s;
    if (!(flags & SGFP4_OUTPUT_FORCE))
        return refuse(diag, out, "already exists: not replaced",
                      hint(out, "replaces it", h, sizeof h));
    return open_regular(out, st, diag);
}

static sgfp4_status open_path(sgfp4_output *out, unsigned flags, const sgfp4_inputs *inputs,
                              sgfp4_diag *diag)
{
    const char *path = out->path;
    const int descriptor = descriptor_of(path);
    struct stat st;
    if (strcmp(path, "-") == 0)
        return open_direct(out, STDOUT_FILENO, false, flags, inputs, diag);
    if (descriptor >= 0) {
        const int fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 3);
        return fd >= 0 ? open_direct(out, fd, true, flags, inputs, diag)
                       : sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1,
                                    "%s: not an open descriptor: %s", out->shown,
                                    strerror(errno));
    }
    if (path[0] == '\0' || path[strlen(path) - 1] == '/')
        return refuse(diag, out, stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? "is a directory"
                                                                            : "no such folder",
                      "");
    if (lstat(path, &st) == 0)
        return open_existing(out, &st, flags, inputs, diag);
    if (errno != ENOENT)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: %s", out->shown, strerror(errno));
    out->target = strdup(path);
    return out->target ? open_regular(out, NULL, diag)
                       : sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
}

sgfp4_status sgfp4_output_open(const char *path, const sgfp4_output_options *given,
                               sgfp4_output **result, sgfp4_diag *diag)
{
    if (!path || !result)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *result = NULL;
    sgfp4_output_options o;
    if (SGFP4_OPTIONS_READ(sgfp4_output_options, given, &o) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_output_options_init)",
                          given->struct_size);
    if (o.flags & ~SGFP4_OUTPUT_FORCE)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "options: unknown flags 0x%x",
                          o.flags & ~SGFP4_OUTPUT_FORCE);
    sgfp4_output *out = calloc(1, sizeof *out);
    if (out) {
        out->slot = -1;
        out->path = strdup(path);
        out->force_name = o.force_name ? strdup(o.force_name) : NULL;
    }
    if (!out || !out->path || (o.force_name && !out->force_name)) {
        sgfp4_output_close(out);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    sgfp4_path_shown(path, out->shown);
    const sgfp4_status s = open_path(out, o.flags, o.inputs, diag);
    if (s != SGFP4_OK) {
        sgfp4_output_close(out);
        return s;
    }
    *result = out;
    return SGFP4_OK;
}

sgfp4_status sgfp4_output_write(sgfp4_output *out, const void *data, size_t size)
{
    if (!out || !out->file || (!data && size))
        return SGFP4_ERR_ARGUMENT;
    if (!out->failed && size && fwrite(data, 1, size, out->file) != size) {
        out->failed = true;
        out->error = errno;
    }
    return out->failed ? SGFP4_ERR_IO : SGFP4_OK;
}

static sgfp4_status sink_write(void *user, const void *data, size_t size)
{
    return sgfp4_output_write(user, data, size);
}

sgfp4_sink sgfp4_output_sink(sgfp4_output *out) { return (sgfp4_sink){sink_write, out}; }

sgfp4_status sgfp4_output_finish(sgfp4_output *out, sgfp4_diag *diag)
{
    if (!out || !out->file)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "%s: not open",
                          out ? out->shown : "output");
    if (!out->failed && fflush(out->file) != 0) {
        out->failed = true;
        out->error = errno;
    }
    if (out->failed)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot write: %s", out->shown,
                          strerror(out->error ? out->error : EIO));
    if (out->tmp_path && fsync(fileno(out->file)) != 0)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot write: %s", out->shown,
                          strerror(errno));
    return SGFP4_OK;
}

const char *sgfp4_output_temp_path(const sgfp4_output *out)
{
    return out ? out->tmp_path : NULL;
}

size_t sgfp4_output_leftovers_removed(const sgfp4_output *out) { return out ? out->stale : 0; }

int sgfp4_output_error(const sgfp4_output *out) { return out && out->failed ? out->error : 0; }

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

/* Renames the complete temporary file onto the target. */
static sgfp4_status rename_onto(sgfp4_output *out, sgfp4_diag *diag)
{
    /* A new file must still be new: another program may have created it meanwhile. */
    int moved = out->replace ? rename(out->tmp_path, out->target)
                             : renameat2(AT_FDCWD, out->tmp_path, AT_FDCWD, out->target,
                                         RENAME_NOREPLACE);
    if (moved != 0 && !out->replace && (errno == EINVAL || errno == ENOSYS))
        moved = link(out->tmp_path, out->target) == 0 ? unlink(out->tmp_path), 0 : -1;
    char h[64];
    if (moved != 0)
        return errno == EEXIST
                   ? refuse(diag, out, "was created by someone else meanwhile: not replaced",
                            hint(out, "replaces it", h, sizeof h))
                   : sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1,
                                "%s: cannot rename the temporary file onto it: %s", out->shown,
                                strerror(errno));
    sync_folder(out->target);
    return SGFP4_OK;
}

/* Removes the temporary file, if any, and takes it off the signal list. */
static void drop_temp(sgfp4_output *out)
{
    if (out->tmp_path)
        unlink(out->tmp_path);
    sgfp4_temp_forget(out->slot, out->tmp_path);
    out->slot = -1;
    out->tmp_path = NULL;
}

sgfp4_status sgfp4_output_commit(sgfp4_output *out, sgfp4_diag *diag)
{
    if (!out || out->committed)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "%s: %s",
                          out ? out->shown : "output", out ? "already committed" : "NULL");
    sgfp4_status s = sgfp4_output_finish(out, diag);
    if (s == SGFP4_OK && out->tmp_path)
        s = rename_onto(out, diag);
    if (s != SGFP4_OK) {
        drop_temp(out);
        return s;
    }
    sgfp4_temp_forget(out->slot, out->tmp_path); /* renamed: nothing to remove */
    out->slot = -1;
    out->tmp_path = NULL;
    out->committed = true;
    FILE *f = out->file;
    out->file = NULL;
    if (f != stdout && fclose(f) != 0 && out->direct)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cannot write: %s", out->shown,
                          strerror(errno));
    return SGFP4_OK;
}

sgfp4_status sgfp4_output_commit_all(sgfp4_output *const *outputs, size_t count,
                                     sgfp4_diag *diag)
{
    if (!outputs && count)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    sigset_t previous;
    sgfp4_temp_hold_signals(&previous);
    sgfp4_status s = SGFP4_OK;
    for (size_t k = 0; s == SGFP4_OK && k < count; k++)
        s = sgfp4_output_commit(outputs[k], diag);
    sgfp4_temp_release_signals(&previous);
    return s;
}

void sgfp4_output_close(sgfp4_output *out)
{
    if (!out)
        return;
    drop_temp(out);
    if (out->file && out->file != stdout)
        fclose(out->file);
    free(out->target);
    free(out->path);
    free(out->force_name);
    free(out);
}

bool sgfp4_output_path_is_direct(const char *path)
{
    struct stat st;
    return path && (strcmp(path, "-") == 0 || descriptor_of(path) >= 0 ||
                    (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)));
}
