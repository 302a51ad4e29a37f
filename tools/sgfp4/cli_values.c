/* The values of the tool's options: parsed and checked, without messages (the callers say
 * what was wrong). The fuzz target of the CLI's parsers calls these directly.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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
    const char *sep = text ? strpbrk(text, "x,X") : NULL;
    char first[32];
    const size_t n = sep ? (size_t)(sep - text) : 0;
    if (n == 0 || n >= sizeof first)
        return false;
    memcpy(first, text, n);
    first[n] = '\0';
    return parse_u64(first, rows) && parse_u64(sep + 1, cols) && *rows > 0 && *cols > 0;
}

typedef struct name_value {
    const char *name;
    int value;
} name_value;

/* Finds `text` in table[0..n); false if it is not there. */
static bool lookup(const name_value *table, size_t n, const char *text, int *value)
{
    for (size_t k = 0; text && k < n; k++)
        if (strcmp(text, table[k].name) == 0) {
            *value = table[k].value;
            return true;
        }
    return false;
}
#define LOOKUP(table, text, value) lookup(table, sizeof table / sizeof table[0], text, value)

bool cli_parse_profile(const char *text, sgfp4_profile *profile)
{
    static const name_value names[] = {{"v1", SGFP4_PROFILE_V1}, {"1", SGFP4_PROFILE_V1},
                                        {"v2", SGFP4_PROFILE_V2}, {"2", SGFP4_PROFILE_V2}};
    int v;
    return LOOKUP(names, text, &v) ? (*profile = (sgfp4_profile)v, true) : false;
}

bool cli_parse_dtype(const char *text, sgfp4_dtype *dtype)
{
    static const name_value names[] = {
        {"f32", SGFP4_DTYPE_F32}, {"f16", SGFP4_DTYPE_F16}, {"bf16", SGFP4_DTYPE_BF16}};
    int v;
    return LOOKUP(names, text, &v) ? (*dtype = (sgfp4_dtype)v, true) : false;
}

bool cli_parse_backend(const char *text, sgfp4_backend *backend)
{
    static const name_value names[] = {
        {"auto", SGFP4_BACKEND_AUTO},     {"cpu", SGFP4_BACKEND_AUTO},
        {"scalar", SGFP4_BACKEND_SCALAR}, {"generic", SGFP4_BACKEND_GENERIC},
        {"avx2", SGFP4_BACKEND_AVX2},     {"avx512", SGFP4_BACKEND_AVX512},
        {"neon", SGFP4_BACKEND_NEON}};
    int v;
    return LOOKUP(names, text, &v) ? (*backend = (sgfp4_backend)v, true) : false;
}

bool cli_parse_store(const char *text, sgfp4_store *store)
{
    static const name_value names[] = {{"auto", SGFP4_STORE_AUTO},
                                        {"cached", SGFP4_STORE_CACHED},
                                        {"streaming", SGFP4_STORE_STREAMING}};
    int v;
    return LOOKUP(names, text, &v) ? (*store = (sgfp4_store)v, true) : false;
}

bool cli_parse_fit(const char *text, sgfp4_fit *fit)
{
    static const name_value names[] = {{"best", SGFP4_FIT_BEST},
                                        {"fast", SGFP4_FIT_FAST},
                                        {"reference", SGFP4_FIT_REFERENCE}};
    int v;
    return LOOKUP(names, text, &v) ? (*fit = (sgfp4_fit)v, true) : false;
}

/* "row": each output row's error relative to its squared norm (SGFP4_METRIC_ROW_RELATIVE). */
bool cli_parse_metric(const char *text, sgfp4_error_metric *metric)
{
    static const name_value names[] = {{"sse", SGFP4_METRIC_SSE},
                                        {"row", SGFP4_METRIC_ROW_RELATIVE}};
    int v;
    return LOOKUP(names, text, &v) ? (*metric = (sgfp4_error_metric)v, true) : false;
}

bool cli_parse_uint(const char *text, unsigned *value)
{
    uint64_t v;
    if (!parse_u64(text, &v) || v > UINT32_MAX)
        return false;
    *value = (unsigned)v;
    return true;
}

bool cli_parse_uint_in(const char *text, unsigned lo, unsigned hi, unsigned *value)
{
    return cli_parse_uint(text, value) && *value >= lo && *value <= hi;
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

bool cli_parse_size(const char *text, uint64_t *value)
{
    if (!text || *text < '0' || *text > '9')
        return false;
    errno = 0;
    char *end;
    const unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return false;
    static const struct {
        const char *suffix;
        uint64_t unit;
    } units[] = {
        {"", 1},
        {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
        {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
        {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
        {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
    };
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
        if (strcmp(end, units[k].suffix) == 0) {
            if (v > UINT64_MAX / units[k].unit)
                return false;
            *value = (uint64_t)v * units[k].unit;
            return true;
        }
    return false;
}

bool cli_ends_with(const char *text, const char *suffix)
{
    const size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

bool cli_is_model_path(const char *path)
{
    return path && (cli_ends_with(path, ".safetensors") ||
                    cli_ends_with(path, ".safetensors.zst") || cli_ends_with(path, ".index.json"));
}

const char *cli_profile_name(sgfp4_profile profile)
{
    return profile == SGFP4_PROFILE_V1 ? "v1" : "v2";
}

unsigned cli_threads(unsigned requested)
{
    if (requested)
        return requested;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1u : cpus > SGFP4_MAX_THREADS ? SGFP4_MAX_THREADS : (unsigned)cpus;
}

sgfp4_decode_options cli_decode_options(const cli_args *a)
{
    sgfp4_decode_options o;
    sgfp4_decode_options_init(&o);
    o.backend = a->backend;
    o.threads = a->threads;
    o.store = a->store;
    return o;
}
