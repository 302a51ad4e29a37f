/* sgfp4 encode IN -o OUT [--shape OxI] [--profile v1|v2] [--bpw X | --policy threshold]
 *                        [--delta D] [--threads N] [--fit best|reference] [--threshold T]
 * Quantizes one tensor (raw float32, .npy f32/f16, or --tensor NAME of a safetensors
 * file). The container is opened strictly and decoded before it is renamed into place; if
 * that fails it is a bug: exit 1, no file.
 * Whole models (.safetensors) go to cmd_model.c.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_encode.h"

static const char help[] =
    "usage: sgfp4 encode IN -o OUT [--shape OxI] [options]\n"
    "       sgfp4 encode MODEL.safetensors -o MODEL.sgfp4.safetensors [options]\n"
    "\n"
    "Quantizes a float tensor: IN is raw little-endian float32 (needs --shape), a .npy\n"
    "file (float32 or float16), or a .safetensors file with --tensor NAME. OUT is a v2\n"
    "stream (.sgfp4) or, with --profile v1 or an .fp4 name, a v1 container. The result is\n"
    "checked (strict open + decode) before it is renamed into place.\n"
    "\n"
    "  -o, --output OUT        output path (required)\n"
    "  --tensor NAME           encode tensor NAME of a .safetensors input (F32/F16/BF16)\n"
    "  --shape OxI             tensor shape (required for raw input)\n"
    "  --profile v1|v2         container profile (default v2; .fp4 output means v1)\n"
    "  --bpw X                 v2: rate-controlled quadtree at X bits per weight (default 4.5)\n"
    "  --policy rate|threshold v2 split policy (threshold: the spec's reference policy)\n"
    "  --threshold T           threshold policy: scale of the split thresholds (default 1)\n"
    "  --delta D               reference mode choice: T158 preference (default 0.10)\n"
    "  --fit best|reference    leaf fitting (default best)\n"
    "  --threads N             worker threads (default: all cores)\n"
    "  -q                      quiet\n";

static const char *const valued[] = {"-o",      "--output",    "--shape", "--profile",
                                     "--bpw",   "--policy",    "--delta", "--threads",
                                     "--tensor", "--fit",      "--threshold",
                                     "--embeddings", "--zstd-level", NULL}; /* last two: models */

static double clock_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Opens and decodes what was encoded; returns true when it is conformant and finite. */
static bool check_output(const char *cmd, const void *bytes, size_t size,
                         const sgfp4_encode_options *o, uint64_t rows, uint64_t cols,
                         const float *src, cli_quality *q)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_tensor_open(bytes, size, o->profile, rows, cols, &t, NULL, &diag);
    if (s != SGFP4_OK) {
        cli_error(cmd, "BUG: the encoded container fails validation: %s", diag.message);
        return false;
    }
    float *dec = cli_decode_f32(t, o->threads);
    sgfp4_tensor_close(t);
    if (!dec) {
        cli_error(cmd, "BUG: the encoded container does not decode");
        return false;
    }
    bool ok = true;
    for (uint64_t i = 0; i < rows * cols && ok; i++)
        ok = isfinite(dec[i]);
    if (ok)
        cli_quality_measure(src, dec, rows * cols, q);
    else
        cli_error(cmd, "BUG: the encoded container decodes to a non-finite value");
    free(dec);
    return ok;
}

int cmd_encode(int argc, char **argv)
{
    const char *cmd = "encode";
    bool one_tensor = false; /* --tensor NAME: one tensor of a safetensors file, here */
    for (int i = 1; i < argc; i++)
        one_tensor |= strncmp(argv[i], "--tensor", 8) == 0;
    if (!one_tensor && cli_is_model_path(cli_first_positional(argc, argv, valued)))
        return cmd_model_encode(argc, argv);

    const char *in_path = NULL, *out_path = NULL, *value = NULL, *error = NULL;
    const char *tensor_name = NULL;
    uint64_t rows = 0, cols = 0;
    bool profile_given = false, bpw_given = false, policy_given = false;
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(help, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(a, "-q") == 0) {
            cli_quiet = true;
        } else if (cli_take_option(argc, argv, &i, "-o", &value, &error) ||
                   cli_take_option(argc, argv, &i, "--output", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "%s %s", a, error);
            out_path = value;
        } else if (cli_take_option(argc, argv, &i, "--shape", &value, &error)) {
            if (error || !cli_parse_shape(value, &rows, &cols))
                return cli_usage_error(cmd, "--shape wants OxI with O, I >= 1");
        } else if (cli_take_option(argc, argv, &i, "--profile", &value, &error)) {
            if (error || !cli_parse_profile(value, &o.profile))
                return cli_usage_error(cmd, "--profile wants v1 or v2");
            profile_given = true;
        } else if (cli_take_option(argc, argv, &i, "--bpw", &value, &error)) {
            if (error || !cli_parse_double(value, &o.target_bpw) || !(o.target_bpw > 0) ||
                o.target_bpw > 64)
                return cli_usage_error(cmd, "--bpw wants a number in (0, 64]");
            bpw_given = true;
        } else if (cli_take_option(argc, argv, &i, "--policy", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "--policy needs a value");
            if (strcmp(value, "threshold") == 0)
                o.policy = SGFP4_POLICY_THRESHOLD;
            else if (strcmp(value, "rate") == 0)
                o.policy = SGFP4_POLICY_RATE;
            else
                return cli_usage_error(cmd, "--policy wants rate or threshold");
            policy_given = true;
        } else if (cli_take_option(argc, argv, &i, "--threshold", &value, &error)) {
            if (error || !cli_parse_double(value, &o.threshold) || !(o.threshold > 0))
                return cli_usage_error(cmd, "--threshold wants a positive number");
        } else if (cli_take_option(argc, argv, &i, "--delta", &value, &error)) {
            if (error || !cli_parse_double(value, &o.delta) || !(o.delta >= 0))
                return cli_usage_error(cmd, "--delta wants a number >= 0");
        } else if (cli_take_option(argc, argv, &i, "--fit", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "--fit needs a value");
            if (strcmp(value, "best") == 0)
                o.fit = SGFP4_FIT_BEST;
            else if (strcmp(value, "reference") == 0)
                o.fit = SGFP4_FIT_REFERENCE;
            else
                return cli_usage_error(cmd, "--fit wants best or reference");
        } else if (cli_take_option(argc, argv, &i, "--threads", &value, &error)) {
            if (error || !cli_parse_uint(value, &o.threads))
                return cli_usage_error(cmd, "--threads wants a number");
        } else if (cli_take_option(argc, argv, &i, "--tensor", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "--tensor needs a tensor name");
            tensor_name = value;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error(cmd, "unknown option %s", a);
        } else if (!in_path) {
            in_path = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument %s", a);
        }
    }
    o.threads = cli_threads(o.threads);
    if (!in_path)
        return cli_usage_error(cmd, "no input given");
    if (!out_path)
        return cli_usage_error(cmd, "no output given (-o OUT)");
    if (bpw_given && policy_given && o.policy == SGFP4_POLICY_THRESHOLD)
        return cli_usage_error(cmd, "--bpw and --policy threshold exclude each other");
    if (!profile_given)
        o.profile = cli_ends_with(out_path, ".fp4") ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
    if (o.profile == SGFP4_PROFILE_AUTO)
        o.profile = SGFP4_PROFILE_V2;
    if (o.profile == SGFP4_PROFILE_V1 && (bpw_given || policy_given))
        return cli_usage_error(cmd, "--bpw and --policy apply to v2 only (v1 is fixed-rate)");

    float *src = tensor_name ? cli_load_safetensor(cmd, in_path, tensor_name, &rows, &cols)
                             : cli_load_matrix(cmd, in_path, &rows, &cols);
    if (!src)
        return CLI_EXIT_FAIL;
    int rc = CLI_EXIT_FAIL;
    void *bytes = NULL;
    size_t size = 0;
    const double t0 = clock_seconds(CLOCK_MONOTONIC);
    const double c0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const sgfp4_status s = sgfp4_encode_alloc(src, rows, cols, 0, &bytes, &size, &o);
    const double seconds = clock_seconds(CLOCK_MONOTONIC) - t0;
    const double cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    cli_quality q;
    cli_output out = {0};
    if (s != SGFP4_OK) {
        cli_error(cmd, "%s: %s", in_path,
                  s == SGFP4_ERR_ARGUMENT ? "input has a non-finite value or bad options"
                                          : sgfp4_status_str(s));
        goto done;
    }
    if (!check_output(cmd, bytes, size, &o, rows, cols, src, &q))
        goto done;
    if (!cli_output_open(cmd, out_path, &out))
        goto done;
    cli_output_write(&out, bytes, size);
    if (!cli_output_commit(cmd, &out))
        goto done;
    if (!cli_quiet) {
        const double n = (double)rows * (double)cols;
        fprintf(stderr,
                "%s: %s %llux%llu, %zu bytes, %.4f bits/weight, rel-L2 %.5f, %.3f s "
                "(%.2f M weights/s; %.2f M per CPU-second, i.e. per core)\n",
                out_path, o.profile == SGFP4_PROFILE_V1 ? "v1" : "v2",
                (unsigned long long)rows, (unsigned long long)cols, size, size * 8.0 / n,
                q.ref_sq > 0 ? sqrt(q.sse / q.ref_sq) : sqrt(q.sse), seconds,
                n / seconds / 1e6, cpu_seconds > 0 ? n / cpu_seconds / 1e6 : 0.0);
    }
    rc = CLI_EXIT_OK;
done:
    sgfp4_free(bytes);
    free(src);
    return rc;
}
