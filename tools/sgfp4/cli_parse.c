/* The options of every command, in one table: getopt_long parses them, and `--help` is
 * printed from the same entries, so the two cannot drift apart.
 * SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <string.h>

#include "cli.h"

typedef cli_option_spec option_spec;

/* The tool's own options (the benchmarks': cli_bench_specs). */
static const option_spec specs[] = {
    {KEY_OUTPUT, "output", "OUT", "output path ('-': standard output)"},
    {KEY_SHAPE, "shape", "OxI", "logical tensor shape (a bare container carries none)"},
    {KEY_PROFILE, "profile", "v1|v2", "container profile (default: 'SGF4' magic, else extension)"},
    {KEY_DTYPE, "dtype", "f32|f16|bf16", "output type (default f32; f16/bf16 round to nearest even)"},
    {KEY_BACKEND, "backend", "auto|cpu|scalar|generic|avx2|avx512|neon|vulkan",
     "auto (default), cpu, scalar (the reference), generic, avx2, avx512, neon (one CPU kernel "
     "set), vulkan"},
    {KEY_THREADS, "threads", "N", "threads (default, and 0: every online CPU)"},
    {KEY_STORE, "store", "auto|cached|streaming", "CPU output stores: auto (default), cached, "
                                                  "streaming"},
    {KEY_ZSTD_LEVEL, "zstd-level", "N", "zstd level of .zst outputs, 1..22 (default 3)"},
    {KEY_TENSOR, "tensor", "NAME", "encode tensor NAME of a model (F32, F16, BF16, F8_E4M3, "
                                   "F8_E5M2)"},
    {KEY_BPW, "bpw", "X", "v2: rate-controlled quadtree at X bits per weight (default 4.5)"},
    {KEY_POLICY, "policy", "P", "v2 split policy: rate (default) or threshold (the spec's)"},
    {KEY_THRESHOLD, "threshold", "T", "threshold policy: scale of the split thresholds (default 1)"},
    {KEY_DELTA, "delta", "D", "reference mode choice: T158 preference (default 0.10)"},
    {KEY_FIT, "fit", "best|fast|reference", "leaf fitting: best (the default), fast (the faster "
                                            "preset, slightly larger errors) or reference (the "
                                            "spec's)"},
    {KEY_METRIC, "metric", "sse|row", "v2 rate policy: what rate control and the fits minimize: "
                                      "sse (squared error, the default) or row (each output "
                                      "row's error relative to its norm)"},
    {KEY_IMPORTANCE, "importance", "FILE", "whole models: importance vectors and input "
                                           "Hessians (a safetensors file: NAME per column, "
                                           "NAME:rows per row, NAME:hessian; encoder.md)"},
    {KEY_RATES, "rates", "auto|uniform|sensitivity",
     "whole models: the bits spread by sensitivity (needs --importance), each tensor at its "
     "own target (uniform), or auto (the default): by sensitivity with --importance"},
    {KEY_EMBEDDINGS, "embeddings", "quantize|skip", "whole models: embeddings and lm_head "
                                                    "(default quantize)"},
    {KEY_STRICT, "strict", NULL, "also fail on reserved T158 symbols (0b11, decoded as 0)"},
    {KEY_AGAINST, "against", "REF", "error statistics against the original weights REF"},
    {KEY_GOLDEN, "golden", "DIR", "run the golden set DIR/manifest.json, one line per vector"},
    {KEY_ONLY, "only", "NAME", "with --golden: run only the vector NAME"},
    {KEY_JSON, "json", NULL, "machine-readable output (one JSON object)"},
    {KEY_MAP, "map", "OUT.png", "draw the leaf map (one pixel per 4x4 cell; man sgfp4); "
                                "needs libpng"},
    {KEY_DEVICES, "devices", NULL, "list the Vulkan devices and their exactness features"},
    {KEY_BATCH, "batch", "B", "--op matvec: the batched Class A arm (default 4), with "
                              "--backend vulkan the batch 1..16 (default: 1 and 4)"},
    {KEY_X, "x", "FILE", "activations X: a .npy of [N][I] or [I] values (float32 or float16), "
                         "or raw little-endian float32 [N][I]"},
    {KEY_CLASS, "class", "a|b", "a: integer activations, quantized per 64 columns (default); b: "
                                "float activations as they are (matvec.md)"},
    {KEY_FAST, "fast", NULL, "the fast products of DECISIONS D9 (--backend vulkan only): "
                             "summed in binary32 with fused multiply-adds, within a stated "
                             "bound of the exact D8 result, not bit-exact (matvec.md)"},
    {KEY_FORCE, "force", NULL, "replace an existing output file (keeping its permissions), and "
                               "write binary output to a terminal"},
    {KEY_IGNORE_TOTAL_SIZE, "ignore-total-size", NULL, "sharded sets: accept an index whose "
                                                       "metadata.total_size differs from the "
                                                       "shards' data bytes"},
    {KEY_MAX_HEADER_BYTES, "max-header-bytes", "SIZE", "largest safetensors header or index; a "
                                                       "set's index and headers count together "
                                                       "(default 100MB)"},
    {KEY_MAX_TENSORS, "max-tensors", "N", "most tensors a model lists, a set's all shards together "
                                          "(default 1000000)"},
    {KEY_MAX_ZSTD_RATIO, "max-zstd-ratio", "N", "a .zst input may inflate to N times its size "
                                                "(default 100; 64MiB always allowed)"},
    {KEY_MAX_TEMP_SPACE, "max-temp-space", "PERCENT", "a .zst input's decompressed copy (a set's "
                                                      "all together) may take PERCENT of the free "
                                                      "space in $TMPDIR, 1..100 (default 90)"},
    {KEY_MAX_DECOMPRESSED, "max-decompressed", "SIZE", "most bytes .zst inputs decompress to, a "
                                                       "set's all together (default 1TiB)"},
    {KEY_MAX_OUTPUT_ELEMENTS, "max-output-elements", "N", "most elements a quantized model's "
                                                          "tensors decode to, all together "
                                                          "(default 64 per container byte)"},
    {KEY_QUIET, "quiet", NULL, "quiet: errors only (no summary, no progress bar)"},
    {KEY_VERBOSE, "verbose", NULL, "verbose: also say what was decided and how long it took"},
    {KEY_HELP, "help", NULL, "this help"},
};
#define SPEC_COUNT (sizeof specs / sizeof specs[0])
static const int always[] = {KEY_QUIET, KEY_VERBOSE, KEY_HELP};
/* The limits on model inputs: taken by every command that opens models (those that take
 * --ignore-total-size), listed in their --help after their own options. */
static const int model_limits[] = {KEY_MAX_HEADER_BYTES, KEY_MAX_TENSORS, KEY_MAX_ZSTD_RATIO,
                                   KEY_MAX_TEMP_SPACE, KEY_MAX_DECOMPRESSED};
#define MODEL_LIMIT_COUNT (sizeof model_limits / sizeof model_limits[0])

#if !SGFP4_CLI_BENCH /* a tool without the benchmarks: no options of theirs */
const cli_option_spec cli_bench_specs[1] = {{0, NULL, NULL, NULL}};
const size_t cli_bench_spec_count = 0;
const char *cli_bench_take(cli_args *a, int key, const char *value)
{
    (void)a, (void)key, (void)value;
    return NULL;
}
void cli_bench_defaults(cli_args *a) { (void)a; }
#endif
#define ALL_SPECS (SPEC_COUNT + CLI_BENCH_SPECS_MAX)

/* The k-th of every option, the tool's then the benchmarks'. */
static const option_spec *spec_at(size_t k)
{
    return k < SPEC_COUNT ? &specs[k] : &cli_bench_specs[k - SPEC_COUNT];
}

static const option_spec *spec_of(int key)
{
    for (size_t k = 0; k < SPEC_COUNT + cli_bench_spec_count; k++)
        if (spec_at(k)->key == key)
            return spec_at(k);
    return NULL;
}

static bool own_option(const cli_command *c, int key)
{
    for (const cli_accept *a = c->options; a->key; a++)
        if (a->key == key)
            return true;
    return false;
}

static bool opens_models(const cli_command *c) { return own_option(c, KEY_IGNORE_TOTAL_SIZE); }

static bool is_model_limit(int key)
{
    for (size_t k = 0; k < MODEL_LIMIT_COUNT; k++)
        if (model_limits[k] == key)
            return true;
    return false;
}

static bool accepts(const cli_command *c, int key)
{
    return own_option(c, key) || (opens_models(c) && is_model_limit(key)) ||
           key == KEY_QUIET || key == KEY_VERBOSE || key == KEY_HELP;
}

/* "  -o, --output OUT    help text", the help wrapped at word boundaries to 100 columns; an
 * option whose name and values do not fit the left column gets its help on the next lines. */
static void print_option(FILE *f, const option_spec *s, const char *help)
{
    enum { LEFT = 30, WIDTH = 100 };
    char left[96];
    snprintf(left, sizeof left, "%s%c%s--%s%s%s", s->key < 256 ? "-" : " ",
             s->key < 256 ? s->key : ' ', s->key < 256 ? ", " : "  ", s->name,
             s->arg ? " " : "", s->arg ? s->arg : "");
    if (strlen(left) > LEFT - 2)
        fprintf(f, "  %s\n%*s", left, LEFT, "");
    else
        fprintf(f, "  %-*s", LEFT - 2, left);
    const char *text = help ? help : s->help;
    int column = LEFT;
    while (*text) {
        const size_t word = strcspn(text, " ");
        if (column > LEFT && column + 1 + (int)word > WIDTH) {
            fprintf(f, "\n%*s", LEFT, "");
            column = LEFT;
        }
        fprintf(f, " %.*s", (int)word, text);
        column += 1 + (int)word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

void cli_print_help(const cli_command *c, FILE *f)
{
    fputs(c->usage, f);
    fputc('\n', f);
    for (const cli_accept *a = c->options; a->key; a++)
        print_option(f, spec_of(a->key), a->help);
    for (size_t k = 0; opens_models(c) && k < MODEL_LIMIT_COUNT; k++)
        print_option(f, spec_of(model_limits[k]), NULL);
    for (size_t k = 0; k < sizeof always / sizeof always[0]; k++)
        print_option(f, spec_of(always[k]), NULL);
}


/* Stores the value of option `key`; returns NULL, or what is wrong with the value. */
static const char *take(cli_args *a, int key, const char *v)
{
    double *real = key == KEY_BPW ? &a->bpw : key == KEY_THRESHOLD ? &a->threshold : &a->delta;
    switch (key) {
    case KEY_OUTPUT: a->out = v; return NULL;
    case KEY_TENSOR: a->tensor = v; return NULL;
    case KEY_POLICY: a->policy = v; return NULL;
    case KEY_AGAINST: a->against = v; return NULL;
    case KEY_GOLDEN: a->golden = v; return NULL;
    case KEY_ONLY: a->only = v; return NULL;
    case KEY_MAP: a->map = v; return NULL;
    case KEY_X: a->x = v; return NULL;
    case KEY_CLASS:
        a->class_b = strcmp(v, "b") == 0;
        return a->class_b || strcmp(v, "a") == 0 ? NULL : "wants a or b";
    case KEY_QUIET: cli_verbosity = 0; return NULL;
    case KEY_VERBOSE: cli_verbosity = 2; return NULL;
    case KEY_SHAPE:
        return cli_parse_shape(v, &a->rows, &a->cols) ? NULL : "wants OxI with O, I >= 1";
    case KEY_PROFILE: return cli_parse_profile(v, &a->profile) ? NULL : "wants v1 or v2";
    case KEY_DTYPE: return cli_parse_dtype(v, &a->dtype) ? NULL : "wants f32, f16 or bf16";
    case KEY_BACKEND:
        a->vulkan = strcmp(v, "vulkan") == 0;
        return a->vulkan || cli_parse_backend(v, &a->backend)
                   ? NULL
                   : "wants auto, cpu, scalar, generic, avx2, avx512, neon or vulkan";
    case KEY_STORE:
        return cli_parse_store(v, &a->store) ? NULL : "wants auto, cached or streaming";
    case KEY_THREADS:
        if (!cli_parse_uint_in(v, 0, SGFP4_MAX_THREADS, &a->threads))
            return "wants 0..256 (0: every online CPU)";
        a->threads = cli_threads(a->threads);
        return NULL;
    case KEY_ZSTD_LEVEL: {
        unsigned level;
        if (!cli_parse_uint_in(v, 1, 22, &level))
            return "wants 1..22";
        a->zstd_level = (int)level;
        return NULL;
    }
    case KEY_BPW:
        /* the range of policy files too: at most the 32 bits of a float32 */
        return cli_parse_double(v, real) && *real > 0 && *real <= 32 ? NULL
                                                                      : "wants a number in (0, 32]";
    case KEY_THRESHOLD:
        return cli_parse_double(v, real) && *real > 0 ? NULL : "wants a positive number";
    case KEY_DELTA:
        return cli_parse_double(v, real) && *real >= 0 ? NULL : "wants a number >= 0";
    case KEY_FIT: return cli_parse_fit(v, &a->fit) ? NULL : "wants best, fast or reference";
    case KEY_METRIC: return cli_parse_metric(v, &a->metric) ? NULL : "wants sse or row";
    case KEY_IMPORTANCE: a->importance = v; return NULL;
    case KEY_RATES:
        a->rates = strcmp(v, "sensitivity") == 0 ? SGFP4_RATES_SENSITIVITY
                   : strcmp(v, "uniform") == 0   ? SGFP4_RATES_UNIFORM
                                                 : SGFP4_RATES_AUTO;
        return a->rates != SGFP4_RATES_AUTO || strcmp(v, "auto") == 0
                   ? NULL
                   : "wants auto, uniform or sensitivity";
    case KEY_EMBEDDINGS:
        a->quantize_embeddings = strcmp(v, "quantize") == 0;
        return a->quantize_embeddings || strcmp(v, "skip") == 0 ? NULL : "wants quantize or skip";
    case KEY_BATCH:
        return cli_parse_uint_in(v, 1, UINT32_MAX, &a->batch) ? NULL : "wants a number >= 1";
    case KEY_MAX_HEADER_BYTES:
        return cli_parse_size(v, &a->max_header_bytes) && a->max_header_bytes
                   ? NULL : "wants a size >= 1 (bytes; K, M, G, T or KB, MB, GB, TB)";
    case KEY_MAX_TENSORS:
        return cli_parse_size(v, &a->max_tensors) && a->max_tensors ? NULL : "wants a number >= 1";
    case KEY_MAX_ZSTD_RATIO:
        return cli_parse_size(v, &a->max_zstd_ratio) && a->max_zstd_ratio ? NULL
                                                                           : "wants a number >= 1";
    case KEY_MAX_TEMP_SPACE:
        return cli_parse_uint_in(v, 1, 100, &a->max_temp_space) ? NULL
                                                                 : "wants a percentage, 1..100";
    case KEY_MAX_DECOMPRESSED:
        return cli_parse_size(v, &a->max_decompressed) && a->max_decompressed
                   ? NULL : "wants a size >= 1 (bytes; K, M, G, T or KB, MB, GB, TB)";
    case KEY_MAX_OUTPUT_ELEMENTS:
        return cli_parse_size(v, &a->max_output_elements) && a->max_output_elements
                   ? NULL : "wants a number >= 1 (K, M, G, T: powers of 1024)";
    default: /* the benchmarks' options; the flags: args->given says they were there */
        return cli_bench_take(a, key, v);
    }
}

static void defaults(cli_args *a, const char *command)
{
    memset(a, 0, sizeof *a);
    a->command = command;
    a->profile = SGFP4_PROFILE_AUTO;
    a->dtype = SGFP4_DTYPE_F32;
    a->backend = SGFP4_BACKEND_AUTO;
    a->store = SGFP4_STORE_AUTO;
    a->threads = cli_threads(0);
    a->bpw = 4.5;
    a->fit = SGFP4_FIT_BEST;
    a->metric = SGFP4_METRIC_SSE;
    a->quantize_embeddings = true;
    a->zstd_level = 3;
    cli_bench_defaults(a);
}

int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a)
{
    defaults(a, c->name);
    struct option longs[ALL_SPECS + 1];
    /* ':' first: getopt reports a missing value as ':' and prints nothing itself. Options may
     * come before or after the input (GNU getopt permutes); "-" is an input (a stream). */
    char shorts[3 * SPEC_COUNT + 2] = ":";
    size_t n = 0;
    for (size_t k = 0; k < SPEC_COUNT + cli_bench_spec_count && k < ALL_SPECS; k++) {
        const option_spec *s = spec_at(k);
        if (!accepts(c, s->key))
            continue;
        longs[n++] = (struct option){s->name, s->arg ? required_argument : no_argument, NULL,
                                     s->key};
        if (s->key < 256) { /* the benchmarks' options are long ones */
            const size_t at = strlen(shorts);
            shorts[at] = (char)s->key;
            strcpy(shorts + at + 1, s->arg ? ":" : "");
        }
    }
    longs[n] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    optind = 1;
    int key;
    while ((key = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        /* the option at fault: a short one by its letter, a long one by its name */
        char name[64];
        if (optopt > 0 && optopt < 256)
            snprintf(name, sizeof name, "-%c", optopt);
        else if (optopt >= 256 && spec_of(optopt))
            snprintf(name, sizeof name, "--%s", spec_of(optopt)->name);
        else
            snprintf(name, sizeof name, "%s", argv[optind - 1]);
        const char *arg = name;
        if (key == '?')
            return cli_usage_error(c->name, "unknown option %s", arg);
        if (key == ':')
            return cli_usage_error(c->name, "%s needs a value", arg);
        if (key == KEY_HELP) {
            cli_print_help(c, stdout);
            return CLI_EXIT_OK;
        }
        const option_spec *s = spec_of(key);
        const char *why = take(a, key, optarg);
        if (why)
            return cli_usage_error(c->name, "--%s %s", s->name, why);
        a->given[key] = true;
    }
    if (optind < argc)
        a->in = argv[optind++];
    if (optind < argc)
        return cli_usage_error(c->name, "unexpected argument %s", argv[optind]);
    return -1;
}

int cli_reject(const cli_args *a, const char *what, const int *keys)
{
    for (const int *k = keys; *k; k++)
        if (a->given[*k])
            return cli_usage_error(a->command, "--%s does not apply to %s", spec_of(*k)->name,
                                   what);
    return -1;
}
