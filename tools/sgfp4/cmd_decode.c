/* sgfp4 decode IN -o OUT --shape OxI [--profile v1|v2] [--dtype f32|f16|bf16]
 *                        [--backend B] [--threads N] [--store auto|cached|streaming]
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: sgfp4 decode IN -o OUT --shape OxI [options]\n"
    "       sgfp4 decode MODEL.sgfp4.safetensors -o MODEL.safetensors [--dtype ...]\n"
    "\n"
    "Decodes an SGFP4 container to a row-major tensor: raw little-endian, or NumPy .npy\n"
    "when OUT ends in .npy. IN or OUT may be '-' (stdin / stdout).\n"
    "\n"
    "  -o, --output OUT      output path (required)\n"
    "  --shape OxI           logical tensor shape (required for bare containers)\n"
    "  --profile v1|v2       container profile (default: 'SGF4' magic, else extension)\n"
    "  --dtype f32|f16|bf16  output type (default f32; f16/bf16 rounded to nearest even)\n"
    "  --backend B           auto (default), cpu, scalar (the reference), generic, avx2,\n"
    "                        avx512, neon (one CPU kernel set), vulkan\n"
    "  --threads N           CPU threads (default 1)\n"
    "  --store S             CPU output stores: auto (default), cached, streaming\n"
    "  -q                    quiet\n";

static const char *const valued[] = {"-o", "--output", "--shape", "--profile", "--dtype",
                                     "--backend", "--threads", "--store", "--zstd-level", NULL};

int cmd_decode(int argc, char **argv)
{
    const char *cmd = "decode";
    if (cli_is_model_path(cli_first_positional(argc, argv, valued)))
        return cmd_model_decode(argc, argv);

    const char *in_path = NULL, *out_path = NULL, *value = NULL, *error = NULL;
    uint64_t rows = 0, cols = 0;
    bool profile_given = false, use_vulkan = false;
    sgfp4_profile profile = SGFP4_PROFILE_AUTO;
    sgfp4_dtype dtype = SGFP4_DTYPE_F32;
    sgfp4_decode_options options;
    sgfp4_decode_options_init(&options);
    options.threads = 1;

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
            if (error || !cli_parse_profile(value, &profile))
                return cli_usage_error(cmd, "--profile wants v1 or v2");
            profile_given = true;
        } else if (cli_take_option(argc, argv, &i, "--dtype", &value, &error)) {
            if (error || !cli_parse_dtype(value, &dtype))
                return cli_usage_error(cmd, "--dtype wants f32, f16 or bf16");
        } else if (cli_take_option(argc, argv, &i, "--backend", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "--backend needs a value");
            use_vulkan = strcmp(value, "vulkan") == 0;
            if (!use_vulkan && !cli_parse_backend(value, &options.backend))
                return cli_usage_error(cmd, "--backend wants " CLI_CPU_BACKENDS " (or vulkan)");
        } else if (cli_take_option(argc, argv, &i, "--threads", &value, &error)) {
            if (error || !cli_parse_uint(value, &options.threads))
                return cli_usage_error(cmd, "--threads wants a number");
        } else if (cli_take_option(argc, argv, &i, "--store", &value, &error)) {
            if (error || !cli_parse_store(value, &options.store))
                return cli_usage_error(cmd, "--store wants auto, cached or streaming");
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error(cmd, "unknown option %s", a);
        } else if (!in_path) {
            in_path = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument %s", a);
        }
    }
    if (!in_path)
        return cli_usage_error(cmd, "no input given");
    if (!out_path)
        return cli_usage_error(cmd, "no output given (-o OUT)");
    if (rows == 0)
        return cli_usage_error(cmd, "--shape OxI is required: a bare container carries no "
                                    "shape");
    const bool npy = cli_ends_with(out_path, ".npy");
    if (npy && dtype == SGFP4_DTYPE_BF16)
        return cli_usage_error(cmd, "NumPy has no bfloat16 dtype: write bf16 as a raw file");

    cli_input in;
    if (!cli_read_input(cmd, in_path, &in))
        return CLI_EXIT_FAIL;
    int rc = CLI_EXIT_FAIL;
    sgfp4_tensor *t = NULL;
    void *buffer = NULL;
    cli_output out = {0};
    if (!cli_resolve_profile(cmd, in_path, &in, profile_given, profile, &profile) ||
        !cli_open_tensor(cmd, in_path, &in, profile, rows, cols, &t))
        goto done;

    const size_t elem = sgfp4_dtype_size(dtype);
    if (rows * cols > SIZE_MAX / elem) {
        cli_error(cmd, "%s: tensor too large for this machine", in_path);
        goto done;
    }
    const size_t bytes = (size_t)(rows * cols) * elem;
    buffer = malloc(bytes);
    if (!buffer) {
        cli_error(cmd, "cannot allocate %zu bytes for the output", bytes);
        goto done;
    }
    sgfp4_status s;
    if (use_vulkan) {
        if (!cli_vulkan_decode(cmd, t, dtype, buffer, bytes))
            goto done;
    } else if ((s = sgfp4_decode(t, dtype, buffer, 0, bytes, &options)) != SGFP4_OK) {
        cli_error(cmd, "decode failed: %s", sgfp4_status_str(s));
        goto done;
    }
    if (!cli_output_open(cmd, out_path, &out))
        goto done;
    if (npy && !cli_npy_write_header(&out, dtype == SGFP4_DTYPE_F32 ? "<f4" : "<f2", rows,
                                     cols)) {
        cli_output_abort(&out);
        cli_error(cmd, "%s: cannot write", out_path);
        goto done;
    }
    cli_output_write(&out, buffer, bytes);
    if (!cli_output_commit(cmd, &out))
        goto done;
    rc = CLI_EXIT_OK;
done:
    free(buffer);
    sgfp4_tensor_close(t);
    cli_input_release(&in);
    return rc;
}
