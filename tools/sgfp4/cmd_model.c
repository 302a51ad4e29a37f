/* Whole-model forms of encode / decode / verify on safetensors files (docs/model.md).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "model_cli.h"

static const char encode_help[] =
    "usage: sgfp4 encode MODEL.safetensors[.zst] -o OUT.sgfp4.safetensors[.zst] [options]\n"
    "\n"
    "Quantizes a whole model (F32/F16/BF16 safetensors) into a quantized model file: each\n"
    "matrix the policy picks becomes an SGFP4 container (U8 tensor), described by the sgfp4\n"
    "manifest in __metadata__; everything else passes through unchanged. OUT ending in .zst\n"
    "is zstd-compressed. The output is verified before it replaces OUT.\n"
    "\n"
    "  -o, --output OUT          output path (required)\n"
    "  --bpw X                   target bits per weight (default 4.5)\n"
    "  --profile v1|v2           container profile (default v2)\n"
    "  --policy FILE             JSON policy file of per-tensor rules (docs/model.md)\n"
    "  --policy rate|threshold   v2 split policy for every tensor (as for one tensor)\n"
    "  --threshold T             threshold policy: scale of the split thresholds (default 1)\n"
    "  --delta D                 reference mode choice: T158 preference (default 0.10)\n"
    "  --fit best|reference      leaf fitting (default best)\n"
    "  --embeddings quantize|skip  embeddings and lm_head (default quantize)\n"
    "  --threads N               encoder threads (default: all CPUs)\n"
    "  --zstd-level N            zstd level for .zst outputs (default 3)\n"
    "  -q                        no progress bar\n";

static const char decode_help[] =
    "usage: sgfp4 decode MODEL.sgfp4.safetensors[.zst] -o OUT.safetensors[.zst] [options]\n"
    "\n"
    "Restores an ordinary safetensors model: same names and shapes, each quantized tensor in\n"
    "its source dtype (or --dtype), pass-through tensors byte for byte.\n"
    "\n"
    "  -o, --output OUT        output path (required)\n"
    "  --dtype f32|f16|bf16    dtype of the decoded tensors (default: the source dtype)\n"
    "  --threads N             decode threads (default 1)\n"
    "  --zstd-level N          zstd level for .zst outputs (default 3)\n"
    "  -q                      no progress bar\n";

static const char verify_help[] =
    "usage: sgfp4 verify MODEL.sgfp4.safetensors[.zst] [-q]\n"
    "\n"
    "Checks the safetensors structure strictly, every container against the format's rules,\n"
    "and every container's sha256 against the manifest.\n";

/* Options of every model command (each uses a subset). */
typedef struct model_args {
    const char *in, *out, *policy;
    double bpw;
    bool bpw_given, profile_given, dtype_given;
    sgfp4_profile profile;
    sgfp4_dtype dtype;
    unsigned threads;
    int zstd_level;
    int embeddings; /* -1 unset */
    int split_policy, fit;     /* -1 unset, else sgfp4_policy / sgfp4_fit */
    double threshold, delta;   /* < 0 unset */
} model_args;

/* Returns -1 to continue, else an exit code. */
static int parse_args(const char *cmd, const char *help, int argc, char **argv, model_args *a)
{
    memset(a, 0, sizeof *a);
    a->zstd_level = 3;
    a->embeddings = a->split_policy = a->fit = -1;
    a->threshold = a->delta = -1;
    const char *v = NULL, *error = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        unsigned level = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(help, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(arg, "-q") == 0) {
            cli_quiet = true;
        } else if (cli_take_option(argc, argv, &i, "-o", &v, &error) ||
                   cli_take_option(argc, argv, &i, "--output", &v, &error)) {
            if (error)
                return cli_usage_error(cmd, "%s %s", arg, error);
            a->out = v;
        } else if (cli_take_option(argc, argv, &i, "--bpw", &v, &error)) {
            if (error || !cli_parse_double(v, &a->bpw) || !(a->bpw > 0 && a->bpw <= 32))
                return cli_usage_error(cmd, "--bpw wants a number in (0, 32]");
            a->bpw_given = true;
        } else if (cli_take_option(argc, argv, &i, "--profile", &v, &error)) {
            if (error || !cli_parse_profile(v, &a->profile))
                return cli_usage_error(cmd, "--profile wants v1 or v2");
            a->profile_given = true;
        } else if (cli_take_option(argc, argv, &i, "--policy", &v, &error)) {
            if (error)
                return cli_usage_error(cmd, "--policy %s", error);
            if (strcmp(v, "rate") == 0 || strcmp(v, "threshold") == 0)
                a->split_policy = v[0] == 'r' ? SGFP4_POLICY_RATE : SGFP4_POLICY_THRESHOLD;
            else
                a->policy = v;
        } else if (cli_take_option(argc, argv, &i, "--threshold", &v, &error)) {
            if (error || !cli_parse_double(v, &a->threshold) || !(a->threshold > 0))
                return cli_usage_error(cmd, "--threshold wants a positive number");
        } else if (cli_take_option(argc, argv, &i, "--delta", &v, &error)) {
            if (error || !cli_parse_double(v, &a->delta) || !(a->delta >= 0))
                return cli_usage_error(cmd, "--delta wants a non-negative number");
        } else if (cli_take_option(argc, argv, &i, "--fit", &v, &error)) {
            if (error || (strcmp(v, "best") != 0 && strcmp(v, "reference") != 0))
                return cli_usage_error(cmd, "--fit wants best or reference");
            a->fit = v[0] == 'b' ? SGFP4_FIT_BEST : SGFP4_FIT_REFERENCE;
        } else if (cli_take_option(argc, argv, &i, "--embeddings", &v, &error)) {
            if (error || (strcmp(v, "quantize") != 0 && strcmp(v, "skip") != 0))
                return cli_usage_error(cmd, "--embeddings wants quantize or skip");
            a->embeddings = v[0] == 'q';
        } else if (cli_take_option(argc, argv, &i, "--threads", &v, &error)) {
            if (error || !cli_parse_uint(v, &a->threads))
                return cli_usage_error(cmd, "--threads wants a count");
        } else if (cli_take_option(argc, argv, &i, "--dtype", &v, &error)) {
            if (error || !cli_parse_dtype(v, &a->dtype))
                return cli_usage_error(cmd, "--dtype wants f32, f16 or bf16");
            a->dtype_given = true;
        } else if (cli_take_option(argc, argv, &i, "--zstd-level", &v, &error)) {
            if (error || !cli_parse_uint(v, &level) || level < 1 || level > 22)
                return cli_usage_error(cmd, "--zstd-level wants 1..22");
            a->zstd_level = (int)level;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return cli_usage_error(cmd, "unknown option '%s'", arg);
        } else if (!a->in) {
            a->in = arg;
        } else {
            return cli_usage_error(cmd, "more than one input ('%s')", arg);
        }
    }
    if (!a->in)
        return cli_usage_error(cmd, "no input model");
    return -1;
}

/* Reads a policy file (or makes the default policy) and applies the command-line options. */
static bool make_policy(const char *cmd, const model_args *a, sgfp4_model_policy **out)
{
    sgfp4_diag diag;
    if (a->policy) {
        cli_input in;
        if (!cli_read_input(cmd, a->policy, &in))
            return false;
        const sgfp4_status s = sgfp4_model_policy_parse((const char *)in.data, in.size, out,
                                                        &diag);
        cli_input_release(&in);
        if (s != SGFP4_OK)
            return cli_error(cmd, "%s: %s", a->policy, diag.message), false;
    } else if (sgfp4_model_policy_create(out) != SGFP4_OK) {
        return cli_error(cmd, "out of memory"), false;
    }
    sgfp4_encode_options *d = sgfp4_model_policy_defaults(*out);
    if (a->bpw_given)
        d->target_bpw = a->bpw;
    if (a->profile_given)
        d->profile = a->profile;
    if (a->split_policy >= 0)
        d->policy = (sgfp4_policy)a->split_policy;
    if (a->threshold > 0)
        d->threshold = a->threshold;
    if (a->delta >= 0)
        d->delta = a->delta;
    if (a->fit >= 0)
        d->fit = (sgfp4_fit)a->fit;
    d->threads = cli_threads(a->threads);
    if (a->embeddings >= 0)
        sgfp4_model_policy_set_embeddings(*out, a->embeddings);
    return true;
}

/* What a strict check of a model found. */
typedef struct check_stats {
    size_t tensors, v1, v2;
    bool aligned; /* D6: data section 64-aligned, every v2 container 16-aligned in the file */
} check_stats;

/* Structure (by opening), every container and hash; prints the first failure. */
static bool check_model(const char *cmd, const char *path, const sgfp4_model *m,
                        check_stats *st)
{
    memset(st, 0, sizeof *st);
    st->tensors = sgfp4_model_tensor_count(m);
    st->aligned = sgfp4_model_data_offset(m) % 64 == 0;
    for (size_t k = 0; k < st->tensors; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        if (!t->quant)
            continue;
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_model_tensor_verify(m, t, &diag);
        sgfp4_model_tensor_evict(m, t);
        if (s != SGFP4_OK)
            return cli_error(cmd, "%s: %s [%s]", path, diag.message, sgfp4_status_name(s)), false;
        if (t->quant->profile == SGFP4_PROFILE_V2) {
            st->v2++;
            st->aligned = st->aligned && t->offset % 16 == 0;
        } else {
            st->v1++;
        }
    }
    return true;
}

/* Self-check of a freshly written quantized model against its source. */
static bool check_encoded(const char *cmd, const char *path, const sgfp4_model *src)
{
    sgfp4_model *m = NULL;
    if (!model_cli_open(cmd, path, &m))
        return false;
    check_stats st;
    bool ok = check_model(cmd, path, m, &st);
    if (ok && (!sgfp4_model_is_quantized(m) || !st.aligned ||
               st.tensors != sgfp4_model_tensor_count(src))) {
        cli_error(cmd, "internal error: the written model fails the D6 layout self-check");
        ok = false;
    }
    for (size_t k = 0; ok && k < st.tensors; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_tensor *s = sgfp4_model_tensor_find(src, t->name);
        if (!s || (!t->quant && (t->nbytes != s->nbytes || memcmp(t->data, s->data, t->nbytes)))) {
            cli_error(cmd, "internal error: tensor '%s' differs from the source", t->name);
            ok = false;
        }
        sgfp4_model_tensor_evict(m, t);
        if (s)
            sgfp4_model_tensor_evict(src, s);
    }
    sgfp4_model_close(m);
    return ok;
}

int cmd_model_encode(int argc, char **argv)
{
    const char *cmd = "encode";
    model_args a;
    int rc = parse_args(cmd, encode_help, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.out)
        return cli_usage_error(cmd, "no output (-o OUT)");
    if (!cli_is_model_path(a.out) && strcmp(a.out, "-") != 0)
        return cli_usage_error(cmd, "a model's output must end in .safetensors or .safetensors.zst");
    sgfp4_model_policy *policy = NULL;
    if (!make_policy(cmd, &a, &policy))
        return CLI_EXIT_FAIL;
    sgfp4_model *src = NULL;
    model_output mo;
    if (!model_cli_open(cmd, a.in, &src)) {
        sgfp4_model_policy_free(policy);
        return CLI_EXIT_FAIL;
    }
    rc = CLI_EXIT_FAIL;
    if (model_output_open(cmd, a.out, a.zstd_level, 1, &mo)) {
        progress_bar bar;
        progress_bar_init(&bar, "encode");
        sgfp4_model_write_options wo;
        sgfp4_model_write_options_init(&wo);
        wo.progress = progress_bar_update;
        wo.progress_user = &bar;
        /* The spool lives beside the output (that file system must hold the result anyway;
         * /tmp may be a RAM disk). */
        char spool_dir[4096] = ".";
        const char *slash = strrchr(a.out, '/');
        if (slash && (size_t)(slash - a.out) < sizeof spool_dir)
            snprintf(spool_dir, sizeof spool_dir, "%.*s", (int)(slash - a.out + 1), a.out);
        if (strcmp(a.out, "-") != 0)
            wo.temp_dir = spool_dir;
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_model_encode(src, policy, &mo.sink, &wo, &diag);
        progress_bar_done(&bar);
        bool ok = s == SGFP4_OK;
        if (!ok)
            cli_error(cmd, "%s: %s [%s]", a.in, diag.message, sgfp4_status_name(s));
        ok = ok && model_output_finish(cmd, &mo);
        const char *tmp = model_output_temp_path(&mo);
        ok = ok && (!tmp || check_encoded(cmd, tmp, src));
        if (ok && model_output_commit(cmd, &mo))
            rc = CLI_EXIT_OK;
        else if (!ok)
            model_output_abort(&mo);
    }
    sgfp4_model_close(src);
    sgfp4_model_policy_free(policy);
    return rc;
}

int cmd_model_decode(int argc, char **argv)
{
    const char *cmd = "decode";
    model_args a;
    int rc = parse_args(cmd, decode_help, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.out)
        return cli_usage_error(cmd, "no output (-o OUT)");
    if (!cli_is_model_path(a.out) && strcmp(a.out, "-") != 0)
        return cli_usage_error(cmd, "a model's output must end in .safetensors or .safetensors.zst");
    sgfp4_model *m = NULL;
    if (!model_cli_open(cmd, a.in, &m))
        return CLI_EXIT_FAIL;
    rc = CLI_EXIT_FAIL;
    model_output mo;
    if (model_output_open(cmd, a.out, a.zstd_level, 1, &mo)) {
        progress_bar bar;
        progress_bar_init(&bar, "decode");
        sgfp4_decode_options decode;
        sgfp4_decode_options_init(&decode);
        decode.threads = a.threads;
        sgfp4_model_write_options wo;
        sgfp4_model_write_options_init(&wo);
        wo.progress = progress_bar_update;
        wo.progress_user = &bar;
        wo.decode_dtype = a.dtype_given ? &a.dtype : NULL;
        wo.decode = &decode;
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_model_decode(m, &mo.sink, &wo, &diag);
        progress_bar_done(&bar);
        bool ok = s == SGFP4_OK;
        if (!ok)
            cli_error(cmd, "%s: %s [%s]", a.in, diag.message, sgfp4_status_name(s));
        ok = ok && model_output_finish(cmd, &mo);
        /* Self-check: the output must parse as a strict safetensors file. */
        sgfp4_model *back = NULL;
        const char *tmp = model_output_temp_path(&mo);
        ok = ok && (!tmp || model_cli_open(cmd, tmp, &back));
        ok = ok && (!back || sgfp4_model_tensor_count(back) == sgfp4_model_tensor_count(m));
        sgfp4_model_close(back);
        if (ok && model_output_commit(cmd, &mo))
            rc = CLI_EXIT_OK;
        else if (!ok)
            model_output_abort(&mo);
    }
    sgfp4_model_close(m);
    return rc;
}

int cmd_model_verify(int argc, char **argv)
{
    const char *cmd = "verify";
    model_args a;
    int rc = parse_args(cmd, verify_help, argc, argv, &a);
    if (rc >= 0)
        return rc;
    sgfp4_model *m = NULL;
    if (!model_cli_open(cmd, a.in, &m))
        return CLI_EXIT_FAIL;
    check_stats st;
    const bool ok = check_model(cmd, a.in, m, &st);
    if (ok && !cli_quiet) {
        if (sgfp4_model_is_quantized(m))
            printf("%s: OK: %zu tensors, %zu quantized (v2 %zu, v1 %zu), every container valid "
                   "and matching its manifest sha256; D6 alignment: %s\n",
                   a.in, st.tensors, st.v1 + st.v2, st.v2, st.v1, st.aligned ? "yes" : "no");
        else
            printf("%s: OK: a valid safetensors file with %zu tensors (no sgfp4 manifest)\n",
                   a.in, st.tensors);
    }
    sgfp4_model_close(m);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
