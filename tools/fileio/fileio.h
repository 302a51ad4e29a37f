/* The files of the `sgfp4` tool: inputs read whole (mapped when possible), outputs by the
 * library's output rules (a temporary file beside the target, renamed into place only when
 * complete), NumPy .npy, float matrices (.npy or raw float32) and the PNG leaf map. Nothing
 * here prints or exits: a call that fails returns false and writes a one-line message
 * naming the file into err, a buffer of FILEIO_ERROR_SIZE bytes. The tool's commands
 * (tools/sgfp4), benchmarks (tools/bench) and sgfp4-eval share them.
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
/* Reads a whole file ("-" = standard input), mapping regular files. Notes it as an input
 * (fileio_note_input). */
bool fileio_read(const char *path, fileio_input *in, char *err);
void fileio_input_release(fileio_input *in);

/* What a file holds, told by its first bytes (its name does not matter). */
typedef enum fileio_kind {
    FILEIO_KIND_UNREADABLE, /* missing, a folder, or cannot be read */
    FILEIO_KIND_SAFETENSORS,/* an 8-byte header length that fits, then '{' */
    FILEIO_KIND_INDEX,      /* a JSON object (a sharded set's index) */
    FILEIO_KIND_ZSTD,       /* a zstd frame */
    FILEIO_KIND_NPY,        /* NumPy's magic */
    FILEIO_KIND_OTHER       /* anything else: a container or raw floats */
} fileio_kind;
/* Reads the first bytes of `path` and says what it holds; "-" is standard input when it is
 * a regular file (read from its start, without moving its offset), else FILEIO_KIND_OTHER. */
fileio_kind fileio_sniff(const char *path);
/* What the bytes head[0..n) of a file of file_size bytes hold (UINT64_MAX: size unknown). */
fileio_kind fileio_sniff_bytes(const uint8_t *head, size_t n, uint64_t file_size);
/* True for a path (or "-": standard input) that is not a regular file or a folder (a pipe,
 * FIFO, device, socket): bytes that can be read only once, in order. False for a missing
 * path. */
bool fileio_is_stream(const char *path);
/* For a stream: what its first bytes hold, reading (and so consuming) at most 16; for a
 * caller that only reports what the stream is. */
fileio_kind fileio_sniff_stream(const char *path);

/* ---- mapped inputs that shrink while they are read ---- */
/* Installs the SIGBUS handler of the `sgfp4` tool (running `command`): a read past the end
 * of a mapped input that another program truncated then removes the temporary files of
 * every open output, prints one line `sgfp4: COMMAND: PATH: changed while being read ...
 * [IO]` and exits 1, instead of dying of the signal (docs/cli.md, "Inputs that change"). */
void fileio_guard_begin(const char *command);
/* Notes the mapping [begin, begin + size) of the file `path` for that line (begin NULL: a
 * file being opened, whose mapping is not known yet). fileio_read() notes its mappings
 * itself. Nothing happens before fileio_guard_begin(). */
void fileio_guard_input(const char *path, const void *begin, size_t size);

/* ---- inputs an output must never overwrite ---- */
/* Remembers the file at `path` (its device and inode, through links; "-": standard input
 * when that is a file) as an input of this run: every output opened later that is the same
 * file is refused. fileio_read() notes its inputs itself; other readers call this. */
void fileio_note_input(const char *path);
/* The same for every file of an opened model (its file, or a set's index and shards). */
void fileio_note_model(const sgfp4_model *model);

/* ---- outputs ---- */
/* The library's output rules (sgfp4_model.h, "output files"; docs/cli.md, "Outputs"): a
 * regular file is written crash-safe through a temporary file renamed onto it when
 * complete; standard output ("-"), devices, FIFOs, sockets and descriptors in place; a
 * symbolic link through; refused before any work: an output that is one of this run's
 * inputs, a folder, a missing folder, a dangling link, an existing file or a terminal
 * without FILEIO_FORCE (-f). The temporary files are removed on fatal signals once main()
 * asked for it (sgfp4_output_remove_on_signals). */
enum { FILEIO_FORCE = 1 };
/* The library's output options for the tool: flags, this run's inputs, "-f". */
sgfp4_output_options fileio_output_options(unsigned flags);
typedef struct fileio_output {
    sgfp4_output *handle;
    char *path;           /* as given, for messages */
    bool failed;          /* a write failed: the commit fails */
    size_t stale_removed; /* leftovers of interrupted runs removed when it was opened */
} fileio_output;
bool fileio_output_open(const char *path, unsigned flags, fileio_output *out, char *err);
bool fileio_output_write(fileio_output *out, const void *data, size_t size);
/* Renames the complete output into place (on failure the temporary file is removed), and
 * releases it. */
bool fileio_output_commit(fileio_output *out, char *err);
/* Removes the temporary file (nothing after a commit) and releases the output. */
void fileio_output_abort(fileio_output *out);

/* ---- NumPy .npy (version 1.0 written; 1.0, 2.0, 3.0 read) ---- */
bool fileio_is_npy(const uint8_t *data, size_t size);
/* Writes the header of a C-order array of dtype `descr` ("<f4", "<f2", "<i8", ...) and
 * shape[0..rank) (rank 0..16; rank 0 is a scalar). */
bool fileio_npy_write_header(fileio_output *out, const char *descr, const uint64_t *shape,
                             size_t rank);
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
/* Draws the leaves of an opened tensor, one pixel per 4x4 cell, as a PNG into `out` (opened
 * by the caller, who commits or aborts it). */
bool fileio_leaf_map(const sgfp4_tensor *t, fileio_output *out, char *err);
/* False when this build has no libpng (then fileio_leaf_map() only reports that). */
bool fileio_leaf_map_available(void);

#endif
