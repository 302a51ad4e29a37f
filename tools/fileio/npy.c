/* NumPy .npy files: writing decoded tensors (v1.0), reading tensors to encode.
 * Format: "\x93NUMPY", version 1.0, uint16 header length, a Python dict literal padded with
 * spaces and ended by '\n' so that the data starts on a 64-byte boundary.
 * SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

bool fileio_is_npy(const uint8_t *data, size_t size)
{
    return size >= 6 && memcmp(data, "\x93NUMPY", 6) == 0;
}

bool fileio_npy_write_header(fileio_output *out, const char *descr, const uint64_t *shape,
                             size_t rank)
{
    char dims[24 * 16 + 8] = "";
    size_t used = 0;
    for (size_t d = 0; d < rank && d < 16; d++)
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%" PRIu64 "%s", shape[d],
                                 rank == 1 || d + 1 < rank ? ", " : "");
    if (rank > 16)
        return false;
    if (rank == 1)
        dims[used - 1] = '\0'; /* "(a,)": a 1-tuple, as Python writes it */
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr, dims);
    if (n < 0 || (size_t)n >= sizeof dict)
        return false;
    uint8_t header[640];
    const size_t prefix = 10;
    size_t total = prefix + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    const size_t dict_len = total - prefix;
    header[8] = (uint8_t)(dict_len & 0xFF);
    header[9] = (uint8_t)(dict_len >> 8);
    memcpy(header + prefix, dict, (size_t)n);
    memset(header + prefix + n, ' ', dict_len - (size_t)n - 1);
    header[total - 1] = '\n';
    return fileio_output_write(out, header, total);
}

/* Finds `key` in the header dict and returns a pointer just after "'key':" and spaces. */
static const char *dict_value(const char *dict, const char *key)
{
    char pattern[32];
    snprintf(pattern, sizeof pattern, "'%s':", key);
    const char *p = strstr(dict, pattern);
    if (!p)
        return NULL;
    p += strlen(pattern);
    while (*p == ' ')
        p++;
    return p;
}

bool fileio_npy_parse(const uint8_t *data, size_t size, char descr[8], uint64_t *rows,
                      uint64_t *cols, size_t *data_offset, const char **error)
{
    if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0)
        return *error = "not a .npy file (bad magic)", false;
    size_t header_len, prefix;
    if (data[6] == 1) {
        header_len = data[8] | (size_t)data[9] << 8;
        prefix = 10;
    } else if (data[6] == 2 || data[6] == 3) {
        if (size < 12)
            return *error = "truncated .npy header", false;
        header_len = data[8] | (size_t)data[9] << 8 | (size_t)data[10] << 16 |
                     (size_t)data[11] << 24;
        prefix = 12;
    } else {
        return *error = "unsupported .npy version", false;
    }
    if (header_len > 65536 || size - prefix < header_len)
        return *error = "truncated .npy header", false;
    char dict[65537];
    memcpy(dict, data + prefix, header_len);
    dict[header_len] = '\0';

    const char *d = dict_value(dict, "descr");
    if (!d || *d != '\'' || !strchr(d + 1, '\'') || strchr(d + 1, '\'') - (d + 1) >= 8)
        return *error = ".npy header has no readable 'descr'", false;
    const size_t dl = (size_t)(strchr(d + 1, '\'') - (d + 1));
    memcpy(descr, d + 1, dl);
    descr[dl] = '\0';

    const char *f = dict_value(dict, "fortran_order");
    if (!f || strncmp(f, "False", 5) != 0)
        return *error = ".npy array is not C-ordered (fortran_order must be False)", false;

    const char *s = dict_value(dict, "shape");
    if (!s || *s != '(')
        return *error = ".npy header has no readable 'shape'", false;
    uint64_t dims[2];
    int ndim = 0;
    s++;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *end;
        const unsigned long long v = strtoull(s, &end, 10);
        if (end == s || ndim == 2)
            return *error = ".npy array must be 1-D or 2-D", false;
        dims[ndim++] = v;
        s = end;
        while (*s == 'L' || *s == ' ')
            s++;
        if (*s != ',' && *s != ')')
            return *error = ".npy header has a malformed 'shape'", false;
    }
    if (ndim == 0)
        return *error = ".npy array must be 1-D or 2-D", false;
    *rows = ndim == 2 ? dims[0] : 1;
    *cols = ndim == 2 ? dims[1] : dims[0];
    *data_offset = prefix + header_len;
    return true;
}
