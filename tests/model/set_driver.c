/* A small test driver over the library's whole-model API, sets included, for the shell
 * tests of tests/model/ (the CLI is checked by its own tests):
 *
 *   set_driver encode-set IN OUTDIR      quantize IN (an index or a file) into a set in OUTDIR:
 *                                        shard NAME.safetensors -> NAME.sgfp4.safetensors,
 *                                        index model.sgfp4.safetensors.index.json
 *   set_driver decode-set IN OUTDIR      restore a quantized set: NAME.sgfp4.safetensors ->
 *                                        NAME.safetensors, index model.safetensors.index.json
 *   set_driver encode IN OUT             quantize IN (a set or a file) into one file
 *   set_driver decode IN OUT [--dtype bf16]   restore IN into one file
 *   set_driver verify IN                 every quantized tensor: strict open + sha256
 *
 * Each writing command prints the job's summary line. Files are written under a temporary
 * name and renamed when the job succeeded; a failed job removes what it wrote.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgfp4_model.h"

typedef struct outputs {
    const char *dir;
    FILE *f;
    char tmp[64][600], final[64][600];
    size_t count;
} outputs;

static sgfp4_status put(void *user, const void *data, size_t size)
{
    return fwrite(data, 1, size, user) == size ? SGFP4_OK : SGFP4_ERR_IO;
}

static sgfp4_status out_open(void *user, size_t file, const char *name, sgfp4_sink *sink,
                             sgfp4_diag *diag)
{
    outputs *o = user;
    if (file >= 64) {
        snprintf(diag->message, sizeof diag->message, "more files than this driver keeps");
        return SGFP4_ERR_LIMIT;
    }
    snprintf(o->final[file], sizeof o->final[file], "%s/%s", o->dir, name);
    snprintf(o->tmp[file], sizeof o->tmp[file], "%s/%s.tmp", o->dir, name);
    o->f = fopen(o->tmp[file], "wb");
    if (!o->f)
        return SGFP4_ERR_IO;
    o->count = file + 1;
    *sink = (sgfp4_sink){put, o->f};
    return SGFP4_OK;
}

static sgfp4_status out_close(void *user, size_t file, sgfp4_status status, sgfp4_diag *diag)
{
    (void)file;
    (void)diag;
    outputs *o = user;
    const int bad = fclose(o->f) != 0;
    o->f = NULL;
    return status == SGFP4_OK && bad ? SGFP4_ERR_IO : SGFP4_OK;
}

/* After the job: rename every file into place, or remove every one. */
static int finish(outputs *o, int ok)
{
    for (size_t k = 0; k < o->count; k++) {
        if (ok && rename(o->tmp[k], o->final[k]) != 0)
            ok = 0;
        if (!ok)
            remove(o->tmp[k]);
    }
    return ok;
}

static void print_summary(const char *what, const sgfp4_model_summary *s)
{
    printf("%s: %zu tensors, %zu quantized, %llu -> %llu data bytes (%llu written in %zu "
           "files), %.4f bits/weight, %zu above target, %zu below, %.2f s\n",
           what, s->tensors, s->quantized, (unsigned long long)s->bytes_in,
           (unsigned long long)s->bytes_out, (unsigned long long)s->file_bytes_out, s->files,
           s->bits_per_weight, s->above_target, s->below_target, s->seconds);
}

/* Output shard names from the input's: swap the `from` ending for `to`. */
static char **shard_names(const sgfp4_model *m, const char *input, const char *from,
                          const char *to)
{
    const size_t n = sgfp4_model_shard_count(m);
    char **names = calloc(n, sizeof *names);
    for (size_t k = 0; k < n; k++) {
        const char *src = sgfp4_model_shard_name(m, k);
        if (!src) { /* a single file: its base name */
            const char *slash = strrchr(input, '/');
            src = slash ? slash + 1 : input;
        }
        const size_t len = strlen(src), cut = strlen(from);
        const size_t keep = len >= cut && strcmp(src + len - cut, from) == 0 ? len - cut : len;
        names[k] = malloc(keep + strlen(to) + 1);
        memcpy(names[k], src, keep);
        strcpy(names[k] + keep, to);
    }
    return names;
}

static int fail(const char *what, const sgfp4_diag *diag, sgfp4_status s)
{
    fprintf(stderr, "set_driver: %s: %s [%s]\n", what, diag->message, sgfp4_status_name(s));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: set_driver encode-set|decode-set|encode|decode|verify IN [OUT]\n");
        return 2;
    }
    const char *cmd = argv[1], *in = argv[2], *out = argc > 3 ? argv[3] : NULL;
    sgfp4_diag diag;
    sgfp4_model *m = NULL;
    sgfp4_status s = sgfp4_model_open(in, &m, NULL, &diag);
    if (s != SGFP4_OK)
        return fail(in, &diag, s);
    int rc = 0;
    sgfp4_model_policy *policy = NULL;
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    sgfp4_model_write_options wo;
    sgfp4_model_write_options_init(&wo);
    wo.summary = &summary;
    sgfp4_dtype bf16 = SGFP4_DTYPE_BF16;
    if (argc > 5 && strcmp(argv[4], "--dtype") == 0 && strcmp(argv[5], "bf16") == 0)
        wo.decode_dtype = &bf16;
    if (sgfp4_model_policy_create(&policy) != SGFP4_OK)
        return 1;
    if (strcmp(cmd, "verify") == 0) {
        size_t quantized = 0;
        for (size_t k = 0; rc == 0 && k < sgfp4_model_tensor_count(m); k++) {
            const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
            if (!t->quant)
                continue;
            quantized++;
            if ((s = sgfp4_model_tensor_verify(m, t, &diag)) != SGFP4_OK)
                rc = fail(in, &diag, s);
            sgfp4_model_tensor_evict(m, t);
        }
        if (rc == 0 && !sgfp4_model_is_quantized(m))
            rc = fail(in, &(sgfp4_diag){.message = "not a quantized model"}, SGFP4_ERR_ARGUMENT);
        if (rc == 0)
            printf("verify OK: %zu tensors, %zu quantized, %zu shards\n",
                   sgfp4_model_tensor_count(m), quantized, sgfp4_model_shard_count(m));
    } else if (out && (strcmp(cmd, "encode-set") == 0 || strcmp(cmd, "decode-set") == 0)) {
        const int encode = cmd[0] == 'e';
        char **names = encode ? shard_names(m, in, ".safetensors", ".sgfp4.safetensors")
                              : shard_names(m, in, ".sgfp4.safetensors", ".safetensors");
        const char *index = encode ? "model.sgfp4.safetensors.index.json"
                                   : "model.safetensors.index.json";
        outputs o = {.dir = out};
        const sgfp4_model_set_sinks sinks = {out_open, out_close, &o};
        s = encode ? sgfp4_model_encode_set(m, policy, (const char *const *)names, index, &sinks,
                                            &wo, &diag)
                   : sgfp4_model_decode_set(m, (const char *const *)names, index, &sinks, &wo,
                                            &diag);
        if (!finish(&o, s == SGFP4_OK))
            rc = s != SGFP4_OK ? fail(in, &diag, s) : 1;
        else
            print_summary(cmd, &summary);
        for (size_t k = 0; k < sgfp4_model_shard_count(m); k++)
            free(names[k]);
        free(names);
    } else if (out && (strcmp(cmd, "encode") == 0 || strcmp(cmd, "decode") == 0)) {
        outputs o = {.dir = "."};
        snprintf(o.final[0], sizeof o.final[0], "%s", out);
        snprintf(o.tmp[0], sizeof o.tmp[0], "%s.tmp", out);
        o.f = fopen(o.tmp[0], "wb");
        o.count = 1;
        const sgfp4_sink sink = {put, o.f};
        s = o.f ? cmd[0] == 'e' ? sgfp4_model_encode(m, policy, &sink, &wo, &diag)
                                : sgfp4_model_decode(m, &sink, &wo, &diag)
                : SGFP4_ERR_IO;
        if (o.f && fclose(o.f) != 0 && s == SGFP4_OK)
            s = SGFP4_ERR_IO;
        if (!finish(&o, s == SGFP4_OK))
            rc = fail(in, &diag, s);
        else
            print_summary(cmd, &summary);
    } else {
        fprintf(stderr, "set_driver: unknown command or missing output\n");
        rc = 2;
    }
    sgfp4_model_policy_free(policy);
    sgfp4_model_close(m);
    return rc;
}
