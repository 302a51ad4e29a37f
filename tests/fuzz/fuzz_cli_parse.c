/* libFuzzer target: the parsers of the `sgfp4` tool that read untrusted text or bytes:
 * the .npy header parser (fileio_npy_parse, input of `sgfp4 encode`) and the value parsers
 * (--shape, numbers and sizes, profile, dtype).
 * Input: one selector byte, then the bytes given to the chosen parser (as a NUL-terminated
 * string for the argument parsers).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "cli.h"
#include "fuzz_common.h"

static void fuzz_npy(const uint8_t *data, size_t size)
{
    char descr[8];
    memset(descr, 0x7F, sizeof descr);
    uint64_t rows = 0, cols = 0;
    size_t offset = 0;
    const char *error = NULL;
    if (fileio_npy_parse(data, size, descr, &rows, &cols, &offset, &error)) {
        FUZZ_ASSERT(memchr(descr, '\0', sizeof descr) != NULL);
        FUZZ_ASSERT(offset >= 10 && offset <= size);
    } else {
        FUZZ_ASSERT(error != NULL && error[0] != '\0');
    }
}

static void fuzz_text(uint8_t which, const char *text)
{
    switch (which % 5) {
    case 0: {
        uint64_t rows = 0, cols = 0;
        if (cli_parse_shape(text, &rows, &cols))
            FUZZ_ASSERT(rows >= 1 && cols >= 1);
        break;
    }
    case 1: {
        /* a plain number reads the same as a count and as a size (SIZE of the limits) */
        unsigned v;
        uint64_t size;
        const bool as_uint = cli_parse_uint(text, &v);
        const bool as_size = cli_parse_size(text, &size);
        if (as_uint)
            FUZZ_ASSERT(as_size && size == v);
        break;
    }
    case 2: {
        double v;
        if (cli_parse_double(text, &v))
            FUZZ_ASSERT(v == v);
        break;
    }
    case 3: {
        sgfp4_profile p;
        if (cli_parse_profile(text, &p))
            FUZZ_ASSERT(p == SGFP4_PROFILE_V1 || p == SGFP4_PROFILE_V2);
        sgfp4_dtype d;
        if (cli_parse_dtype(text, &d))
            FUZZ_ASSERT(sgfp4_dtype_size(d) != 0);
        break;
    }
    default:
        (void)cli_is_model_path(text);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t selector = data[0];
    data++, size--;
    if (selector < 128) {
        fuzz_npy(data, size);
        return 0;
    }
    char *text = malloc(size + 1);
    FUZZ_ASSERT(text);
    memcpy(text, data, size);
    text[size] = '\0';
    fuzz_text((uint8_t)(selector - 128), text);
    free(text);
    return 0;
}
