/* sgfp4 encode IN -o OUT: quantizes one float tensor (raw float32, .npy f32/f16, or --tensor
 * NAME of a safetensors file). The container is opened strictly and decoded before it is
 * renamed into place; if that fails it is a bug: exit 1, no file. Whole models (.safetensors
 * without --tensor) go to cmd_model.c.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tool_clock.h"

static const cli_accept options[] = {
    {KEY_OUTPUT, NULL},
    {KEY_TENSOR, NULL},
    {KEY_SHAPE, "tensor shape (required for raw float32 input)"},
    {KEY_PROFILE, "container profile (default v2; an .fp4 output means v1)"},
    {KEY_BPW, NULL},
    {KEY_POLICY, "v2 split policy: rate (default) or threshold (the spec's); for a whole "
                 "model also a JSON policy FILE (model.md)"},
    {KEY_THRESHOLD, NULL},
    {KEY_DELTA, NULL},
    {KEY_FIT, NULL},
    {KEY_METRIC, NULL},
    {KEY_IMPORTANCE, NULL},
    {KEY_THREADS, "encoder threads (default, and 0: every online CPU); the bytes do not depend "
                  "on it"},
    {KEY_EMBEDDINGS, NULL},
    {KEY_RATES, NULL},
    {KEY_ZSTD_LEVEL, "whole models: zstd level of a .zst output, 1..22 (default 3)"},
    {KEY_IGNORE_TOTAL_SIZE, NULL},
    {KEY_FORCE, NULL},
    {0, NULL},
};

/* Tensor `name` of a safetensors file as float32, in its D6 2-D view. */
static float *load_tensor(const cli_args *a, uint64_t *rows, uint64_t *cols)
{
    sgfp4_model *model = NULL;
    if (!cli_model_open(a, a->in, &model))
        return NULL;
    float *m = NULL;
    sgfp4_diag diag;
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(model, a->tensor);
    if (!t) {
        cli_error(a->command, "%s: no tensor named '%s'", a->in, a->tensor);
    } else if (!sgfp4_st_dtype_is_quantizable(t->dtype)) {
        cli_error(a->command, "%s: tensor '%s' is %s, not F32, F16, BF16, F8_E4M3 or F8_E5M2",
                  a->in, a->tensor, sgfp4_st_dtype_name(t->dtype));
    } else if (sgfp4_model_tensor_matrix(t, rows, cols) != SGFP4_OK) {
        cli_error(a->command, "%s: tensor '%s' is empty", a->in, a->tensor);
    } else if (a->given[KEY_SHAPE] && (a->rows != *rows || a->cols != *cols)) {
        cli_error(a->command, "%s: tensor '%s' is %llux%llu, not the --shape given", a->in,
                  a->tensor, (unsigned long long)*rows, (unsigned long long)*cols);
    } else if (t->elements > SIZE_MAX / 4 || !(m = malloc((size_t)t->elements * 4 + 1))) {
        cli_error(a->command, "out of memory for tensor '%s'", a->tensor);
    } else if (sgfp4_model_tensor_to_f32(t, 1, m, (size_t)t->elements * 4, &diag) != SGFP4_OK) {
        cli_error(a->command, "%s: %s", a->in, diag.message);
        free(m);
        m = NULL;
    }
    sgfp4_model_close(model);
    return m;
}

/* Raw float32 or .npy. A raw input without --shape is a usage error (*rc = 2). */
static float *load_matrix(const cli_args *a, uint64_t *rows, uint64_t *cols, int *rc)
{
    fileio_input in;
    char err[FILEIO_ERROR_SIZE];
    if (!fileio_read(a->in, &in, err))
        return cli_error(a->command, "%s", err), NULL;
    float *m = NULL;
    *rows = a->rows;
    *cols = a->cols;
    const bool npy = fileio_is_npy(in.data, in.size);
    const fileio_kind kind = fileio_sniff_bytes(in.data, in.size < 16 ? in.size : 16, in.size);
    const bool model = kind == FILEIO_KIND_SAFETENSORS || kind == FILEIO_KIND_INDEX ||
                       kind == FILEIO_KIND_ZSTD;
    if (!npy && !a->given[KEY_SHAPE] && model && fileio_is_stream(a->in))
        cli_error(a->command, "%s: %s", a->in, cli_stream_model_message);
    else if (!npy && cli_ends_with(a->in, ".npy"))
        cli_error(a->command, "%s: not a NumPy file (no \\x93NUMPY magic)", a->in);
    else if (!a->given[KEY_SHAPE] && !npy)
        *rc = cli_usage_error(a->command, "%s: raw float32 input needs --shape OxI", a->in);
    else if (!(m = fileio_matrix(&in, a->in, rows, cols, err)))
        cli_error(a->command, "%s", err);
    fileio_input_release(&in);
    return m;
}

/* The encoder options of the command line; -1, or the exit code of a usage error. */
static int encoder_options(const cli_args *a, sgfp4_encode_options *o)
{
    sgfp4_encode_options_init(o);
    o->profile = a->given[KEY_PROFILE]            ? a->profile
                 : cli_ends_with(a->out, ".fp4") ? SGFP4_PROFILE_V1
                                                  : SGFP4_PROFILE_V2;
    o->target_bpw = a->bpw;
    o->fit = a->fit;
    o->metric = a->metric;
    o->threads = a->threads;
    if (a->given[KEY_THRESHOLD])
        o->threshold = a->threshold;
    if (a->given[KEY_DELTA])
        o->delta = a->delta;
    if (a->policy && strcmp(a->policy, "threshold") != 0 && strcmp(a->policy, "rate") != 0)
        return cli_usage_error(a->command, "--policy wants rate or threshold");
    if (a->policy && strcmp(a->policy, "threshold") == 0) {
        if (a->given[KEY_BPW])
            return cli_usage_error(a->command, "--bpw and --policy threshold exclude each other");
        o->policy = SGFP4_POLICY_THRESHOLD;
    }
    if (o->profile == SGFP4_PROFILE_V1 && (a->given[KEY_BPW] || a->policy))
        return cli_usage_error(a->command, "--bpw and --policy apply to v2 only (v1 is fixed-rate)");
    if (a->given[KEY_METRIC] && (o->profile == SGFP4_PROFILE_V1 || o->policy != SGFP4_POLICY_RATE))
        return cli_usage_error(a->command, "--metric applies to the v2 rate policy (v1 and the "
                                           "threshold policy keep the reference rules)");
    return -1;
}

/* The whole-model policy's low-rate warning (sgfp4_model_decision.warning), for one tensor:
 * below the cheapest all-FP4 tree (16x16 leaves, 4.125 bits per weight) part of the weights
 * must be ternary. */
static void warn_low_rate(const cli_args *a, const sgfp4_encode_options *o)
{
    if (o->profile == SGFP4_PROFILE_V2 && o->policy == SGFP4_POLICY_RATE &&
        o->target_bpw < 4.125 && cli_verbosity > 0)
        fprintf(stderr, "sgfp4: %s: warning: %.3g bits per weight is below 4.125: part of the "
                        "weights will be ternary, which can break the model (encoder.md, "
                        "\"Low rates\")\n", a->command, o->target_bpw);
}

/* The rate target's verdict (the rule of the whole-model summary): a container larger than
 * the target allows missed it (the shape or the format cannot get there), one more than 1%
 * below it stayed below (the finest trees need no more). */
static void report_target(const cli_args *a, const sgfp4_encode_options *o, uint64_t rows,
                          uint64_t cols, size_t size, double rel_l2)
{
    const double weights = (double)rows * (double)cols, bpw = 8.0 * (double)size / weights;
    if (o->profile != SGFP4_PROFILE_V2 || o->policy != SGFP4_POLICY_RATE || cli_verbosity < 1)
        return;
    if ((double)size * 8.0 > o->target_bpw * weights)
        fprintf(stderr, "sgfp4: %s: warning: --bpw %g cannot be met: the container takes %.2f "
                        "bits/weight, the least the encoder reaches for a %llux%llu tensor (one "
                        "leaf per 64x64 block)\n",
                a->command, o->target_bpw, bpw, (unsigned long long)rows,
                (unsigned long long)cols);
    else if ((double)size * 8.0 < 0.99 * o->target_bpw * weights)
        fprintf(stderr, "sgfp4: %s: warning: --bpw %g is more than the finest trees need: the "
                        "container takes %.2f bits/weight\n", a->command, o->target_bpw, bpw);
    if (rows < 64 && rel_l2 > 0.1)
        fprintf(stderr, "sgfp4: %s: note: %llu row%s fill%s %.0f%% of each 64-row block; the "
                        "error (rel-L2 %.3f) and the size are those of the padded blocks (a "
                        "whole-model encode passes vectors through)\n", a->command,
                (unsigned long long)rows, rows > 1 ? "s" : "", rows > 1 ? "" : "s",
                100.0 * (double)rows / 64.0, rel_l2);
}

/* Writes the container and commits the output. The commit runs after a failed write too: it
 * then fails, says why in err, and removes the temporary file. */
static bool write_and_commit(fileio_output *out, const void *bytes, size_t size, char *err)
{
    const bool written = fileio_output_write(out, bytes, size);
    const bool committed = fileio_output_commit(out, err);
    return written && committed;
}

static int run(const cli_args *a)
{
    if (!a->tensor && cli_is_model_input(a))
        return cmd_encode_model(a);
    static const int model_only[] = {KEY_EMBEDDINGS, KEY_ZSTD_LEVEL, KEY_IMPORTANCE, KEY_RATES,
                                     0};
    /* the limits on model inputs: a raw or .npy tensor has no header, index or zstd frame */
    static const int model_input_only[] = {KEY_MAX_HEADER_BYTES, KEY_MAX_TENSORS,
                                           KEY_MAX_ZSTD_RATIO, KEY_MAX_TEMP_SPACE,
                                           KEY_MAX_DECOMPRESSED, 0};
    int rc = cli_reject(a, "a single tensor", model_only);
    if (rc < 0 && !a->tensor)
        rc = cli_reject(a, "a raw or .npy input", model_input_only);
    if (rc < 0 && !a->tensor && a->given[KEY_IGNORE_TOTAL_SIZE])
        rc = cli_usage_error(a->command, "--ignore-total-size applies to sharded sets");
    if (rc >= 0)
        return rc;
    if (!a->in)
        return cli_usage_error(a->command, "no input given");
    if (!a->out)
        return cli_usage_error(a->command, "no output given (-o OUT)");
    sgfp4_encode_options o;
    if ((rc = encoder_options(a, &o)) >= 0)
        return rc;
    warn_low_rate(a, &o);
    uint64_t rows, cols;
    rc = CLI_EXIT_FAIL;
    float *src = a->tensor ? load_tensor(a, &rows, &cols) : load_matrix(a, &rows, &cols, &rc);
    if (!src)
        return rc;
    fileio_output out;
    if (!cli_output_open(a, a->out, &out)) {
        free(src);
        return CLI_EXIT_FAIL;
    }
    void *bytes = NULL;
    size_t size = 0;
    sgfp4_encode_report report;
    sgfp4_encode_report_init(&report);
    o.report = &report;
    const double t0 = tool_now();
    const double c0 = tool_cpu_now();
    sgfp4_diag diag;
    sgfp4_status s = sgfp4_encode_alloc(src, rows, cols, 0, &bytes, &size, &o, &diag);
    const double seconds = tool_now() - t0;
    const double cpu_seconds = tool_cpu_now() - c0;
    sgfp4_tensor *t = NULL;
    sgfp4_quality q;
    sgfp4_quality_init(&q);
    char err[FILEIO_ERROR_SIZE];
    const sgfp4_decode_options d = cli_decode_options(a);
    if (s != SGFP4_OK) {
        cli_error(a->command, "%s: %s [%s]", a->in,
                  diag.message[0] ? diag.message : sgfp4_status_str(s), sgfp4_status_name(s));
    } else if ((s = sgfp4_tensor_open(bytes, size, o.profile, rows, cols, &t, NULL, &diag))) {
        cli_error(a->command, "BUG: the encoded container fails validation: %s", diag.message);
    } else if ((s = sgfp4_tensor_compare(t, src, 0, &q, &d)) == SGFP4_ERR_NOMEM) {
        cli_error(a->command, "out of memory while checking the encoded container [NOMEM]");
    } else if (s != SGFP4_OK || q.nonfinite) {
        cli_error(a->command, "BUG: the encoded container does not decode to finite values");
    } else if (!write_and_commit(&out, bytes, size, err)) {
        cli_error(a->command, "%s", err);
    } else {
        rc = CLI_EXIT_OK;
        const double n = (double)rows * (double)cols;
        if (cli_verbosity > 0)
            fprintf(stderr,
                    "%s: %s %llux%llu, %zu bytes, %.4f bits/weight, rel-L2 %.5f, %.3f s "
                    "(%.2f M weights/s; %.2f M per CPU-second, i.e. per core)\n",
                    a->out, cli_profile_name(o.profile), (unsigned long long)rows,
                    (unsigned long long)cols, size, size * 8.0 / n, q.rel_l2, seconds,
                    n / seconds / 1e6, cpu_seconds > 0 ? n / cpu_seconds / 1e6 : 0.0);
        report_target(a, &o, rows, cols, size, q.rel_l2);
        if (report.clipped && cli_verbosity > 0)
            fprintf(stderr, "sgfp4: %s: warning: %s: %llu weight%s beyond the binary16 range "
                            "(largest |w| %.6g) encoded as +-65504, the largest value the "
                            "format stores\n", a->command, a->in,
                    (unsigned long long)report.clipped, report.clipped > 1 ? "s" : "",
                    report.max_abs);
    }
    fileio_output_abort(&out);
    sgfp4_tensor_close(t);
    sgfp4_free(bytes);
    free(src);
    return rc;
}

const cli_command cli_encode = {
    "encode", "quantize a tensor (raw f32, .npy, a model's tensor) or a whole model",
    "usage: sgfp4 encode IN -o OUT [--shape OxI] [options]\n"
    "       sgfp4 encode MODEL --tensor NAME -o OUT [options]\n"
    "       sgfp4 encode MODEL -o OUT.sgfp4.safetensors[.zst] [options]\n"
    "       sgfp4 encode MODEL -o DIR/OUT.sgfp4.safetensors.index.json [options]   (a set)\n"
    "\n"
    "Quantizes a float tensor: IN is raw little-endian float32 (needs --shape), a .npy file\n"
    "(float32 or float16), or with --tensor NAME a tensor of a model (F32, F16, BF16, FP8).\n"
    "OUT is a v2 stream (.sgfp4) or, with --profile v1 or an .fp4 name, a v1 container. The\n"
    "result is checked (strict open + decode) before it is renamed into place; a --bpw target\n"
    "it cannot meet is said so.\n"
    "A MODEL (a .safetensors file, .zst, or a sharded set's index, told by content) without\n"
    "--tensor is quantized whole: each matrix the policy picks becomes an SGFP4 container\n"
    "described by the sgfp4 manifest, the rest passes through (model.md); --bpw,\n"
    "--profile, --policy, --threshold, --delta, --fit and --metric set every quantized tensor's\n"
    "options, a policy file's rules override them; --importance FILE weights each tensor's\n"
    "error by the vectors NAME (columns) and NAME:rows of a safetensors file and, where it\n"
    "holds NAME:hessian, calibrates the tensor's encode with that input Hessian (the\n"
    "summary counts them); --rates sensitivity then lets the tensors at the default rate\n"
    "share their bits by the predicted cost of their errors. A --bpw below\n"
    "4.125 is warned about (part of the weights become ternary). OUT ending in .zst is\n"
    "zstd-compressed; OUT ending in index.json writes a set, one shard per input shard\n"
    "(NAME.safetensors -> NAME.sgfp4.safetensors) and the index last. The output is verified\n"
    "before it replaces anything; a closing summary goes to stderr. An existing OUT is\n"
    "replaced only with -f; an output that is an input is refused.\n",
    options, run};
