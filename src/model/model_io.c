/* The model layer's file and hash helpers: the temporary files zstd inputs and the encoder's
 * spool use (zstd_io.c, model_encode.c), and the sha256 the manifest records per tensor.
 * SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "model/model_internal.h"

void sgfp4_sha256_hex(const void *data, size_t size, char hex[65])
{
    unsigned char digest[32];
    unsigned int len = 0;
    EVP_Digest(data, size, digest, &len, EVP_sha256(), NULL);
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

const char *sgfp4_temp_dir(const char *dir)
{
    if (dir && *dir)
        return dir;
    const char *env = getenv("TMPDIR");
    return env && *env ? env : "/tmp";
}

int sgfp4_temp_file(const char *dir)
{
    const char *d = sgfp4_temp_dir(dir);
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(d, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#endif
    const size_t len = strlen(d) + 32;
    char *path = malloc(len);
    if (!path)
        return -1;
    snprintf(path, len, "%s/sgfp4-XXXXXX", d);
    fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    free(path);
    return fd;
}
