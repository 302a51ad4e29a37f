/* The whole-model forms of encode, decode and verify (docs/model.md): entered when the input
 * is a model (cli_is_model_input: a safetensors file, a zstd stream, a sharded set's index).
 * The output is the library's model output (sgfp4_model_output_open): one file, or a
 * sharded set when it names an index (OUT ending in .index.json); every file of the job is
 * opened (and so checked) before any work, each is checked when it is complete, and the
 * files are renamed into place only when the whole job succeeded, the shards first and the
 * index last (the commit point).
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

/* ---- what the job says: progress, each tensor (-v), the summary and its warnings ---- */

enum { WORST = 3 };
typedef struct job_report {
    const cli_args *a;
    bool encode;
    progress_bar bar;
    size_t misses[2];                   /* above, below the target */
    sgfp4_model_tensor_report worst[2][WORST];
    char names[2][WORST][96];
    size_t warned;                      /* tensors whose policy decision has a warning */
    /* weights beyond the fp16 range: tensors, weights, and the first WORST tensors */
    size_t clipped_tensors;
    uint64_t clipped_weights, clipped[WORST];
    char clipped_names[WORST][96];
    /* --importance: quantized tensors, those it weighted, the first WORST it did not */
    size_t quantized, weighted;
    char unweighted[WORST][96];
} job_report;

static void on_progress(void *user, const sgfp4_model_progress *p)
{
    progress_bar_update(&((job_report *)user)->bar, p);
}

/* Keeps the WORST tensors of each kind of miss, by how far they are from their target. */
static void note_miss(job_report *j, const sgfp4_model_tensor_report *r)
{
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

static const char *dtype_name(sgfp4_dtype dtype)
{
    return dtype == SGFP4_DTYPE_F16 ? "F16" : dtype == SGFP4_DTYPE_BF16 ? "BF16" : "F32";
}

/* -v: one line per tensor, what was done to it. */
static void say_tensor(const job_report *j, const sgfp4_model_tensor_report *r)
{
    const sgfp4_model_tensor *t = r->tensor;
    const sgfp4_model_quant *q = t->quant;
    char shape[96], what[256] = "";
    cli_shape_text(shape, sizeof shape, q ? q->original_shape : t->shape,
                   q ? q->original_rank : t->rank);
    size_t used = 0;
    if (j->encode && r->quantized) {
        used = (size_t)snprintf(what, sizeof what, "quantized (%s): %.2f bits/weight",
                                r->reason, r->bits_per_weight);
        if (r->target_bpw > 0 && used < sizeof what)
            used += (size_t)snprintf(what + used, sizeof what - used, " (target %.2f)",
                                     r->target_bpw);
        if (j->a->importance && used < sizeof what)
            used += (size_t)snprintf(what + used, sizeof what - used, ", importance %s",
                                     r->importance == 3   ? "columns and rows"
                                     : r->importance == 1 ? "columns"
                                     : r->importance == 2 ? "rows"
                                                          : "none");
        if (r->clipped && used < sizeof what)
            snprintf(what + used, sizeof what - used, ", %llu weight%s clipped to +-65504",
                     (unsigned long long)r->clipped, r->clipped > 1 ? "s" : "");
    } else if (j->encode) {
        snprintf(what, sizeof what, "passed through (%s)", r->reason);
    } else if (r->quantized) {
        const char *out = j->a->given[KEY_DTYPE] ? dtype_name(j->a->dtype)
                                                 : sgfp4_st_dtype_name(q->source_dtype);
        snprintf(what, sizeof what, "%s container decoded to %s", cli_profile_name(q->profile),
                 out);
    } else {
        snprintf(what, sizeof what, "copied");
    }
    if (j->bar.enabled)
        fputs("\r\033[K", stderr); /* the bar is drawn again at the next tensor */
    cli_verbose(j->a->command, "[%zu/%zu] '%s' %s %s: %s, %.3f s", r->index + 1, r->count,
                t->name, shape, sgfp4_st_dtype_name(q ? q->source_dtype : t->dtype), what,
                r->seconds);
}

/* After each tensor: the rate-target misses, clipped weights and importance vectors it had;
 * with -v a line about it. */
static void on_tensor(void *user, const sgfp4_model_tensor_report *r)
{
    job_report *j = user;
    say_tensor(j, r);
    if (!j->encode || !r->quantized)
        return;
    note_miss(j, r);
    if (r->clipped) {
        if (j->clipped_tensors < WORST) {
            j->clipped[j->clipped_tensors] = r->clipped;
            snprintf(j->clipped_names[j->clipped_tensors], sizeof j->clipped_names[0], "%s",
                     r->tensor->name);
        }
        j->clipped_tensors++;
        j->clipped_weights += r->clipped;
    }
    if (r->importance)
        j->weighted++;
    else if (j->quantized - j->weighted < WORST)
        snprintf(j->unweighted[j->quantized - j->weighted], sizeof j->unweighted[0], "%s",
                 r->tensor->name);
    j->quantized++;
}

static void megabytes(char *buf, size_t size, uint64_t bytes)
{
    if (bytes >= 10000000000ull)
        snprintf(buf, size, "%.2f GB", (double)bytes / 1e9);
    else
        snprintf(buf, size, "%.2f MB", (double)bytes / 1e6);
}

/* Up to WORST quoted names (with a count each when counts is not NULL), then ", ..." when
 * there are more than shown. */
static void print_names(const char (*names)[96], const uint64_t *counts, size_t total)
{
    const size_t n = total < WORST ? total : WORST;
    for (size_t k = 0; k < n; k++) {
        fprintf(stderr, "%s'%s'", k ? ", " : "", names[k]);
        if (counts)
            fprintf(stderr, " %llu weight%s", (unsigned long long)counts[k],
                    counts[k] > 1 ? "s" : "");
    }
    fprintf(stderr, "%s", total > WORST ? ", ..." : "");
}

/* What the importance file did: for how many quantized tensors it had a vector. */
static void print_importance(const cli_args *a, const job_report *j)
{
    if (j->weighted == j->quantized) {
        fprintf(stderr, "sgfp4: %s: importance %s: vectors for all %zu quantized tensors\n",
                a->command, a->importance, j->quantized);
        return;
    }
    fprintf(stderr, "sgfp4: %s: warning: importance %s has vectors for %zu of the %zu quantized "
                    "tensors: the other %zu were encoded without it (",
            a->command, a->importance, j->weighted, j->quantized, j->quantized - j->weighted);
    print_names(j->unweighted, NULL, j->quantized - j->weighted);
    fprintf(stderr, ")\n");
}

/* The closing lines on stderr (unless -q), after the progress bar is gone: the summary, then
 * the warnings: rate targets missed (naming the worst tensors), weights clipped to the fp16
 * range, tensors the importance file had no vector for. */
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
        fprintf(stderr, "sgfp4: %s: warning: %zu quantized tensor%s got a policy warning (said "
                        "above)\n", a->command, j->warned, j->warned > 1 ? "s" : "");
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
    if (j->clipped_tensors) {
        fprintf(stderr, "sgfp4: %s: warning: %zu quantized tensor%s %llu weight%s beyond the "
                        "binary16 range, encoded as +-65504, the largest value the format "
                        "stores (",
                a->command, j->clipped_tensors, j->clipped_tensors > 1 ? "s have" : " has",
                (unsigned long long)j->clipped_weights, j->clipped_weights > 1 ? "s" : "");
        print_names(j->clipped_names, j->clipped, j->clipped_tensors);
        fprintf(stderr, ")\n");
    }
    if (encode && a->importance)
        print_importance(a, j);
}

/* ---- the job ---- */

/* Opens the output (one file, or a set for OUT ending in .index.json: every file checked
 * and opened before any work), runs the job into it and commits it. */
static int run_job(const cli_args *a, const sgfp4_model *m, const sgfp4_model_policy *policy,
                   sgfp4_model_write_options *wo, job_report *j)
{
    if (cli_ends_with(a->out, ".index.json") && a->given[KEY_ZSTD_LEVEL])
        return cli_usage_error(a->command, "--zstd-level: the shards of a set are written plain");
    sgfp4_model_output *mo = cli_model_output_open(
        a, a->out, m, policy ? SGFP4_MODEL_OUTPUT_ENCODE : SGFP4_MODEL_OUTPUT_DECODE);
    if (!mo)
        return CLI_EXIT_FAIL;
    progress_bar_init(&j->bar, a->command);
    sgfp4_diag diag;
    sgfp4_status s = policy ? sgfp4_model_output_encode(mo, policy, wo, &diag)
                            : sgfp4_model_output_decode(mo, wo, &diag);
    progress_bar_done(&j->bar);
    int rc = CLI_EXIT_OK;
    if (s != SGFP4_OK) {
        char text[2 * sizeof diag.message];
        rc = cli_error(a->command, "%s: %s [%s]", a->in,
                       cli_diag_text(s, diag.message, text, sizeof text), sgfp4_status_name(s));
    } else if ((s = sgfp4_model_output_commit(mo, &diag)) != SGFP4_OK) {
        rc = cli_error(a->command, "%s", diag.message); /* the shards, then the index */
    }
    sgfp4_model_output_close(mo); /* removes whatever was not committed */
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
    if (!cli_is_model_path(a->out) && strcmp(a->out, "-") != 0 && !sgfp4_output_path_is_direct(a->out))
        return cli_usage_error(a->command, "a model's output ends in .safetensors or "
                                           ".safetensors.zst (one file) or .index.json (a "
                                           "sharded set)");
    return -1;
}

static int write_model(const cli_args *a, const sgfp4_model *m, const sgfp4_model_policy *policy,
                       sgfp4_model_write_options *wo, size_t warned)
{
    job_report report;
    memset(&report, 0, sizeof report);
    report.a = a;
    report.encode = policy != NULL;
    report.warned = warned;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    wo->progress = on_progress;
    wo->tensor_report = on_tensor;
    wo->progress_user = &report;
    wo->summary = &summary;
    const int rc = run_job(a, m, policy, wo, &report);
    if (rc == CLI_EXIT_OK)
        print_summary(a, policy != NULL, &summary, &report);
    return rc;
}

/* The policy's warnings (sgfp4_model_decision.warning: a rate that makes part of the weights
 * ternary), on stderr before the job, so that a run that may break the model can be stopped
 * early: one line for all the tensors that got one (-v: one line per tensor). Returns how
 * many tensors got one. */
static size_t warn_decisions(const cli_args *a, const sgfp4_model *m,
                             const sgfp4_model_policy *policy)
{
    size_t warned = 0;
    bool alike = true; /* every warning the same text */
    char first[sizeof ((sgfp4_model_decision *)0)->warning] = "";
    char names[WORST][96];
    for (size_t k = 0; k < sgfp4_model_tensor_count(m); k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        sgfp4_model_decision d;
        sgfp4_model_decision_init(&d);
        sgfp4_model_policy_decide(policy, t, &d);
        if (!d.quantize || !d.warning[0])
            continue;
        if (warned < WORST)
            snprintf(names[warned], sizeof names[0], "%s", t->name);
        if (!warned)
            snprintf(first, sizeof first, "%s", d.warning);
        alike = alike && strcmp(first, d.warning) == 0;
        warned++;
        if (cli_verbosity > 1)
            fprintf(stderr, "sgfp4: %s: warning: '%s': %s\n", a->command, t->name, d.warning);
    }
    if (cli_verbosity != 1 || !warned)
        return warned;
    if (warned == 1)
        fprintf(stderr, "sgfp4: %s: warning: '%s': %s\n", a->command, names[0], first);
    else if (alike) {
        fprintf(stderr, "sgfp4: %s: warning: %zu quantized tensors: %s (", a->command, warned,
                first);
        print_names((const char(*)[96])names, NULL, warned);
        fprintf(stderr, "%s)\n", warned > WORST ? "; -v names each" : "");
    } else {
        fprintf(stderr, "sgfp4: %s: warning: %zu quantized tensors got a policy warning, e.g. "
                        "'%s': %s (-v names each)\n", a->command, warned, names[0], first);
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
    if (strcmp(a->out, "-") != 0 && !sgfp4_output_path_is_direct(a->out))
        wo.temp_dir = spool_dir;
    rc = write_model(a, src, policy, &wo, warn_decisions(a, src, policy));
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
    rc = write_model(a, m, NULL, &wo, 0);
    sgfp4_model_close(m);
    return rc;
}
