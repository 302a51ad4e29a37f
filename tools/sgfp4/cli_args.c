/* Messages and argument parsing of the `sgfp4` tool.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

bool cli_quiet = false;

static void vreport(const char *command, const char *format, va_list args)
{
    fprintf(stderr, "sgfp4: %s%s", command ? command : "", command ? ": " : "");
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
}

int cli_error(const char *command, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vreport(command, format, args);
    va_end(args);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *command, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "sgfp4: %s: ", command);
    vfprintf(stderr, format, args);
    fprintf(stderr, " (try 'sgfp4 %s --help')\n", command);
    va_end(args);
    return CLI_EXIT_USAGE;
}

bool cli_take_option(int argc, char **argv, int *i, const char *name, const char **value,
                     const char **error)
{
    const char *arg = argv[*i];
    const size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return false;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return true;
    }
    if (arg[n] != '\0')
        return false;
    if (*i + 1 >= argc) {
        *error = "needs a value";
        *value = NULL;
        return true;
    }
    *value = argv[++*i];
    return true;
}

const char *cli_first_positional(int argc, char **argv, const char *const *valued)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-") == 0 || a[0] != '-')
            return a;
        if (strchr(a, '='))
            continue;
        for (const char *const *v = valued; v && *v; v++)
            if (strcmp(a, *v) == 0) {
                i++;
                break;
            }
    }
    return NULL;
}

static bool parse_u64(const char *text, uint64_t *value)
{
    if (!text || *text < '0' || *text > '9')
        return false;
    errno = 0;
    char *end;
    const unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        return false;
    *value = v;
    return true;
}

bool cli_parse_shape(const char *text, uint64_t *rows, uint64_t *cols)
{
    if (!text)
        return false;
    const char *sep = strpbrk(text, "x,X");
    if (!sep || sep == text)
        return false;
    char first[32];
    const size_t n = (size_t)(sep - text);
    if (n >= sizeof first)
        return false;
    memcpy(first, text, n);
    first[n] = '\0';
    return parse_u64(first, rows) && parse_u64(sep + 1, cols) && *rows > 0 && *cols > 0;
}

bool cli_parse_profile(const char *text, sgfp4_profile *profile)
{
    if (text && (strcmp(text, "v1") == 0 || strcmp(text, "1") == 0)) {
        *profile = SGFP4_PROFILE_V1;
        return true;
    }
    if (text && (strcmp(text, "v2") == 0 || strcmp(text, "2") == 0)) {
        *profile = SGFP4_PROFILE_V2;
        return true;
    }
    return false;
}

bool cli_parse_dtype(const char *text, sgfp4_dtype *dtype)
{
    static const struct { const char *name; sgfp4_dtype dtype; } names[] = {
        {"f32", SGFP4_DTYPE_F32}, {"f16", SGFP4_DTYPE_F16}, {"bf16", SGFP4_DTYPE_BF16}};
    for (size_t k = 0; text && k < sizeof names / sizeof names[0]; k++)
        if (strcmp(text, names[k].name) == 0) {
            *dtype = names[k].dtype;
            return true;
        }
    return false;
}

bool cli_parse_backend(const char *text, sgfp4_backend *backend)
{
    static const struct { const char *name; sgfp4_backend backend; } names[] = {
        {"auto", SGFP4_BACKEND_AUTO},       {"cpu", SGFP4_BACKEND_CPU},
        {"scalar", SGFP4_BACKEND_SCALAR},   {"generic", SGFP4_BACKEND_GENERIC},
        {"avx2", SGFP4_BACKEND_AVX2},       {"avx512", SGFP4_BACKEND_AVX512},
        {"neon", SGFP4_BACKEND_NEON}};
    for (size_t k = 0; text && k < sizeof names / sizeof names[0]; k++)
        if (strcmp(text, names[k].name) == 0) {
            *backend = names[k].backend;
            return true;
        }
    return false;
}

bool cli_parse_store(const char *text, sgfp4_store *store)
{
    static const struct { const char *name; sgfp4_store store; } names[] = {
        {"auto", SGFP4_STORE_AUTO}, {"cached", SGFP4_STORE_CACHED},
        {"streaming", SGFP4_STORE_STREAMING}};
    for (size_t k = 0; text && k < sizeof names / sizeof names[0]; k++)
        if (strcmp(text, names[k].name) == 0) {
            *store = names[k].store;
            return true;
        }
    return false;
}

bool cli_parse_uint(const char *text, unsigned *value)
{
    uint64_t v;
    if (!parse_u64(text, &v) || v > UINT32_MAX)
        return false;
    *value = (unsigned)v;
    return true;
}

bool cli_parse_double(const char *text, double *value)
{
    if (!text || !*text)
        return false;
    errno = 0;
    char *end;
    const double v = strtod(text, &end);
    if (errno || *end || v != v)
        return false;
    *value = v;
    return true;
}

unsigned cli_threads(unsigned requested)
{
    if (requested)
        return requested;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1u : cpus > SGFP4_MAX_THREADS ? SGFP4_MAX_THREADS : (unsigned)cpus;
}

bool cli_ends_with(const char *text, const char *suffix)
{
    const size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

bool cli_is_model_path(const char *path)
{
    return path && (cli_ends_with(path, ".safetensors") || cli_ends_with(path, ".safetensors.zst"));
}
