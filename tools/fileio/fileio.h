/* The files of the `sgfp4` tool: inputs read whole (mapped when possible), outputs written
 * crash-safe (a temporary file beside the target, renamed into place only when complete),
 * NumPy .npy, float matrices (.npy or raw float32), the PNG leaf map, and model outputs
 * (crash-safe, zstd-compressed for .zst). Nothing here prints or exits: a call that fails
 * returns false and writes a one-line message naming the file into err, a buffer of
 * FILEIO_ERROR_SIZE bytes. The tool's commands (tools/sgfp4) and benchmarks (tools/bench)
 * share them; the library knows none of these formats.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_FILEIO_H
#define SGFP4_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sgfp4.h"
#include "sgfp4_model.h"

#define FILEIO_ERROR_SIZE 512

/* ---- inputs ---- */
typedef struct fileio_input {
    const uint8_t *data;
    size_t size;
    void *mapping;  /* non-NULL when mapped */
    uint8_t *owned; /* non-NULL when read into memory */
} fileio_input;
/* Reads a whole file ("-" = standard input), mapping regular files. */
bool fileio_read(const char *path, fileio_input *in, char *err);
void fileio_input_release(fileio_input *in);

/* ---- crash-safe outputs ---- */
typedef struct fileio_output {
    FILE *file;
    char *path;     /* the final path */
    char *tmp_path; /* the temporary file, NULL for standard output */
    bool failed;    /* a write failed: commit will fail */
} fileio_output;
/* Opens `.NAME.tmp-XXXXXX` beside `path` ("-": standard output, refused on a terminal). */
bool fileio_output_open(const char *path, fileio_output *out, char *err);
bool fileio_output_write(fileio_output *out, const void *data, size_t size);
/* Flushes, syncs and renames onto the path; on failure removes the temporary file. */
bool fileio_output_commit(fileio_output *out, char *err);
/* Removes the temporary file (nothing after a commit). */
void fileio_output_abort(fileio_output *out);

/* ---- NumPy .npy (version 1.0 written; 1.0, 2.0, 3.0 read) ---- */
bool fileio_is_npy(const uint8_t *data, size_t size);
/* Writes the header of a C-order 2-D array of dtype `descr` ("<f4", "<f2"). */
bool fileio_npy_write_header(fileio_output *out, const char *descr, uint64_t rows,
                             uint64_t cols);
/* Parses a header: dtype into descr[8], the shape (1-D arrays as 1 x N), the data offset.
 * C-order 1-D or 2-D arrays only; false with *error set otherwise. */
bool fileio_npy_parse(const uint8_t *data, size_t size, char descr[8], uint64_t *rows,
                      uint64_t *cols, size_t *data_offset, const char **error);

/* ---- float matrices ---- */
/* The row-major float32 matrix of an input: a .npy of dtype <f4 or <f2 (its shape; a
 * *rows x *cols given must match), or raw little-endian float32 of shape *rows x *cols
 * (required). Returns a malloc'ed buffer, or NULL. */
float *fileio_matrix(const fileio_input *in, const char *path, uint64_t *rows, uint64_t *cols,
                     char *err);

/* ---- the leaf map (docs/cli.md, "Leaf map") ---- */
/* Draws the leaves of an opened tensor, one pixel per 4x4 cell, into a PNG at png_path. */
bool fileio_leaf_map(const sgfp4_tensor *t, const char *png_path, char *err);

/* ---- model outputs ---- */
typedef struct fileio_model_output {
    fileio_output out;
    sgfp4_zstd_sink *zstd; /* for a .zst path */
    sgfp4_sink sink;       /* where the model writers put bytes */
} fileio_model_output;
bool fileio_model_output_open(const char *path, int zstd_level, fileio_model_output *mo,
                              char *err);
/* Ends the zstd frame and flushes: the output is complete in the temporary file
 * (mo->out.tmp_path, NULL for standard output), which may be checked before the commit. */
bool fileio_model_output_finish(fileio_model_output *mo, char *err);
bool fileio_model_output_commit(fileio_model_output *mo, char *err);
void fileio_model_output_abort(fileio_model_output *mo);

#endif
