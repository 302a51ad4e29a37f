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

/* ---- inputs an output must never overwrite ---- */
/* Remembers the file at `path` (its device and inode, through links; "-": standard input
 * when that is a file) as an input of this run. Every output opened later that is the same
 * file is refused. fileio_read() notes its inputs itself; other readers call this. */
void fileio_note_input(const char *path);
/* The noted input that is the file (dev, ino), or NULL. */
const char *fileio_same_input(unsigned long long dev, unsigned long long ino);

/* ---- outputs ---- */
/* A regular file is written crash-safe: into a temporary file in the target's folder,
 * named `.NAME.sgfp4-tmp-XXXXXX` (NAME cut so the whole fits NAME_MAX), flushed, synced
 * and renamed onto the target only when complete. Standard output ("-"), devices, FIFOs,
 * sockets and descriptors (/dev/fd/N, /proc/self/fd/N, /dev/stdout) are written directly,
 * in place (not atomic). A symbolic link is written through: its target is replaced, the
 * link stays. Refused before any work: an output that is the same file as a noted input,
 * a folder, a missing folder, a dangling link, an existing file (unless FILEIO_FORCE), and
 * a terminal (unless FILEIO_FORCE). A replaced file keeps its permissions (and owner, where
 * allowed); a new one gets 0666 less the umask. The temporary files of every open output
 * are removed on SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGXCPU and SIGXFSZ (the
 * process then dies of the signal); a SIGKILL leaves the temporary file, never a partial
 * file under the final name, and the next run over the same output removes it (docs/cli.md,
 * "Outputs"). */
enum { FILEIO_FORCE = 1 };
typedef struct fileio_output {
    FILE *file;
    char *path;        /* as given, for messages */
    char *target;      /* the file replaced: the path, or a symbolic link's target */
    char *tmp_path;    /* the temporary file; NULL for a direct output */
    bool direct;       /* written in place */
    bool replace;      /* the target exists and is replaced (FILEIO_FORCE) */
    bool failed;       /* a write failed: commit will fail */
    int slot;          /* the temporary file's entry in the signal cleanup list */
    int stale_removed; /* leftovers of interrupted runs removed when it was opened */
} fileio_output;
bool fileio_output_open(const char *path, unsigned flags, fileio_output *out, char *err);
bool fileio_output_write(fileio_output *out, const void *data, size_t size);
/* Flushes and syncs: the output is complete in out->tmp_path (or written, for a direct
 * output) and may be checked before the commit. */
bool fileio_output_finish(fileio_output *out, char *err);
/* Finishes, then renames the temporary file onto the target; on failure removes it. */
bool fileio_output_commit(fileio_output *out, char *err);
/* Removes the temporary file (nothing after a commit). */
void fileio_output_abort(fileio_output *out);
/* Whether `path` would be written directly (standard output, a descriptor, an existing
 * device, FIFO or socket) rather than through a temporary file. */
bool fileio_is_direct(const char *path);
/* Holds back the cleanup signals while several outputs are committed one after another
 * (a set: its shards, then its index), so an interrupt cannot fall between them; a signal
 * that came meanwhile is delivered by fileio_commit_end(). */
void fileio_commit_begin(void);
void fileio_commit_end(void);

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

/* ---- model outputs ---- */
typedef struct fileio_model_output {
    fileio_output out;
    sgfp4_zstd_sink *zstd; /* for a .zst path */
    sgfp4_sink sink;       /* where the model writers put bytes */
} fileio_model_output;
bool fileio_model_output_open(const char *path, int zstd_level, unsigned flags,
                              fileio_model_output *mo, char *err);
/* Ends the zstd frame and flushes: the output is complete in the temporary file
 * (mo->out.tmp_path, NULL for standard output), which may be checked before the commit. */
bool fileio_model_output_finish(fileio_model_output *mo, char *err);
bool fileio_model_output_commit(fileio_model_output *mo, char *err);
void fileio_model_output_abort(fileio_model_output *mo);

#endif
