/* Shared pieces of the `sgfp4` command-line tool. The tool uses only the public API.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CLI_H
#define SGFP4_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sgfp4.h"
#include "sgfp4_experimental.h"

/* Exit codes (docs/cli.md). */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* ---- messages ---- */
/* Prints "sgfp4: <command>: <message>" on stderr as one line. Returns CLI_EXIT_FAIL. */
int cli_error(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Like cli_error, then "try 'sgfp4 <command> --help'"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Quiet mode (-q) suppresses informational output on stderr. */
extern bool cli_quiet;

/* ---- argument parsing ---- */
/* A tiny long-option scanner: argv[*i] is "--name" or "--name=value". If it matches `name`,
 * stores the value (next argument or after '=') in *value, advances *i and returns true.
 * Exits through *error (set to a message) when the value is missing. */
bool cli_take_option(int argc, char **argv, int *i, const char *name, const char **value,
                     const char **error);
bool cli_parse_shape(const char *text, uint64_t *rows, uint64_t *cols);
bool cli_parse_profile(const char *text, sgfp4_profile *profile);
bool cli_parse_dtype(const char *text, sgfp4_dtype *dtype);
/* The CPU decode backends ("vulkan" is handled by the commands that offer it). */
#define CLI_CPU_BACKENDS "auto, cpu, scalar, generic, avx2, avx512 or neon"
bool cli_parse_backend(const char *text, sgfp4_backend *backend);
/* How decode writes its output: auto, cached, streaming. */
bool cli_parse_store(const char *text, sgfp4_store *store);
bool cli_parse_uint(const char *text, unsigned *value);
bool cli_parse_double(const char *text, double *value);
/* The thread count of `--threads N`: N, or for 0 (the default) every online CPU. */
unsigned cli_threads(unsigned requested);
bool cli_ends_with(const char *text, const char *suffix);
/* True for .safetensors and .safetensors.zst paths (whole-model commands). */
bool cli_is_model_path(const char *path);

/* ---- input ---- */
typedef struct cli_input {
    const uint8_t *data;
    size_t size;
    void *mapping;   /* non-NULL when mmap'ed */
    uint8_t *owned;  /* non-NULL when read into memory */
} cli_input;
/* Reads a whole file ("-" = stdin), mapping it when possible. Prints the error itself. */
bool cli_read_input(const char *command, const char *path, cli_input *in);
void cli_input_release(cli_input *in);

/* Chooses the profile of a container: an explicit --profile wins; else the 'SGF4' magic
 * means v2; else the .fp4 extension means v1 and .sgfp4 means v2. Returns false (and
 * prints why) when it cannot tell. */
bool cli_resolve_profile(const char *command, const char *path, const cli_input *in,
                         bool explicit_given, sgfp4_profile explicit_profile,
                         sgfp4_profile *profile);
/* Opens a container with the CLI's usual error reporting (prints the diag). */
bool cli_open_tensor(const char *command, const char *path, const cli_input *in,
                     sgfp4_profile profile, uint64_t rows, uint64_t cols, sgfp4_tensor **t);

/* ---- output ---- */
/* An output written to a temporary file beside the target and renamed into place only by
 * cli_output_commit(); "-" writes to stdout directly. */
typedef struct cli_output {
    FILE *file;
    char *path;      /* final path */
    char *tmp_path;  /* temporary path, NULL for stdout */
    bool failed;
} cli_output;
bool cli_output_open(const char *command, const char *path, cli_output *out);
bool cli_output_write(cli_output *out, const void *data, size_t size);
/* Flushes, syncs and renames. On failure removes the temporary file. */
bool cli_output_commit(const char *command, cli_output *out);
/* Removes the temporary file (no-op after commit). */
void cli_output_abort(cli_output *out);

/* ---- formats ---- */
/* Writes a NumPy .npy v1.0 header for a C-order 2-D array of dtype ("<f4", "<f2"). */
bool cli_npy_write_header(cli_output *out, const char *descr, uint64_t rows, uint64_t cols);
/* Parses a .npy header: dtype descr into descr[8], shape, offset of the data. 2-D (or 1-D,
 * as 1xN) C-order arrays only. Returns false with *error set. */
bool cli_npy_parse(const uint8_t *data, size_t size, char descr[8], uint64_t *rows,
                   uint64_t *cols, size_t *data_offset, const char **error);

/* sha256 of bytes as 64 lowercase hex digits + NUL. */
void cli_sha256_hex(const void *data, size_t size, char hex[65]);

/* ---- commands ---- */
int cmd_decode(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* GPU form of bench (cmd_bench_vulkan.c), entered by cmd_bench for --backend vulkan. */
int cmd_bench_vulkan(int argc, char **argv);
/* Vulkan helpers (cmd_devices.c): `info --devices`, and a whole-tensor GPU decode into
 * host memory (prints its own error). */
int cmd_info_devices(bool as_json);
bool cli_vulkan_decode(const char *command, const sgfp4_tensor *t, sgfp4_dtype dtype,
                       void *dst, size_t dst_capacity);
/* Whole-model forms (cmd_model.c), entered when the input is a safetensors file. */
int cmd_model_encode(int argc, char **argv);
int cmd_model_decode(int argc, char **argv);
int cmd_model_verify(int argc, char **argv);
int cmd_model_info(int argc, char **argv);
/* The built-in synthetic example model (cmd_example.c). */
int cmd_example(int argc, char **argv);
/* The first argument after the command that is not an option or an option's value
 * (options listed in `valued` take a value). NULL if none. */
const char *cli_first_positional(int argc, char **argv, const char *const *valued);

#endif
