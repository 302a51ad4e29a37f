/* Model outputs (sgfp4_model.h, "model outputs"): where a model job writes, one file (one
 * zstd frame for a .zst name) or a sharded set (a name ending in .index.json), with every
 * file opened through the output rules (output_file.c) before any work, each checked once
 * complete (model_output_check.c), and all put in place together at the commit: a set's
 * shards first, its index last.
 * SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/options.h"
#include "model/model_internal.h"
#include "model/model_output_check.h"
#include "model/output_internal.h"

/* A sink that refuses every write once the output is cancelled, else passes it on. */
typedef struct guard {
    sgfp4_model_output *mo;
    sgfp4_sink inner;
} guard;

enum { STATE_OPEN, STATE_WRITTEN, STATE_FAILED, STATE_COMMITTED };

struct sgfp4_model_output {
    sgfp4_model_output_kind kind;
    const sgfp4_model *source;
    bool set;
    size_t files;          /* 1, or a set's shards and its index (last) */
    char **names;          /* a set: the files' names in the index's folder */
    char **paths;          /* every file's path */
    sgfp4_output **outs;
    guard *guards;         /* one per file */
    sgfp4_zstd_sink *zstd; /* one file named .zst */
    atomic_int cancelled;
    int state;
    size_t stale;
};

static bool ends_with(const char *text, const char *suffix)
{
    const size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

static sgfp4_status guard_write(void *user, const void *data, size_t size)
{
    const guard *g = user;
    if (atomic_load(&g->mo->cancelled))
        return SGFP4_ERR_IO;
    return g->inner.write(g->inner.user, data, size);
}

static sgfp4_sink guarded(sgfp4_model_output *mo, size_t file)
{
    return (sgfp4_sink){guard_write, &mo->guards[file]};
}

/* ---- the files' names ---- */

/* An encode or decode set's output shard for the source shard `source`: encode
 * NAME.safetensors -> NAME.sgfp4.safetensors, decode the reverse (another name is kept,
 * with .sgfp4.safetensors appended for encode); a .zst ending is dropped. */
static char *job_shard_name(const char *source, bool encode)
{
    size_t len = strlen(source);
    if (len > 4 && strcmp(source + len - 4, ".zst") == 0)
        len -= 4;
    static const char plain[] = ".safetensors", quantized[] = ".sgfp4.safetensors";
    const size_t np = sizeof plain - 1, nq = sizeof quantized - 1;
    const bool is_q = len >= nq && strncmp(source + len - nq, quantized, nq) == 0;
    const bool is_p = len >= np && strncmp(source + len - np, plain, np) == 0;
    const size_t keep = encode ? (is_p ? len - np : len)
                               : (is_q ? len - nq : is_p ? len - np : len);
    const char *tail = encode ? quantized : is_q || is_p ? plain : "";
    char *name = malloc(keep + strlen(tail) + 1);
    if (name)
        sprintf(name, "%.*s%s", (int)keep, source, tail);
    return name;
}

/* A WRITE set's one shard: the index's name without .index.json, ending in .safetensors. */
static char *write_shard_name(const char *index)
{
    const size_t keep = strlen(index) - strlen(".index.json");
    const char *tail = keep >= 12 && strncmp(index + keep - 12, ".safetensors", 12) == 0
                           ? ""
                           : ".safetensors";
    char *name = malloc(keep + strlen(tail) + 1);
    if (name)
        sprintf(name, "%.*s%s", (int)keep, index, tail);
    return name;
}

/* The name of source shard k (a single file: its own name). */
static const char *source_name(const sgfp4_model *source, size_t k)
{
    const char *name = sgfp4_model_shard_name(source, k);
    if (name)
        return name;
    const char *path = source->file_path;
    if (!path)
        return "model.safetensors";
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Fills mo->names and mo->paths; the index's folder is path[0..dir). */
static sgfp4_status name_set(sgfp4_model_output *mo, const char *path, sgfp4_diag *diag)
{
    const char *slash = strrchr(path, '/');
    const size_t dir = slash ? (size_t)(slash - path + 1) : 0;
    const size_t shards = mo->files - 1;
    for (size_t k = 0; k < mo->files; k++) {
        if (k == shards)
            mo->names[k] = strdup(path + dir);
        else if (mo->kind == SGFP4_MODEL_OUTPUT_WRITE)
            mo->names[k] = write_shard_name(path + dir);
        else
            mo->names[k] = job_shard_name(source_name(mo->source, k),
                                          mo->kind == SGFP4_MODEL_OUTPUT_ENCODE);
        mo->paths[k] = mo->names[k] ? malloc(dir + strlen(mo->names[k]) + 1) : NULL;
        if (!mo->paths[k])
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        sprintf(mo->paths[k], "%.*s%s", (int)dir, path, mo->names[k]);
        for (size_t j = 0; j < k; j++)
            if (strcmp(mo->names[j], mo->names[k]) == 0) {
                char shown[SGFP4_SHOWN_SIZE];
                return sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1,
                                  "%s: two files of the set would have this name",
                                  sgfp4_path_shown(mo->paths[k], shown));
            }
    }
    return SGFP4_OK;
}

/* ---- opening ---- */

static sgfp4_status open_files(sgfp4_model_output *mo, const char *path,
                               const sgfp4_output_options *given, sgfp4_diag *diag)
{
    sgfp4_output_options o;
    if (SGFP4_OPTIONS_READ(sgfp4_output_options, given, &o) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_output_options_init)",
                          given->struct_size);
    /* the caller's inputs and the source's files */
    sgfp4_inputs *inputs = NULL;
    sgfp4_status s = sgfp4_inputs_create(&inputs);
    if (s == SGFP4_OK)
        s = sgfp4_inputs_add_all(inputs, o.inputs);
    if (s == SGFP4_OK && mo->source)
        s = sgfp4_inputs_add_model(inputs, mo->source);
    if (s != SGFP4_OK) {
        sgfp4_inputs_free(inputs);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    o.inputs = inputs;
    for (size_t k = 0; s == SGFP4_OK && k < mo->files; k++) {
        s = sgfp4_output_open(mo->paths[k], &o, &mo->outs[k], diag);
        if (s == SGFP4_OK) {
            mo->stale += sgfp4_output_leftovers_removed(mo->outs[k]);
            mo->guards[k] = (guard){mo, sgfp4_output_sink(mo->outs[k])};
        }
    }
    sgfp4_inputs_free(inputs);
    if (s == SGFP4_OK && !mo->set && ends_with(path, ".zst")) {
        const sgfp4_sink file = mo->guards[0].inner;
        if (sgfp4_zstd_sink_begin(&file, o.zstd_level, o.zstd_threads, &mo->zstd) != SGFP4_OK)
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                              "cannot start zstd compression (level %d, %u threads)",
                              o.zstd_level, o.zstd_threads);
        mo->guards[0].inner = sgfp4_zstd_sink_get(mo->zstd);
    }
    return s;
}

sgfp4_status sgfp4_model_output_open(const char *path, const sgfp4_model *source,
                                     sgfp4_model_output_kind kind,
                                     const sgfp4_output_options *options,
                                     sgfp4_model_output **out, sgfp4_diag *diag)
{
    if (!path || !out)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    if (kind != SGFP4_MODEL_OUTPUT_ENCODE && kind != SGFP4_MODEL_OUTPUT_DECODE &&
        kind != SGFP4_MODEL_OUTPUT_WRITE)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "unknown model output kind %d",
                          (int)kind);
    if ((kind == SGFP4_MODEL_OUTPUT_WRITE) != !source)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          kind == SGFP4_MODEL_OUTPUT_WRITE ? "a WRITE output takes no source"
                                                           : "no source model");
    sgfp4_model_output *mo = calloc(1, sizeof *mo);
    if (!mo)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    mo->kind = kind;
    mo->source = source;
    mo->set = ends_with(path, ".index.json");
    mo->files = !mo->set ? 1 : kind == SGFP4_MODEL_OUTPUT_WRITE ? 2
                                                                : sgfp4_model_shard_count(source) + 1;
    mo->names = calloc(mo->files, sizeof *mo->names);
    mo->paths = calloc(mo->files, sizeof *mo->paths);
    mo->outs = calloc(mo->files, sizeof *mo->outs);
    mo->guards = calloc(mo->files, sizeof *mo->guards);
    sgfp4_status s = SGFP4_OK;
    if (!mo->names || !mo->paths || !mo->outs || !mo->guards)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    else if (mo->set)
        s = name_set(mo, path, diag);
    else if (!(mo->paths[0] = strdup(path)))
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    if (s == SGFP4_OK)
        s = open_files(mo, path, options, diag);
    if (s != SGFP4_OK) {
        sgfp4_model_output_close(mo);
        return s;
    }
    *out = mo;
    return SGFP4_OK;
}

/* ---- the jobs ---- */

typedef sgfp4_status (*file_check)(const char *path, const char *shown, const sgfp4_model *src,
                                   sgfp4_diag *diag);

/* File `file` is complete: flushed, synced and, when it was written to a temporary file,
 * checked against `src` (its source shard). */
static sgfp4_status file_done(sgfp4_model_output *mo, size_t file, file_check check,
                              const sgfp4_model *src, sgfp4_diag *diag)
{
    char shown[SGFP4_SHOWN_SIZE];
    sgfp4_path_shown(mo->paths[file], shown);
    if (mo->zstd && sgfp4_zstd_sink_finish(mo->zstd) != SGFP4_OK &&
        !sgfp4_output_error(mo->outs[file]))
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: zstd compression failed", shown);
    sgfp4_status s = sgfp4_output_finish(mo->outs[file], diag);
    const char *tmp = sgfp4_output_temp_path(mo->outs[file]);
    if (s == SGFP4_OK && tmp && check)
        s = check(tmp, shown, src, diag);
    return s;
}

/* A failed job's status, said in terms of the output when the output was why: cancelled,
 * or a write that failed (its errno). */
static sgfp4_status explain(sgfp4_model_output *mo, sgfp4_status s, sgfp4_diag *diag)
{
    char shown[SGFP4_SHOWN_SIZE];
    if (atomic_load(&mo->cancelled))
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "%s: cancelled",
                          sgfp4_path_shown(mo->paths[mo->files - 1], shown));
    for (size_t k = 0; k < mo->files; k++)
        if (sgfp4_output_error(mo->outs[k]))
            return sgfp4_output_finish(mo->outs[k], diag);
    return s;
}

typedef struct set_job {
    sgfp4_model_output *mo;
    file_check check;
} set_job;

static sgfp4_status set_open(void *user, size_t file, const char *name, sgfp4_sink *sink,
                             sgfp4_diag *diag)
{
    sgfp4_model_output *mo = ((set_job *)user)->mo;
    if (file >= mo->files || strcmp(name, mo->names[file]) != 0)
        return sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1,
                          "internal error: unexpected output '%.80s'", name);
    *sink = guarded(mo, file);
    return SGFP4_OK;
}

/* A complete shard is checked against its source shard at once (a failure stops the job). */
static sgfp4_status set_close(void *user, size_t file, sgfp4_status status, sgfp4_diag *diag)
{
    const set_job *j = user;
    if (status != SGFP4_OK)
        return SGFP4_OK; /* the job fails: its files are removed when the output is closed */
    sgfp4_model_output *mo = j->mo;
    const bool shard = file + 1 < mo->files;
    return file_done(mo, file, shard ? j->check : NULL,
                     shard ? sgfp4_model_shard(mo->source, file) : NULL, diag);
}

static sgfp4_status run(sgfp4_model_output *mo, const sgfp4_model_policy *policy,
                        const sgfp4_model_write_options *options, sgfp4_diag *diag)
{
    const bool encode = mo->kind == SGFP4_MODEL_OUTPUT_ENCODE;
    const file_check check = encode ? sgfp4_model_check_encoded : sgfp4_model_check_decoded;
    sgfp4_status s;
    if (mo->set) {
        set_job j = {mo, check};
        const sgfp4_model_set_sinks sinks = {set_open, set_close, &j};
        const size_t n = mo->files - 1;
        s = encode ? sgfp4_model_encode_set(mo->source, policy, (const char *const *)mo->names,
                                            mo->names[n], &sinks, options, diag)
                   : sgfp4_model_decode_set(mo->source, (const char *const *)mo->names,
                                            mo->names[n], &sinks, options, diag);
    } else {
        const sgfp4_sink sink = guarded(mo, 0);
        s = encode ? sgfp4_model_encode(mo->source, policy, &sink, options, diag)
                   : sgfp4_model_decode(mo->source, &sink, options, diag);
        if (s == SGFP4_OK)
            s = file_done(mo, 0, check, mo->source, diag);
    }
    if (s != SGFP4_OK)
        s = explain(mo, s, diag);
    mo->state = s == SGFP4_OK ? STATE_WRITTEN : STATE_FAILED;
    return s;
}

static sgfp4_status check_kind(const sgfp4_model_output *mo, sgfp4_model_output_kind kind,
                               sgfp4_diag *diag)
{
    if (!mo)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL output");
    if (mo->kind != kind)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "the output was opened for another kind of job");
    if (mo->state != STATE_OPEN)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "the output already received a job");
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_output_encode(sgfp4_model_output *mo, const sgfp4_model_policy *policy,
                                       const sgfp4_model_write_options *options,
                                       sgfp4_diag *diag)
{
    const sgfp4_status s = check_kind(mo, SGFP4_MODEL_OUTPUT_ENCODE, diag);
    return s != SGFP4_OK ? s : run(mo, policy, options, diag);
}

sgfp4_status sgfp4_model_output_decode(sgfp4_model_output *mo,
                                       const sgfp4_model_write_options *options,
                                       sgfp4_diag *diag)
{
    const sgfp4_status s = check_kind(mo, SGFP4_MODEL_OUTPUT_DECODE, diag);
    return s != SGFP4_OK ? s : run(mo, NULL, options, diag);
}

sgfp4_sink sgfp4_model_output_sink(sgfp4_model_output *mo)
{
    if (!mo || mo->kind != SGFP4_MODEL_OUTPUT_WRITE)
        return (sgfp4_sink){0};
    return guarded(mo, 0);
}

void sgfp4_model_output_cancel(sgfp4_model_output *mo)
{
    if (mo)
        atomic_store(&mo->cancelled, 1);
}

/* ---- commit ---- */

/* A WRITE output before its commit: complete, opening as a model; a set's index written
 * from the shard's tensors. */
static sgfp4_status finish_write(sgfp4_model_output *mo, sgfp4_diag *diag)
{
    sgfp4_status s = explain(mo, SGFP4_OK, diag);
    if (s != SGFP4_OK)
        return s;
    if ((s = file_done(mo, 0, NULL, NULL, diag)) != SGFP4_OK)
        return s;
    char shown[SGFP4_SHOWN_SIZE];
    sgfp4_path_shown(mo->paths[0], shown);
    const char *tmp = sgfp4_output_temp_path(mo->outs[0]);
    if (!tmp && !mo->set)
        return SGFP4_OK; /* written in place: cannot be read back */
    if (!tmp)
        return sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1,
                          "%s: a set's shard written in place cannot be read back for its "
                          "index", shown);
    sgfp4_model *m = NULL;
    if ((s = sgfp4_model_check_opens(tmp, shown, &m, SGFP4_OK, diag)) != SGFP4_OK || !mo->set) {
        sgfp4_model_close(m);
        return s;
    }
    char *text = sgfp4_model_index_text(m, (const char *const *)mo->names,
                                        sgfp4_model_data_bytes(m));
    sgfp4_model_close(m);
    if (!text)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    s = sgfp4_output_write(mo->outs[1], text, strlen(text));
    free(text);
    return s == SGFP4_OK ? sgfp4_output_finish(mo->outs[1], diag) : explain(mo, s, diag);
}

sgfp4_status sgfp4_model_output_commit(sgfp4_model_output *mo, sgfp4_diag *diag)
{
    if (!mo)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL output");
    sgfp4_status s = SGFP4_OK;
    if (mo->kind == SGFP4_MODEL_OUTPUT_WRITE && mo->state == STATE_OPEN)
        mo->state = (s = finish_write(mo, diag)) == SGFP4_OK ? STATE_WRITTEN : STATE_FAILED;
    else if (mo->state != STATE_WRITTEN)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "the output has no complete job to commit");
    if (s == SGFP4_OK && atomic_load(&mo->cancelled))
        s = explain(mo, s, diag);
    if (s == SGFP4_OK)
        s = sgfp4_output_commit_all(mo->outs, mo->files, diag);
    mo->state = s == SGFP4_OK ? STATE_COMMITTED : STATE_FAILED;
    return s;
}

size_t sgfp4_model_output_files(const sgfp4_model_output *mo) { return mo ? mo->files : 0; }

size_t sgfp4_model_output_leftovers_removed(const sgfp4_model_output *mo)
{
    return mo ? mo->stale : 0;
}

void sgfp4_model_output_close(sgfp4_model_output *mo)
{
    if (!mo)
        return;
    sgfp4_zstd_sink_free(mo->zstd);
    for (size_t k = 0; k < mo->files; k++) {
        if (mo->outs)
            sgfp4_output_close(mo->outs[k]);
        if (mo->names)
            free(mo->names[k]);
        if (mo->paths)
            free(mo->paths[k]);
    }
    free(mo->outs);
    free(mo->names);
    free(mo->paths);
    free(mo->guards);
    free(mo);
}
