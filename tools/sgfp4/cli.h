/* The `sgfp4` tool: what its commands share. The tool uses only the public API; file formats
 * are in tools/fileio, the benchmarks and the example model in tools/bench. Contract:
 * docs/cli.md.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CLI_H
#define SGFP4_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fileio.h"
#include "sgfp4.h"
#include "sgfp4_experimental.h"
#include "sgfp4_model.h"

/* Exit codes (docs/cli.md): 0 success, 1 failure, 2 usage error. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* ---- messages ---- */
/* -q: 0 (errors only), default 1, -v: 2. */
extern int cli_verbosity;
/* "sgfp4: COMMAND: message" on stderr; returns CLI_EXIT_FAIL. */
int cli_error(const char *command, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* The same, then "(try 'sgfp4 COMMAND --help')"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The message of the last cli_error / cli_usage_error (for verify --json). */
extern char cli_last_error[1024];
/* A warning about a run that may still succeed, said after it when it did ("sgfp4: COMMAND:
 * warning: ..."; not with -q): a failure stays the one line it reports. */
void cli_warn_on_success(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints the warnings cli_warn_on_success() held back, if rc is CLI_EXIT_OK. */
void cli_flush_warnings(int rc);
/* An informational line on stderr, shown with -v only. */
void cli_verbose(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* --json: root on stdout, indented, its keys in the order they were set, then a newline;
 * releases root. */
struct json_t;
void cli_print_json(struct json_t *root);
/* A decode output type's name: "f32", "f16" or "bf16". */
const char *cli_dtype_name(sgfp4_dtype dtype);

/* A tensor's shape as "[d0, d1, ...]" into buf (cut to size). */
void cli_shape_text(char *buf, size_t size, const uint64_t *shape, size_t rank);

/* Why a model cannot come from a pipe, standard input or a device (said when one does). */
extern const char cli_stream_model_message[];

/* ---- options ---- */
/* Every option of every command; short options are their own keys. */
enum cli_key {
    KEY_OUTPUT = 'o', KEY_QUIET = 'q', KEY_VERBOSE = 'v', KEY_HELP = 'h', KEY_FORCE = 'f',
    KEY_SHAPE = 256, KEY_PROFILE, KEY_DTYPE, KEY_BACKEND, KEY_THREADS, KEY_STORE,
    KEY_ZSTD_LEVEL, KEY_TENSOR, KEY_BPW, KEY_POLICY, KEY_THRESHOLD, KEY_DELTA, KEY_FIT,
    KEY_EMBEDDINGS, KEY_STRICT, KEY_AGAINST, KEY_GOLDEN, KEY_ONLY, KEY_JSON, KEY_MAP,
    KEY_DEVICES, KEY_BATCH, KEY_IGNORE_TOTAL_SIZE, KEY_METRIC, KEY_IMPORTANCE, KEY_RATES,
    KEY_X, KEY_CLASS, KEY_FAST,
    /* the options of `bench` and `example` (named, parsed and given their defaults by
     * tools/bench/bench_options.c) */
    KEY_CODES, KEY_SEED, KEY_RUNS, KEY_GATHER_ROWS, KEY_OFFSET, KEY_SIZE, KEY_REPEAT,
    KEY_NO_CHECK, KEY_INTEGER, KEY_LAYERS, KEY_DIM, KEY_FFN, KEY_KV_DIM, KEY_VOCAB, KEY_OP,
    KEY_VARIANT,
    /* the limits on model inputs (cli_limits.c) */
    KEY_MAX_HEADER_BYTES, KEY_MAX_TENSORS, KEY_MAX_ZSTD_RATIO, KEY_MAX_TEMP_SPACE,
    KEY_MAX_DECOMPRESSED, KEY_MAX_OUTPUT_ELEMENTS,
    KEY_END
};

/* The parsed command line: the values of every option (checked, with their defaults when
 * not given) and the one positional argument. */
typedef struct cli_args {
    const char *command;
    const char *in;                 /* the input (or NULL) */
    bool given[KEY_END];            /* which options the command line has */
    const char *out, *tensor, *policy, *against, *golden, *only, *map;
    uint64_t rows, cols;            /* --shape, 0 x 0 when not given */
    sgfp4_profile profile;          /* --profile, AUTO when not given */
    sgfp4_dtype dtype;              /* default f32 */
    sgfp4_backend backend;          /* default AUTO */
    bool vulkan;                    /* --backend vulkan */
    sgfp4_store store;              /* default AUTO */
    unsigned threads;               /* --threads N, or (0, the default) every online CPU */
    double bpw, threshold, delta;
    sgfp4_fit fit;                  /* --fit best|fast|reference */
    sgfp4_error_metric metric;      /* --metric sse|row */
    const char *importance;         /* --importance FILE (whole-model encodes) */
    bool quantize_embeddings;       /* --embeddings quantize|skip */
    sgfp4_model_rates rates;        /* --rates uniform|sensitivity */
    int zstd_level;                 /* default 3 */
    bool random_codes;              /* bench --codes random */
    unsigned seed, runs, gather_rows, offset, size, repeat;
    unsigned layers, dim, ffn, kv_dim, vocab;
    /* bench: the operation (NULL: decode; the CPU's open or matvec, the GPU's matvec or
     * variants); the products' batch (0: the benchmark's default), one decode variant or a
     * list of product variants (NULL: all) */
    const char *op, *variant;
    unsigned batch;
    /* matvec: the activations file (--x) and the class (--class a|b: false = A) */
    const char *x;
    bool class_b;
    /* the limits on model inputs (0: the library's default; docs/cli.md, "Limits") */
    uint64_t max_header_bytes, max_tensors, max_zstd_ratio, max_decompressed,
        max_output_elements;
    unsigned max_temp_space; /* percent */
} cli_args;

/* One option: its key, long name, metavariable (NULL: a flag) and shared --help text. */
typedef struct cli_option_spec {
    int key;
    const char *name, *arg, *help;
} cli_option_spec;
/* The options of the benchmarks and the example model, which tools/bench defines (none in a
 * tool built without them): their specs, how each stores its value, their defaults. */
#define CLI_BENCH_SPECS_MAX 32
extern const cli_option_spec cli_bench_specs[];
extern const size_t cli_bench_spec_count;
/* Stores the value of option `key` (one of cli_bench_specs, or a flag); returns NULL, or
 * what is wrong with the value. */
const char *cli_bench_take(cli_args *a, int key, const char *value);
void cli_bench_defaults(cli_args *a);

/* One option a command takes, with its own --help text where the shared one does not fit. */
typedef struct cli_accept {
    int key;
    const char *help;
} cli_accept;

typedef struct cli_command {
    const char *name;
    const char *summary;       /* one line for `sgfp4 --help` */
    const char *usage;         /* usage lines and description for `sgfp4 CMD --help` */
    const cli_accept *options; /* ends with key 0; -q, -v and -h are always accepted */
    int (*run)(const cli_args *args);
} cli_command;

/* Parses argv (argv[0] = the command name) with getopt_long: "--name value", "--name=value",
 * "-oFILE", "-o FILE", "--" ending the options. Returns -1 when *args is ready, else the exit
 * code (0 after --help, 2 after a usage error, which it reports). */
int cli_parse(const cli_command *command, int argc, char **argv, cli_args *args);
/* `sgfp4 CMD --help` to `f`. */
void cli_print_help(const cli_command *command, FILE *f);
/* A usage error when one of the options in keys (ending with 0) was given: they do not apply
 * to `what` ("whole models", ...). Returns -1 when none was. */
int cli_reject(const cli_args *args, const char *what, const int *keys);

/* ---- values (cli_values.c: no messages, also used by the fuzz target) ---- */
bool cli_parse_shape(const char *text, uint64_t *rows, uint64_t *cols);
bool cli_parse_profile(const char *text, sgfp4_profile *profile);
bool cli_parse_dtype(const char *text, sgfp4_dtype *dtype);
bool cli_parse_backend(const char *text, sgfp4_backend *backend);
bool cli_parse_store(const char *text, sgfp4_store *store);
bool cli_parse_fit(const char *text, sgfp4_fit *fit);
bool cli_parse_metric(const char *text, sgfp4_error_metric *metric);
bool cli_parse_uint(const char *text, unsigned *value);
/* An unsigned value in [lo, hi]. */
bool cli_parse_uint_in(const char *text, unsigned lo, unsigned hi, unsigned *value);
bool cli_parse_double(const char *text, double *value);
/* A count or size: digits, then optionally K, M, G, T (powers of 1024, also KiB ... TiB) or
 * KB, MB, GB, TB (powers of 1000); false on anything else or a value beyond 2^64 - 1. */
bool cli_parse_size(const char *text, uint64_t *value);
bool cli_ends_with(const char *text, const char *suffix);
/* True for .safetensors, .safetensors.zst and .index.json paths (the names of models). */
bool cli_is_model_path(const char *path);
/* A profile's name, "v1" or "v2". */
const char *cli_profile_name(sgfp4_profile profile);
/* The thread count of `--threads N`: N, or for 0 every online CPU (at most the maximum). */
unsigned cli_threads(unsigned requested);
/* Decode options with the backend, threads and store of the command line. */
sgfp4_decode_options cli_decode_options(const cli_args *args);

/* ---- the container prologue of decode, verify, info and bench FILE ---- */
typedef struct cli_container {
    const char *path;
    fileio_input in;
    sgfp4_profile profile; /* resolved: --profile, else the 'SGF4' magic, else the extension */
    sgfp4_tensor *tensor;  /* opened strictly with the shape of --shape */
} cli_container;
/* Reads args->in, resolves its profile and opens it with --shape (required: a usage error
 * without it). Returns -1 when *c is open, else the exit code (the error is reported). */
int cli_container_open(const cli_args *args, cli_container *c);
void cli_container_close(cli_container *c);

/* ---- outputs ---- */
/* Opens an output (fileio.h: every check before any work; -f in the flags); reports the
 * error. With -v, says when leftovers of interrupted runs were removed. */
bool cli_output_open(const cli_args *args, const char *path, fileio_output *out);
/* The same for a model output of `source` (NULL for WRITE): one file, zstd-compressed at
 * --zstd-level for a .zst path, or a sharded set for a path ending in .index.json
 * (sgfp4_model_output_open); every file is checked and opened here. NULL on failure. */
sgfp4_model_output *cli_model_output_open(const cli_args *args, const char *path,
                                          const sgfp4_model *source,
                                          sgfp4_model_output_kind kind);

/* ---- limits on model inputs (cli_limits.c; docs/cli.md, "Limits") ---- */
/* The open options of the command line's limits (the rest default). */
void cli_model_open_options(const cli_args *args, sgfp4_model_open_options *options);
/* A library message for the user of the tool: the option fields it names become the tool's
 * options (--max-...); a LIMIT message that names none gets the option that raises it. */
const char *cli_diag_text(sgfp4_status status, const char *message, char *buf, size_t size);
/* Refuses (reporting, exit 1) a quantized model, or with `only` one tensor of it, whose
 * containers decode to more elements than --max-output-elements (default:
 * SGFP4_MODEL_DECODE_ELEMENTS_PER_BYTE per container byte, as model decode applies);
 * -1 when within. */
int cli_check_output_elements(const cli_args *args, const sgfp4_model *model,
                              const sgfp4_model_tensor *only);

/* ---- whole models ---- */
/* Whether the input is a model, by its content (a safetensors file, a zstd stream, a JSON
 * index: the last two only without --shape, which a container needs), or by its name when
 * it cannot be read (so that its open reports why). */
bool cli_is_model_input(const cli_args *args);
/* Opens a model (a file or a set; --ignore-total-size applies) and notes its files as
 * inputs; "sgfp4: CMD: PATH: message [STATUS]" on failure. */
bool cli_model_open(const cli_args *args, const char *path, sgfp4_model **model);
/* A progress bar on stderr: only on a terminal and without -q, at most 5 redraws a second.
 * Use progress_bar_update as sgfp4_model_write_options.progress with the bar as user. */
typedef struct progress_bar {
    bool enabled;
    const char *label;
    double start, last;
} progress_bar;
void progress_bar_init(progress_bar *bar, const char *label);
void progress_bar_update(void *bar, const sgfp4_model_progress *progress);
void progress_bar_done(progress_bar *bar);

/* ---- commands ---- */
extern const cli_command cli_encode, cli_decode, cli_verify, cli_info, cli_bench, cli_example,
    cli_matvec;
int cmd_encode_model(const cli_args *args);
int cmd_decode_model(const cli_args *args);
/* decode MODEL --tensor NAME, info MODEL --tensor NAME (cmd_model_tensor.c) */
int cmd_decode_model_tensor(const cli_args *args);
int cmd_info_model_tensor(const cli_args *args);
/* The container view of `info` (cmd_info.c), for a file or a model's tensor. */
int cli_info_container(const cli_args *args, const char *name, const sgfp4_tensor *t);
int cmd_verify_model(const cli_args *args);
int cmd_info_model(const cli_args *args);
int cmd_verify_golden(const cli_args *args);
/* The matrix-vector part of --golden (DIR/matvec/manifest.json, when present): runs its
 * vectors (--only, --backend, --threads), prints a line per failure (and per pass without
 * -q), or with `results` (--json) appends {"name": "matvec/NAME", "ok", "error"} to it
 * instead, counts them; returns CLI_EXIT_OK, or the exit code of a manifest it cannot read. */
int cli_golden_matvec(const cli_args *args, size_t *passed, size_t *failed,
                      struct json_t *results);
/* `--against REF` of verify and info: the weights REF (.npy or raw float32 of t's shape),
 * read before anything is printed (NULL when they cannot be read or do not fit: reported);
 * then the error statistics of t against them. */
float *cli_reference_read(const cli_args *args, const sgfp4_tensor *t);
int cli_quality_report(const cli_args *args, const sgfp4_tensor *t, const float *ref);
/* Vulkan (cmd_vulkan.c): `info --devices`, and a whole-tensor decode into host memory. */
int cmd_info_devices(const cli_args *args);
bool cli_vulkan_decode(const char *command, const sgfp4_tensor *t, sgfp4_dtype dtype, void *dst,
                       size_t dst_capacity);
/* y = W x on the GPU for `matvec --backend vulkan` (the same bits as the CPU's): batch
 * vectors x [batch][cols] f32, y [batch][rows], SGFP4_MATVEC_MAX_BATCH vectors a call; Class
 * A quantizes x on the device; fast: the D9 fast products. Reports its error; false on
 * failure. */
bool cli_vulkan_matvec(const char *command, const sgfp4_tensor *t, uint64_t rows, uint64_t cols,
                       bool class_b, bool fast, const float *x, uint64_t batch, float *y);
/* The GPU benchmark (tools/bench; the CPU's: bench_cpu.h). */
int cmd_bench_vulkan(const cli_args *args);
/* The GPU benchmark's other operations (tools/bench/bench_vulkan_*.c): --op variants and
 * matvec. */
int bench_vulkan_variants(const cli_args *args);
int bench_vulkan_matvec(const cli_args *args);

#endif
