/* sgfp4 decode IN -o OUT --shape OxI: a container to a row-major tensor (raw or .npy).
 * A quantized model (.safetensors) goes to cmd_model.c.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "cli.h"
#include "tool_clock.h"

static const cli_accept options[] = {
    {KEY_OUTPUT, NULL},
    {KEY_SHAPE, NULL},
    {KEY_PROFILE, NULL},
    {KEY_TENSOR, "a model: decode only tensor NAME, to .npy (its shape) or raw"},
    {KEY_DTYPE, "output type: f32 (the default for a container or a tensor), f16 or bf16 (round to "
                "nearest even); a model's default restores every quantized tensor to its source "
                "dtype, FP8 sources by rounding to nearest even, and f32|f16|bf16 skips that"},
    {KEY_BACKEND, NULL},
    {KEY_THREADS, NULL},
    {KEY_STORE, NULL},
    {KEY_ZSTD_LEVEL, NULL},
    {KEY_IGNORE_TOTAL_SIZE, NULL},
    {KEY_MAX_OUTPUT_ELEMENTS, NULL},
    {KEY_FORCE, NULL},
    {0, NULL},
};

static int run(const cli_args *a)
{
    if (cli_is_model_input(a))
        return a->tensor ? cmd_decode_model_tensor(a) : cmd_decode_model(a);
    static const int model_only[] = {KEY_ZSTD_LEVEL, KEY_TENSOR, KEY_IGNORE_TOTAL_SIZE,
                                     KEY_MAX_OUTPUT_ELEMENTS, KEY_MAX_HEADER_BYTES,
                                     KEY_MAX_TENSORS, KEY_MAX_ZSTD_RATIO, KEY_MAX_TEMP_SPACE,
                                     KEY_MAX_DECOMPRESSED, 0};
    int rc = cli_reject(a, "a single container", model_only);
    if (rc >= 0)
        return rc;
    if (!a->out)
        return cli_usage_error(a->command, "no output given (-o OUT)");
    const bool npy = cli_ends_with(a->out, ".npy");
    if (npy && a->dtype == SGFP4_DTYPE_BF16)
        return cli_usage_error(a->command, "NumPy has no bfloat16 dtype: write bf16 as a raw file");
    cli_container c;
    if ((rc = cli_container_open(a, &c)) >= 0)
        return rc;
    rc = CLI_EXIT_FAIL;
    char err[FILEIO_ERROR_SIZE];
    fileio_output out;
    const size_t elem = sgfp4_dtype_size(a->dtype);
    const size_t bytes = (size_t)(a->rows * a->cols) * elem;
    void *buffer = NULL;
    const sgfp4_decode_options o = cli_decode_options(a);
    sgfp4_status s = SGFP4_OK;
    if (!cli_output_open(a, a->out, &out)) {
        cli_container_close(&c);
        return rc;
    }
    buffer = a->rows * a->cols <= SIZE_MAX / elem ? malloc(bytes) : NULL;
    const double t0 = tool_now();
    if (!buffer) {
        cli_error(a->command, "%s: cannot allocate the %llux%llu output", a->in,
                  (unsigned long long)a->rows, (unsigned long long)a->cols);
        goto done;
    }
    if (a->vulkan) {
        if (!cli_vulkan_decode(a->command, c.tensor, a->dtype, buffer, bytes))
            goto done;
    } else if ((s = sgfp4_decode(c.tensor, a->dtype, buffer, 0, bytes, &o)) != SGFP4_OK) {
        cli_error(a->command, "decode failed: %s", sgfp4_status_str(s));
        goto done;
    }
    const double seconds = tool_now() - t0;
    const uint64_t shape[2] = {a->rows, a->cols};
    if (npy)
        fileio_npy_write_header(&out, a->dtype == SGFP4_DTYPE_F32 ? "<f4" : "<f2", shape, 2);
    fileio_output_write(&out, buffer, bytes);
    if (!fileio_output_commit(&out, err)) { /* a failed write fails the commit */
        cli_error(a->command, "%s", err);
        goto done;
    }
    cli_verbose(a->command, "%s: %s %llux%llu decoded by %s on %u threads in %.3f s", a->in,
                cli_profile_name(c.profile), (unsigned long long)a->rows,
                (unsigned long long)a->cols,
                a->vulkan ? "vulkan" : sgfp4_decode_backend_name(a->backend), a->threads, seconds);
    rc = CLI_EXIT_OK;
done:
    fileio_output_abort(&out);
    free(buffer);
    cli_container_close(&c);
    return rc;
}

const cli_command cli_decode = {
    "decode", "decode a container (or a quantized model) back to floats",
    "usage: sgfp4 decode IN -o OUT --shape OxI [options]\n"
    "       sgfp4 decode MODEL -o OUT.safetensors[.zst] [options]\n"
    "       sgfp4 decode MODEL -o DIR/OUT.safetensors.index.json [options]   (a sharded set)\n"
    "       sgfp4 decode MODEL --tensor NAME -o OUT.npy|OUT [--dtype f32|f16|bf16]\n"
    "\n"
    "Decodes an SGFP4 container to a row-major tensor: raw little-endian values, or NumPy .npy\n"
    "when OUT ends in .npy. IN or OUT may be '-' (standard input / output). A quantized model\n"
    "(a .safetensors file, .zst, or a sharded set's index, told by content) is restored to an\n"
    "ordinary safetensors model, one file or, for an OUT ending in .index.json, a set with one\n"
    "shard per input shard (NAME.sgfp4.safetensors -> NAME.safetensors) and its index, written\n"
    "last. An existing OUT is replaced only with -f; an output that is an input is refused.\n",
    options, run};
