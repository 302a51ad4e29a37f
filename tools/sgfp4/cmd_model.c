/* The whole-model forms of encode, decode and verify (docs/model.md): entered when the input
 * is a model (cli_is_model_input: a safetensors file, a zstd stream, a sharded set's index).
 * The output is one file, or a sharded set when it names an index (OUT ending in
 * .index.json): every file of the job is opened (and so checked) before any work, each
 * shard is checked when it is complete, and the files are renamed into place only when the
 * whole job succeeded, the shards first and the index last (the commit point).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Reads a policy file (or makes the default policy) and applies the command line to it. */
static bool make_policy(const cli_args *a, sgfp4_model_policy **out)
{
    sgfp4_diag diag;
    const bool split = a->policy && (!strcmp(a->policy, "rate") || !strcmp(a->policy, "threshold"));
    if (a->policy && !split) {
        fileio_input in;
        char err[FILEIO_ERROR_SIZE];
        if (!fileio_read(a->policy, &in, err))
            return cli_error(a->command, "%s", err), false;
        const sgfp4_status s = sgfp4_model_policy_parse((const char *)in.data, in.size, out,
                                                        &diag);
        fileio_input_release(&in);
        if (s != SGFP4_OK)
            return cli_error(a->command, "%s: %s", a->policy, diag.message), false;
    } else if (sgfp4_model_policy_create(out) != SGFP4_OK) {
        return cli_error(a->command, "out of memory"), false;
    }
    sgfp4_encode_options *d = sgfp4_model_policy_defaults(*out);
    if (a->given[KEY_BPW])
        d->target_bpw = a->bpw;
    if (a->given[KEY_PROFILE])
        d->profile = a->profile;
    if (split)
        d->policy = a->policy[0] == 'r' ? SGFP4_POLICY_RATE : SGFP4_POLICY_THRESHOLD;
    if (a->given[KEY_THRESHOLD])
        d->threshold = a->threshold;
    if (a->given[KEY_DELTA])
        d->delta = a->delta;
    if (a->given[KEY_FIT])
        d->fit = a->fit;
    if (a->given[KEY_METRIC])
        d->metric = a->metric;
    d->threads = a->threads;
    if (a->given[KEY_EMBEDDINGS])
        sgfp4_model_policy_set_embeddings(*out, a->quantize_embeddings);
    if (a->given[KEY_RATES])
        sgfp4_model_policy_set_rates(*out, a->rates);
    return true;
}

/* ---- self-checks of what was written (before it replaces anything) ---- */

typedef bool (*output_check)(const char *path, const sgfp4_model *src, char *why, size_t size);

static bool open_written(const char *path, sgfp4_model **m, char *why, size_t size)
{
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open(path, m, NULL, &diag);
    if (s != SGFP4_OK)
        snprintf(why, size, "internal error: the written file does not open: %s [%s]",
                 diag.message, sgfp4_status_name(s));
    return s == SGFP4_OK;
}

/* A freshly written quantized model: verified, D6-aligned, and every pass-through tensor
 * byte for byte the source's. */
static bool check_encoded(const char *path, const sgfp4_model *src, char *why, size_t size)
{
    sgfp4_model *m = NULL;
    if (!open_written(path, &m, why, size))
        return false;
    sgfp4_model_verify_result r;
    sgfp4_diag diag;
    sgfp4_status s = sgfp4_model_verify(m, &r, &diag);
    bool ok = s == SGFP4_OK;
    if (!ok)
        snprintf(why, size, "internal error: the written model fails verification: %s [%s]",
                 diag.message, sgfp4_status_name(s));
    else if (!sgfp4_model_is_quantized(m) || !r.d6_aligned ||
             r.tensors != sgfp4_model_tensor_count(src))
        ok = false, snprintf(why, size, "internal error: the written model fails the D6 layout "
                                        "self-check");
    for (size_t k = 0; ok && k < r.tensors; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_tensor *o = sgfp4_model_tensor_find(src, t->name);
        if (!o || (!t->quant && (t->nbytes != o->nbytes || memcmp(t->data, o->data, t->nbytes))))
            ok = false, snprintf(why, size, "internal error: tensor '%s' differs from the source",
                                 t->name);
        sgfp4_model_tensor_evict(m, t);
        sgfp4_model_tensor_evict(src, o);
    }
    sgfp4_model_close(m);
    return ok;
}

/* A restored model: a strict safetensors file with every tensor. */
static bool check_decoded(const char *path, const sgfp4_model *src, char *why, size_t size)
{
    sgfp4_model *back = NULL;
    if (!open_written(path, &back, why, size))
        return false;
    const bool ok = sgfp4_model_tensor_count(back) == sgfp4_model_tensor_count(src);
    if (!ok)
        snprintf(why, size, "internal error: the restored model lacks tensors");
    sgfp4_model_close(back);
    return ok;
}

/* ---- what the job says: progress, tensors that miss their rate target, the summary ---- */

enum { WORST = 3 };
typedef struct job_report {
    progress_bar bar;
    size_t misses[2];                   /* above, below the target */
    sgfp4_model_tensor_report worst[2][WORST];
    char names[2][WORST][96];
    size_t warned;                      /* tensors whose policy decision has a warning */
} job_report;

static void on_progress(void *user, const sgfp4_model_progress *p)
{
    progress_bar_update(&((job_report *)user)->bar, p);
}

/* Keeps the WORST tensors of each kind of miss, by how far they are from their target. */
static void on_tensor(void *user, const sgfp4_model_tensor_report *r)
{
    job_report *j = user;
    if (!r->target_miss || r->target_bpw <= 0)
        return;
    const int kind = r->target_miss > 0 ? 0 : 1;
    const double off = r->target_miss > 0 ? r->bits_per_weight / r->target_bpw
                                          : r->target_bpw / r->bits_per_weight;
    size_t n = j->misses[kind] < WORST ? j->misses[kind] : WORST;
    j->misses[kind]++;
    size_t at = n;
    while (at > 0) {
        const sgfp4_model_tensor_report *w = &j->worst[kind][at - 1];
        const double w_off = kind == 0 ? w->bits_per_weight / w->target_bpw
                                       : w->target_bpw / w->bits_per_weight;
        if (w_off >= off)
            break;
        at--;
    }
    if (at >= WORST)
        return;
    for (size_t k = (n < WORST ? n : WORST - 1); k > at; k--) {
        j->worst[kind][k] = j->worst[kind][k - 1];
        memcpy(j->names[kind][k], j->names[kind][k - 1], sizeof j->names[kind][k]);
    }
    j->worst[kind][at] = *r;
    snprintf(j->names[kind][at], sizeof j->names[kind][at], "%s", r->tensor->name);
}

static void megabytes(char *buf, size_t size, uint64_t bytes)
{
    if (bytes >= 10000000000ull)
        snprintf(buf, size, "%.2f GB", (double)bytes / 1e9);
    else
        snprintf(buf, size, "%.2f MB", (double)bytes / 1e6);
}

/* The closing lines on stderr (unless -q), after the progress bar is gone: the summary, then
 * the rate-target warnings naming the worst tensors. */
static void print_summary(const cli_args *a, bool encode, const sgfp4_model_summary *s,
                          const job_report *j)
{
    if (cli_verbosity < 1)
        return;
    char in[32], out[32];
    megabytes(in, sizeof in, s->bytes_in);
    megabytes(out, sizeof out, s->bytes_out);
    fprintf(stderr, "%s: %zu tensors (%zu %s", a->command, s->tensors, s->quantized,
            encode ? "quantized" : "decoded from containers");
    if (encode && s->calibrated)
        fprintf(stderr, ", %zu calibrated with their input's Hessian", s->calibrated);
    if (encode && s->rated)
        fprintf(stderr, ", %zu at rates by sensitivity", s->rated);
    fprintf(stderr, "), %s -> %s", in, out);
    if (encode && s->quantized)
        fprintf(stderr, ", %.2f bits/weight", s->bits_per_weight);
    if (s->files > 1)
        fprintf(stderr, ", %zu files", s->files);
    fprintf(stderr, ", %.2f s\n", s->seconds);
    if (j->warned)
        fprintf(stderr, "sgfp4: %s: warning: %zu quantized tensor%s got a policy warning (each "
                        "named above)\n", a->command, j->warned, j->warned > 1 ? "s" : "");
    static const char *const what[2] = {
        "are larger than their --bpw target allows: it is below what their shape and the "
        "format reach",
        "stay more than 1% below their --bpw target: their finest trees need no more"};
    for (int kind = 0; kind < 2; kind++) {
        if (!j->misses[kind])
            continue;
        fprintf(stderr, "sgfp4: %s: warning: %zu quantized tensor%s %s", a->command,
                j->misses[kind], j->misses[kind] > 1 ? "s" : "",
                j->misses[kind] > 1 ? what[kind] : kind == 0 ? "is larger than its --bpw target "
                "allows: it is below what its shape and the format reach"
                                                             : "stays more than 1% below its "
                "--bpw target: its finest trees need no more");
        const size_t n = j->misses[kind] < WORST ? j->misses[kind] : WORST;
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, "%s'%s' %.2f bits/weight for %.2f", k ? ", " : " (worst: ",
                    j->names[kind][k], j->worst[kind][k].bits_per_weight,
                    j->worst[kind][k].target_bpw);
        fprintf(stderr, "%s)\n", j->misses[kind] > WORST ? ", ..." : "");
    }
}

/* ---- one file ---- */

static int write_one(const cli_args *a, const sgfp4_model *m, const sgfp4_model_policy *policy,
                     sgfp4_model_write_options *wo, job_report *j, output_check check)
{
    char err[FILEIO_ERROR_SIZE];
    fileio_model_output mo;
    if (!cli_model_output_open(a, a->out, &mo))
        return CLI_EXIT_FAIL;
    progress_bar_init(&j->bar, a->command);
    sgfp4_diag diag;
    const sgfp4_status s = policy ? sgfp4_model_encode(m, policy, &mo.sink, wo, &diag)
                                  : sgfp4_model_decode(m, &mo.sink, wo, &diag);
    progress_bar_done(&j->bar);
    bool ok = s == SGFP4_OK;
    char why[FILEIO_ERROR_SIZE], text[2 * sizeof diag.message];
    if (!ok)
        cli_error(a->command, "%s: %s [%s]", a->in, cli_diag_text(s, diag.message, text,
                                                                   sizeof text),
                  sgfp4_status_name(s));
    else if (!(ok = fileio_model_output_finish(&mo, err)))
        cli_error(a->command, "%s", err);
    else if (mo.out.tmp_path && !(ok = check(mo.out.tmp_path, m, why, sizeof why)))
        cli_error(a->command, "%s: %s", a->out, why);
    if (!ok) {
        fileio_model_output_abort(&mo);
        return CLI_EXIT_FAIL;
    }
    if (!fileio_model_output_commit(&mo, err))
        return cli_error(a->command, "%s", err);
    return CLI_EXIT_OK;
}

/* ---- a sharded set ---- */

/* Output shard names: encode NAME.safetensors -> NAME.sgfp4.safetensors, decode the reverse
 * (another name is kept, with .sgfp4.safetensors appended for encode); a .zst ending is
 * dropped (the shards of a set are written plain). */
static char *shard_name(const char *source, bool encode)
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

typedef struct set_job {
    const cli_args *a;
    const sgfp4_model *source;
    output_check check;
    size_t shards;          /* files: shards, then the index */
    char **names;           /* the output files' names (shards, index) */
    fileio_output *outs;    /* opened before the job, in the index's folder */
    char why[FILEIO_ERROR_SIZE];
    char fault[2 * FILEIO_ERROR_SIZE]; /* what set_close found wrong, in full */
} set_job;

static sgfp4_status file_write(void *user, const void *data, size_t size)
{
    return fileio_output_write(user, data, size) ? SGFP4_OK : SGFP4_ERR_IO;
}

static sgfp4_status set_open(void *user, size_t file, const char *name, sgfp4_sink *sink,
                             sgfp4_diag *diag)
{
    set_job *j = user;
    if (file > j->shards || strcmp(name, j->names[file]) != 0) {
        snprintf(diag->message, sizeof diag->message, "internal error: unexpected output '%s'",
                 name);
        return SGFP4_ERR_ARGUMENT;
    }
    *sink = (sgfp4_sink){file_write, &j->outs[file]};
    return SGFP4_OK;
}

/* A complete shard is checked against its source shard at once (an error stops the job). */
static sgfp4_status set_close(void *user, size_t file, sgfp4_status status, sgfp4_diag *diag)
{
    set_job *j = user;
    if (status != SGFP4_OK)
        return SGFP4_OK; /* the job fails: every file is removed after it */
    char err[FILEIO_ERROR_SIZE];
    bool ok = fileio_output_finish(&j->outs[file], err);
    if (!ok)
        snprintf(j->fault, sizeof j->fault, "%s", err);
    else if (file < j->shards && j->outs[file].tmp_path &&
             !(ok = j->check(j->outs[file].tmp_path, sgfp4_model_shard(j->source, file), j->why,
                             sizeof j->why)))
        snprintf(j->fault, sizeof j->fault, "%s: %s", j->outs[file].path, j->why);
    if (!ok)
        snprintf(diag->message, sizeof diag->message, "output file %zu failed", file);
    return ok ? SGFP4_OK : SGFP4_ERR_IO;
}

static int write_set(const cli_args *a, const sgfp4_model *m, const sgfp4_model_policy *policy,
                     sgfp4_model_write_options *wo, job_report *report, output_check check)
{
    if (a->given[KEY_ZSTD_LEVEL])
        return cli_usage_error(a->command, "--zstd-level: the shards of a set are written plain");
    set_job j = {.a = a, .source = m, .check = check, .shards = sgfp4_model_shard_count(m)};
    const size_t files = j.shards + 1;
    j.names = calloc(files, sizeof *j.names);
    j.outs = calloc(files, sizeof *j.outs);
    const char *slash = strrchr(a->out, '/');
    const int dir = slash ? (int)(slash - a->out + 1) : 0;
    int rc = CLI_EXIT_FAIL;
    size_t opened = 0;
    bool ok = j.names && j.outs;
    if (!ok)
        cli_error(a->command, "out of memory");
    for (size_t k = 0; ok && k < files; k++) {
        const char *source = k < j.shards ? sgfp4_model_shard_name(m, k) : NULL;
        if (k < j.shards && !source) { /* a single file: a set of one, named after it */
            const char *in_slash = strrchr(a->in, '/');
            source = in_slash ? in_slash + 1 : a->in;
        }
        j.names[k] = k < j.shards ? shard_name(source, policy != NULL) : strdup(a->out + dir);
        char *path = j.names[k] ? malloc((size_t)dir + strlen(j.names[k]) + 1) : NULL;
        if (!path) {
            ok = false;
            cli_error(a->command, "out of memory");
            break;
        }
        sprintf(path, "%.*s%s", dir, a->out, j.names[k]);
        ok = cli_output_open(a, path, &j.outs[k]);
        opened += ok;
        free(path);
    }
    if (ok) {
        progress_bar_init(&report->bar, a->command);
        const sgfp4_model_set_sinks sinks = {set_open, set_close, &j};
        sgfp4_diag diag;
        const sgfp4_status s =
            policy ? sgfp4_model_encode_set(m, policy, (const char *const *)j.names,
                                            j.names[j.shards], &sinks, wo, &diag)
                   : sgfp4_model_decode_set(m, (const char *const *)j.names, j.names[j.shards],
                                            &sinks, wo, &diag);
        progress_bar_done(&report->bar);
        if (s != SGFP4_OK && j.fault[0])
            cli_error(a->command, "%s", j.fault);
        else if (s != SGFP4_OK) {
            char text[2 * sizeof diag.message];
            cli_error(a->command, "%s: %s [%s]", a->in,
                      cli_diag_text(s, diag.message, text, sizeof text), sgfp4_status_name(s));
        }
        ok = s == SGFP4_OK;
    }
    if (ok) {
        /* the shards, then the index: a set is there once its index is */
        char err[FILEIO_ERROR_SIZE];
        fileio_commit_begin();
        for (size_t k = 0; ok && k < files; k++)
            if (!(ok = fileio_output_commit(&j.outs[k], err)))
                cli_error(a->command, "%s", err);
        fileio_commit_end();
        rc = ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    for (size_t k = 0; k < opened; k++)
        fileio_output_abort(&j.outs[k]); /* what was not committed */
    for (size_t k = 0; j.names && k < files; k++)
        free(j.names[k]);
    free(j.names);
    free(j.outs);
    return rc;
}

/* ---- the commands ---- */

/* The output of encode and decode: a model file, an index (a set), or '-'. -1 when it is. */
static int check_output_path(const cli_args *a)
{
    if (!a->out)
        return cli_usage_error(a->command, "no output (-o OUT)");
    struct stat st;
    if (stat(a->out, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_error(a->command, "%s: is a directory (a set's output names its index, e.g. "
                                     "DIR/model.sgfp4.safetensors.index.json)", a->out);
    if (!cli_is_model_path(a->out) && strcmp(a->out, "-") != 0 && !fileio_is_direct(a->out))
        return cli_usage_error(a->command, "a model's output ends in .safetensors or "
                                           ".safetensors.zst (one file) or .index.json (a "
                                           "sharded set)");
    return -1;
}

static int write_model(const cli_args *a, const sgfp4_model *m, const sgfp4_model_policy *policy,
                       sgfp4_model_write_options *wo, size_t warned, output_check check)
{
    job_report report;
    memset(&report, 0, sizeof report);
    report.warned = warned;
    sgfp4_model_summary summary;
    wo->progress = on_progress;
    wo->tensor_report = on_tensor;
    wo->progress_user = &report;
    wo->summary = &summary;
    const int rc = cli_ends_with(a->out, ".index.json")
                       ? write_set(a, m, policy, wo, &report, check)
                       : write_one(a, m, policy, wo, &report, check);
    if (rc == CLI_EXIT_OK)
        print_summary(a, policy != NULL, &summary, &report);
    return rc;
}

/* The policy's warnings (sgfp4_model_decision.warning: a rate that makes part of the weights
 * ternary), one line per tensor on stderr before the job, so that a run that may break the
 * model can be stopped early. Returns how many tensors got one. */
static size_t warn_decisions(const cli_args *a, const sgfp4_model *m,
                             const sgfp4_model_policy *policy)
{
    size_t warned = 0;
    for (size_t k = 0; k < sgfp4_model_tensor_count(m); k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        sgfp4_model_decision d;
        sgfp4_model_policy_decide(policy, t, &d);
        if (!d.quantize || !d.warning[0])
            continue;
        warned++;
        if (cli_verbosity > 0)
            fprintf(stderr, "sgfp4: %s: warning: '%s': %s\n", a->command, t->name, d.warning);
    }
    return warned;
}

int cmd_encode_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_MAX_OUTPUT_ELEMENTS, 0};
    int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0 || (rc = check_output_path(a)) >= 0)
        return rc;
    sgfp4_model *src = NULL, *importance = NULL;
    sgfp4_model_policy *policy = NULL;
    if (!cli_model_open(a, a->in, &src) ||
        (a->importance && !cli_model_open(a, a->importance, &importance)) ||
        !make_policy(a, &policy)) {
        sgfp4_model_close(src);
        sgfp4_model_close(importance);
        return CLI_EXIT_FAIL;
    }
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.importance = importance;
    /* The spool lives beside the output (that file system must hold the result anyway;
     * /tmp may be a RAM disk). */
    char spool_dir[4096] = ".";
    const char *slash = strrchr(a->out, '/');
    if (slash && (size_t)(slash - a->out) < sizeof spool_dir)
        snprintf(spool_dir, sizeof spool_dir, "%.*s", (int)(slash - a->out + 1), a->out);
    if (strcmp(a->out, "-") != 0 && !fileio_is_direct(a->out))
        wo.temp_dir = spool_dir;
    rc = write_model(a, src, policy, &wo, warn_decisions(a, src, policy), check_encoded);
    sgfp4_model_close(src);
    sgfp4_model_close(importance);
    sgfp4_model_policy_free(policy);
    return rc;
}

int cmd_decode_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_BACKEND, KEY_STORE, 0};
    int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0 || (rc = check_output_path(a)) >= 0)
        return rc;
    sgfp4_model *m = NULL;
    if (!cli_model_open(a, a->in, &m))
        return CLI_EXIT_FAIL;
    const sgfp4_decode_options decode = cli_decode_options(a);
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.decode_dtype = a->given[KEY_DTYPE] ? &a->dtype : NULL;
    wo.decode = &decode;
    wo.max_output_elements = a->max_output_elements; /* 0: the library's default */
    rc = write_model(a, m, NULL, &wo, 0, check_decoded);
    sgfp4_model_close(m);
    return rc;
}
