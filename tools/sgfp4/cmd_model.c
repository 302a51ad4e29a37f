/* The whole-model forms of encode, decode and verify (docs/model.md): entered when the input
 * is a .safetensors[.zst] file.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

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
    d->threads = a->threads;
    if (a->given[KEY_EMBEDDINGS])
        sgfp4_model_policy_set_embeddings(*out, a->quantize_embeddings);
    return true;
}

/* Every container strictly with its sha256, and the D6 layout; prints the first failure. */
static bool check_model(const char *cmd, const char *path, const sgfp4_model *m,
                        sgfp4_model_verify_result *r)
{
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_verify(m, r, &diag);
    if (s != SGFP4_OK)
        return cli_error(cmd, "%s: %s [%s]", path, diag.message, sgfp4_status_name(s)), false;
    return true;
}

/* Self-check of a freshly written quantized model: verified, D6-aligned, and every
 * pass-through tensor byte for byte the source's. */
static bool check_encoded(const char *cmd, const char *path, const sgfp4_model *src)
{
    sgfp4_model *m = NULL;
    if (!cli_model_open(cmd, path, &m))
        return false;
    sgfp4_model_verify_result r;
    bool ok = check_model(cmd, path, m, &r);
    if (ok && (!sgfp4_model_is_quantized(m) || !r.d6_aligned ||
               r.tensors != sgfp4_model_tensor_count(src))) {
        cli_error(cmd, "internal error: the written model fails the D6 layout self-check");
        ok = false;
    }
    for (size_t k = 0; ok && k < r.tensors; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_tensor *s = sgfp4_model_tensor_find(src, t->name);
        if (!s || (!t->quant && (t->nbytes != s->nbytes || memcmp(t->data, s->data, t->nbytes)))) {
            cli_error(cmd, "internal error: tensor '%s' differs from the source", t->name);
            ok = false;
        }
        sgfp4_model_tensor_evict(m, t);
        sgfp4_model_tensor_evict(src, s);
    }
    sgfp4_model_close(m);
    return ok;
}

/* The output of encode and decode: a model path, or '-'. -1 when it is one. */
static int check_output_path(const cli_args *a)
{
    if (!a->out)
        return cli_usage_error(a->command, "no output (-o OUT)");
    if (!cli_is_model_path(a->out) && strcmp(a->out, "-") != 0)
        return cli_usage_error(a->command,
                               "a model's output must end in .safetensors or .safetensors.zst");
    return -1;
}

/* Writes the quantized model of m with `policy`, or (policy NULL) the model restored from m,
 * into a new output; checks the written file with `check`; commits it. */
static int write_model(const cli_args *a, const sgfp4_model *m, const sgfp4_model_policy *policy,
                       sgfp4_model_write_options *wo,
                       bool (*check)(const char *cmd, const char *path, const sgfp4_model *src))
{
    char err[FILEIO_ERROR_SIZE];
    fileio_model_output mo;
    if (!fileio_model_output_open(a->out, a->zstd_level, &mo, err))
        return cli_error(a->command, "%s", err);
    progress_bar bar;
    progress_bar_init(&bar, a->command);
    wo->progress = progress_bar_update;
    wo->progress_user = &bar;
    sgfp4_diag diag;
    const sgfp4_status s = policy ? sgfp4_model_encode(m, policy, &mo.sink, wo, &diag)
                                  : sgfp4_model_decode(m, &mo.sink, wo, &diag);
    progress_bar_done(&bar);
    bool ok = s == SGFP4_OK;
    if (!ok)
        cli_error(a->command, "%s: %s [%s]", a->in, diag.message, sgfp4_status_name(s));
    if (ok && !(ok = fileio_model_output_finish(&mo, err)))
        cli_error(a->command, "%s", err);
    ok = ok && (!mo.out.tmp_path || check(a->command, mo.out.tmp_path, m));
    if (!ok) {
        fileio_model_output_abort(&mo);
        return CLI_EXIT_FAIL;
    }
    if (!fileio_model_output_commit(&mo, err))
        return cli_error(a->command, "%s", err);
    return CLI_EXIT_OK;
}

int cmd_encode_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, 0};
    int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0 || (rc = check_output_path(a)) >= 0)
        return rc;
    if (a->given[KEY_BPW] && a->bpw > 32)
        return cli_usage_error(a->command, "--bpw wants a number in (0, 32] for a model");
    sgfp4_model *src = NULL;
    sgfp4_model_policy *policy = NULL;
    if (!make_policy(a, &policy))
        return CLI_EXIT_FAIL;
    if (cli_model_open(a->command, a->in, &src)) {
        sgfp4_model_write_options wo;
        sgfp4_model_write_options_init(&wo);
        /* The spool lives beside the output (that file system must hold the result anyway;
         * /tmp may be a RAM disk). */
        char spool_dir[4096] = ".";
        const char *slash = strrchr(a->out, '/');
        if (slash && (size_t)(slash - a->out) < sizeof spool_dir)
            snprintf(spool_dir, sizeof spool_dir, "%.*s", (int)(slash - a->out + 1), a->out);
        if (strcmp(a->out, "-") != 0)
            wo.temp_dir = spool_dir;
        rc = write_model(a, src, policy, &wo, check_encoded);
    } else {
        rc = CLI_EXIT_FAIL;
    }
    sgfp4_model_close(src);
    sgfp4_model_policy_free(policy);
    return rc;
}

/* The output of a decode must parse as a strict safetensors file with every tensor. */
static bool check_decoded(const char *cmd, const char *path, const sgfp4_model *src)
{
    sgfp4_model *back = NULL;
    if (!cli_model_open(cmd, path, &back))
        return false;
    const bool ok = sgfp4_model_tensor_count(back) == sgfp4_model_tensor_count(src);
    if (!ok)
        cli_error(cmd, "internal error: the restored model lacks tensors");
    sgfp4_model_close(back);
    return ok;
}

int cmd_decode_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_BACKEND, KEY_STORE, 0};
    int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0 || (rc = check_output_path(a)) >= 0)
        return rc;
    sgfp4_model *m = NULL;
    if (!cli_model_open(a->command, a->in, &m))
        return CLI_EXIT_FAIL;
    const sgfp4_decode_options decode = cli_decode_options(a);
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.decode_dtype = a->given[KEY_DTYPE] ? &a->dtype : NULL;
    wo.decode = &decode;
    rc = write_model(a, m, NULL, &wo, check_decoded);
    sgfp4_model_close(m);
    return rc;
}

int cmd_verify_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_STRICT, KEY_AGAINST,
                                      KEY_BACKEND, KEY_THREADS, 0};
    const int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0)
        return rc;
    sgfp4_model *m = NULL;
    if (!cli_model_open(a->command, a->in, &m))
        return CLI_EXIT_FAIL;
    sgfp4_model_verify_result r;
    const bool ok = check_model(a->command, a->in, m, &r);
    if (ok && cli_verbosity > 0) {
        if (sgfp4_model_is_quantized(m))
            printf("%s: OK: %zu tensors, %zu quantized (v2 %zu, v1 %zu), every container valid "
                   "and matching its manifest sha256; D6 alignment: %s\n",
                   a->in, r.tensors, r.quantized_v1 + r.quantized_v2, r.quantized_v2,
                   r.quantized_v1, r.d6_aligned ? "yes" : "no");
        else
            printf("%s: OK: a valid safetensors file with %zu tensors (no sgfp4 manifest)\n",
                   a->in, r.tensors);
    }
    sgfp4_model_close(m);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
