/* Pieces shared by the whole-model commands (cmd_model*.c, cmd_example.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_CLI_H
#define SGFP4_MODEL_CLI_H

#include "cli.h"
#include "sgfp4_model.h"

/* Opens a model, printing "sgfp4: CMD: PATH: message [STATUS]" on failure. */
bool model_cli_open(const char *cmd, const char *path, sgfp4_model **model);

/* An output model file: a crash-safe cli_output, zstd-compressed when the path ends in .zst. */
typedef struct model_output {
    cli_output out;
    sgfp4_zstd_sink *zstd;
    sgfp4_sink sink;       /* where writers put bytes */
} model_output;
bool model_output_open(const char *cmd, const char *path, int zstd_level, unsigned threads,
                       model_output *mo);
/* Ends the zstd frame and flushes; the file is still the temporary one (see commit). */
bool model_output_finish(const char *cmd, model_output *mo);
/* The temporary file's path (NULL for stdout), to re-read it before committing. */
const char *model_output_temp_path(const model_output *mo);
bool model_output_commit(const char *cmd, model_output *mo);
void model_output_abort(model_output *mo);

/* A progress bar on stderr: only when stderr is a terminal and -q was not given; at most
 * about 5 redraws a second. Pass as sgfp4_model_write_options.progress with a bar as user. */
typedef struct progress_bar {
    bool enabled;
    const char *label;
    double start, last;
} progress_bar;
void progress_bar_init(progress_bar *bar, const char *label);
void progress_bar_update(void *bar, const sgfp4_model_progress *p);
/* Clears the line (if one was drawn). */
void progress_bar_done(progress_bar *bar);

/* "[a, b, c]" into buf. */
void model_cli_shape(char *buf, size_t size, const uint64_t *shape, size_t rank);

#endif
