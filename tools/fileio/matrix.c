/* Float matrices to encode or compare with: a .npy file of float32 or float16, or raw
 * little-endian float32 of a given shape.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

float *fileio_matrix(const fileio_input *in, const char *path, uint64_t *rows, uint64_t *cols,
                     char *err)
{
    const uint8_t *data = in->data;
    size_t bytes = in->size;
    int half = 0;
    if (fileio_is_npy(in->data, in->size)) {
        char descr[8];
        uint64_t r, c;
        size_t offset;
        const char *error = NULL;
        if (!fileio_npy_parse(in->data, in->size, descr, &r, &c, &offset, &error))
            return snprintf(err, FILEIO_ERROR_SIZE, "%s: %s", path, error), NULL;
        if (strcmp(descr, "<f4") != 0 && strcmp(descr, "<f2") != 0)
            return snprintf(err, FILEIO_ERROR_SIZE, "%s: dtype %s not supported (want <f4 or <f2)",
                            path, descr[0] ? descr : "(a long or escaped name)"),
                   NULL;
        half = strcmp(descr, "<f2") == 0;
        if (*rows && (*rows != r || *cols != c))
            return snprintf(err, FILEIO_ERROR_SIZE, "%s: shape %llux%llu does not match --shape",
                            path, (unsigned long long)r, (unsigned long long)c),
                   NULL;
        *rows = r;
        *cols = c;
        data += offset;
        bytes -= offset;
    } else if (*rows == 0) {
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: raw float32 input needs --shape OxI", path),
               NULL;
    }
    const uint64_t elem = half ? 2u : 4u;
    if (*cols != 0 && *rows > UINT64_MAX / *cols / elem)
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: %zu data bytes, shape %llux%llu needs more "
                        "than 2^64 (%.4g bytes)", path, bytes, (unsigned long long)*rows,
                        (unsigned long long)*cols, (double)*rows * (double)*cols * (double)elem),
               NULL;
    const uint64_t count = *rows * *cols, want = count * elem;
    if (count > SIZE_MAX / 4 || bytes != want)
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: %zu data bytes, shape %llux%llu needs %llu",
                        path, bytes, (unsigned long long)*rows, (unsigned long long)*cols,
                        (unsigned long long)want),
               NULL;
    float *m = malloc((size_t)count * sizeof *m + 1);
    if (!m)
        return snprintf(err, FILEIO_ERROR_SIZE, "out of memory for %llu weights",
                        (unsigned long long)count),
               NULL;
    for (uint64_t i = 0; i < count; i++) {
        if (half) {
            m[i] = sgfp4_half_to_float((uint16_t)(data[2 * i] | data[2 * i + 1] << 8));
        } else {
            const uint32_t bits = (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
                                  (uint32_t)data[4 * i + 2] << 16 |
                                  (uint32_t)data[4 * i + 3] << 24;
            memcpy(&m[i], &bits, 4);
        }
    }
    return m;
}
