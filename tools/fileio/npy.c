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

/* ---- reading: the header is a Python dict literal, parsed as one ---- */

/* A cursor over the header text [p, end). */
typedef struct npy_text {
    const char *p, *end;
} npy_text;

static void skip_space(npy_text *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r'))
        t->p++;
}

/* Consumes `c` (after spaces) if it is next. */
static bool take_char(npy_text *t, char c)
{
    skip_space(t);
    if (t->p < t->end && *t->p == c) {
        t->p++;
        return true;
    }
    return false;
}

/* A Python string literal, '...' or "...", whose contents may hold anything (a backslash
 * escapes the next character). Its raw contents (escapes as written) go to out[0..cap) when
 * they fit (else *fits is false). */
static bool take_string(npy_text *t, char *out, size_t cap, bool *fits)
{
    skip_space(t);
    if (t->p >= t->end || (*t->p != '\'' && *t->p != '"'))
        return false;
    const char quote = *t->p++;
    size_t n = 0;
    *fits = true;
    while (t->p < t->end && *t->p != quote) {
        if (*t->p == '\\' && t->p + 1 < t->end) {
            *fits = false; /* an escape: not one of the plain names and dtypes we read */
            t->p++;
        }
        if (n + 1 < cap)
            out[n++] = *t->p;
        else
            *fits = false;
        t->p++;
    }
    if (t->p >= t->end)
        return false; /* unterminated */
    t->p++;
    out[n] = '\0';
    return true;
}

/* True or False. */
static bool take_bool(npy_text *t, bool *value)
{
    skip_space(t);
    const size_t left = (size_t)(t->end - t->p);
    if (left >= 4 && memcmp(t->p, "True", 4) == 0)
        return t->p += 4, *value = true, true;
    if (left >= 5 && memcmp(t->p, "False", 5) == 0)
        return t->p += 5, *value = false, true;
    return false;
}

/* A tuple of non-negative integers: (), (a,), (a, b), ... (a trailing comma allowed, Python
 * 2's L suffix too). At most `cap` dimensions are stored; *ndim counts them all. */
static const char *take_shape(npy_text *t, uint64_t *dims, int cap, int *ndim)
{
    if (!take_char(t, '('))
        return ".npy header: 'shape' is not a tuple";
    *ndim = 0;
    while (!take_char(t, ')')) {
        skip_space(t);
        if (t->p >= t->end || *t->p < '0' || *t->p > '9')
            return ".npy header: 'shape' holds something other than non-negative integers";
        uint64_t v = 0;
        while (t->p < t->end && *t->p >= '0' && *t->p <= '9') {
            const unsigned digit = (unsigned)(*t->p++ - '0');
            if (v > (UINT64_MAX - digit) / 10)
                return ".npy header: a 'shape' dimension is larger than 2^64 - 1";
            v = v * 10 + digit;
        }
        if (t->p < t->end && (*t->p == 'L' || *t->p == 'l'))
            t->p++;
        if (*ndim < cap)
            dims[*ndim] = v;
        if (*ndim < 64)
            (*ndim)++;
        if (!take_char(t, ',')) {
            if (!take_char(t, ')'))
                return ".npy header: 'shape' is not a tuple of integers";
            break;
        }
    }
    return NULL;
}

static bool is_word_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '+' || c == '-' || c == '.' || c == '_';
}

/* Skips any other literal: a string, a number, True / False / None, or a tuple, list or dict
 * of literals (nested at most `depth` deep). */
static bool skip_value(npy_text *t, int depth)
{
    skip_space(t);
    if (t->p >= t->end || depth == 0)
        return false;
    const char c = *t->p;
    if (c == '\'' || c == '"') {
        char ignored[2];
        bool fits;
        return take_string(t, ignored, sizeof ignored, &fits);
    }
    if (c == '(' || c == '[' || c == '{') {
        const char close = c == '(' ? ')' : c == '[' ? ']' : '}';
        t->p++;
        while (!take_char(t, close)) {
            if (!skip_value(t, depth - 1))
                return false;
            if (c == '{' && (!take_char(t, ':') || !skip_value(t, depth - 1)))
                return false;
            if (!take_char(t, ',')) {
                if (!take_char(t, close))
                    return false;
                break;
            }
        }
        return true;
    }
    /* a number or a name: letters, digits, sign, point, exponent */
    const char *start = t->p;
    while (t->p < t->end && is_word_char(*t->p))
        t->p++;
    return t->p > start;
}

/* The header dict: the keys 'descr' (a string), 'fortran_order' (a bool) and 'shape' (a
 * tuple), each once, in any order; other keys (which NumPy itself refuses) are skipped with
 * their values, whatever their strings hold; nothing after the dict but spaces and the
 * newline. */
static const char *parse_dict(npy_text *t, char descr[8], bool *fortran, uint64_t dims[2],
                              int *ndim)
{
    enum { DESCR = 1, FORTRAN = 2, SHAPE = 4 };
    unsigned seen = 0;
    if (!take_char(t, '{'))
        return ".npy header is not a Python dict literal";
    while (!take_char(t, '}')) {
        char key[16];
        bool plain;
        if (!take_string(t, key, sizeof key, &plain))
            return ".npy header: a key is not a string";
        const unsigned which = !plain                           ? 0
                               : strcmp(key, "descr") == 0         ? DESCR
                               : strcmp(key, "fortran_order") == 0 ? FORTRAN
                               : strcmp(key, "shape") == 0         ? SHAPE
                                                                   : 0;
        if (seen & which)
            return ".npy header has a key twice";
        seen |= which;
        if (!take_char(t, ':'))
            return ".npy header: a key without ':'";
        if (!which) {
            if (!skip_value(t, 16))
                return ".npy header: a value is not a Python literal";
        } else if (which == DESCR) {
            bool fits;
            if (!take_string(t, descr, 8, &fits))
                return ".npy header: 'descr' is not a string (a structured dtype?)";
            if (!fits)
                descr[0] = '\0'; /* no dtype we read: the caller names it unsupported */
        } else if (which == FORTRAN) {
            if (!take_bool(t, fortran))
                return ".npy header: 'fortran_order' is not True or False";
        } else {
            const char *why = take_shape(t, dims, 2, ndim);
            if (why)
                return why;
        }
        if (!take_char(t, ',')) {
            if (!take_char(t, '}'))
                return ".npy header: the dict is malformed (',' or '}' expected)";
            break;
        }
    }
    skip_space(t);
    if (t->p != t->end)
        return ".npy header has bytes after its dict";
    if (seen != (DESCR | FORTRAN | SHAPE))
        return !(seen & DESCR)     ? ".npy header has no 'descr'"
               : !(seen & FORTRAN) ? ".npy header has no 'fortran_order'"
                                   : ".npy header has no 'shape'";
    return NULL;
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
    if (size - prefix < header_len)
        return *error = "truncated .npy header", false;
    npy_text t = {(const char *)data + prefix, (const char *)data + prefix + header_len};
    bool fortran = false;
    uint64_t dims[2] = {0, 0};
    int ndim = 0;
    if ((*error = parse_dict(&t, descr, &fortran, dims, &ndim)) != NULL)
        return false;
    if (fortran)
        return *error = ".npy array is in Fortran order (fortran_order is True): save it in C "
                        "order", false;
    if (ndim != 1 && ndim != 2)
        return *error = ".npy array must be 1-D or 2-D", false;
    *rows = ndim == 2 ? dims[0] : 1;
    *cols = ndim == 2 ? dims[1] : dims[0];
    *data_offset = prefix + header_len;
    return true;
}
