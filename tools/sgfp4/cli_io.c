/* Input files (mapped or read), crash-safe output files (temporary + rename), sha256.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cli.h"

static bool read_stream(const char *command, FILE *f, const char *name, cli_input *in)
{
    size_t cap = 1 << 16, size = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return cli_error(command, "%s: out of memory", name), false;
    for (;;) {
        if (size == cap) {
            if (cap > SIZE_MAX / 2) {
                free(buf);
                return cli_error(command, "%s: input too large", name), false;
            }
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return cli_error(command, "%s: out of memory", name), false;
            }
            buf = bigger;
            cap *= 2;
        }
        const size_t got = fread(buf + size, 1, cap - size, f);
        size += got;
        if (got == 0) {
            if (ferror(f)) {
                free(buf);
                return cli_error(command, "%s: read error: %s", name, strerror(errno)), false;
            }
            break;
        }
    }
    in->data = in->owned = buf;
    in->size = size;
    return true;
}

bool cli_read_input(const char *command, const char *path, cli_input *in)
{
    memset(in, 0, sizeof *in);
    if (strcmp(path, "-") == 0)
        return read_stream(command, stdin, "standard input", in);
    const int fd = open(path, O_RDONLY);
    if (fd < 0)
        return cli_error(command, "%s: cannot open: %s", path, strerror(errno)), false;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return cli_error(command, "%s: cannot stat: %s", path, strerror(errno)), false;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return cli_error(command, "%s: is a directory", path), false;
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
        return cli_error(command, "%s: cannot read: %s", path, strerror(errno)), false;
    }
    const bool ok = read_stream(command, f, path, in);
    fclose(f);
    return ok;
}

void cli_input_release(cli_input *in)
{
    if (in->mapping)
        munmap(in->mapping, in->size);
    free(in->owned);
    memset(in, 0, sizeof *in);
}

bool cli_resolve_profile(const char *command, const char *path, const cli_input *in,
                         bool explicit_given, sgfp4_profile explicit_profile,
                         sgfp4_profile *profile)
{
    if (explicit_given) {
        *profile = explicit_profile;
        return true;
    }
    if (in->size >= 4 && memcmp(in->data, "SGF4", 4) == 0) {
        *profile = SGFP4_PROFILE_V2;
        return true;
    }
    if (cli_ends_with(path, ".fp4")) {
        *profile = SGFP4_PROFILE_V1;
        return true;
    }
    if (cli_ends_with(path, ".sgfp4")) {
        *profile = SGFP4_PROFILE_V2; /* no magic: the open reports what is wrong */
        return true;
    }
    cli_error(command, "%s: cannot tell the profile (no 'SGF4' magic, no .fp4 extension); "
                       "pass --profile v1 or --profile v2", path);
    return false;
}

bool cli_open_tensor(const char *command, const char *path, const cli_input *in,
                     sgfp4_profile profile, uint64_t rows, uint64_t cols, sgfp4_tensor **t)
{
    sgfp4_diag diag;
    const sgfp4_status s =
        sgfp4_tensor_open(in->data, in->size, profile, rows, cols, t, NULL, &diag);
    if (s != SGFP4_OK) {
        cli_error(command, "%s: %s [%s]", path, diag.message, sgfp4_status_name(s));
        return false;
    }
    return true;
}

bool cli_output_open(const char *command, const char *path, cli_output *out)
{
    memset(out, 0, sizeof *out);
    if (strcmp(path, "-") == 0) {
        if (isatty(STDOUT_FILENO)) {
            cli_error(command, "refusing to write binary output to a terminal");
            return false;
        }
        out->file = stdout;
        out->path = strdup("-");
        return out->path != NULL;
    }
    /* The temporary file lives in the target's folder, so rename() is atomic. */
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
    const size_t tmp_len = strlen(path) + 32;
    out->path = strdup(path);
    out->tmp_path = malloc(tmp_len);
    if (!out->path || !out->tmp_path) {
        cli_output_abort(out);
        cli_error(command, "out of memory");
        return false;
    }
    snprintf(out->tmp_path, tmp_len, "%.*s.%s.tmp-XXXXXX", (int)dir_len, path, path + dir_len);
    const int fd = mkstemp(out->tmp_path);
    if (fd < 0) {
        cli_error(command, "%s: cannot create a temporary file beside it: %s", path,
                  strerror(errno));
        free(out->tmp_path);
        out->tmp_path = NULL;
        cli_output_abort(out);
        return false;
    }
    /* mkstemp makes 0600; give the output the usual permissions under the umask */
    const mode_t mask = umask(0);
    umask(mask);
    (void)!fchmod(fd, 0666 & ~mask); /* not fatal: the file would stay private */
    out->file = fdopen(fd, "wb");
    if (!out->file) {
        close(fd);
        cli_output_abort(out);
        cli_error(command, "%s: cannot open: %s", path, strerror(errno));
        return false;
    }
    return true;
}

bool cli_output_write(cli_output *out, const void *data, size_t size)
{
    if (out->failed)
        return false;
    if (size && fwrite(data, 1, size, out->file) != size)
        out->failed = true;
    return !out->failed;
}

bool cli_output_commit(const char *command, cli_output *out)
{
    bool ok = !out->failed && fflush(out->file) == 0;
    if (out->tmp_path) {
        ok = ok && fsync(fileno(out->file)) == 0;
        ok = (fclose(out->file) == 0) && ok;
        out->file = NULL;
        if (ok && rename(out->tmp_path, out->path) != 0)
            ok = false;
    }
    if (!ok) {
        cli_error(command, "%s: cannot write: %s", out->path, strerror(errno));
        cli_output_abort(out);
        return false;
    }
    free(out->tmp_path);
    free(out->path);
    memset(out, 0, sizeof *out);
    return true;
}

void cli_output_abort(cli_output *out)
{
    if (out->file && out->file != stdout)
        fclose(out->file);
    if (out->tmp_path)
        unlink(out->tmp_path);
    free(out->tmp_path);
    free(out->path);
    memset(out, 0, sizeof *out);
}

void cli_sha256_hex(const void *data, size_t size, char hex[65])
{
    unsigned char digest[32];
    unsigned int len = 0;
    EVP_Digest(data, size, digest, &len, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    hex[64] = '\0';
}
