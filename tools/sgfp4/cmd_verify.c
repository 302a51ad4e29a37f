/* sgfp4 verify IN --shape OxI: a container verifies when it opens (every acceptance rule
 * holds); the two hashes an execution contract pins (spec section 22.10) are printed.
 * --golden DIR runs a golden vector set (cmd_golden.c); a model goes to cmd_model.c.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"

static const cli_accept options[] = {
    {KEY_SHAPE, NULL},
    {KEY_PROFILE, NULL},
    {KEY_STRICT, NULL},
    {KEY_AGAINST, "error statistics against the original weights REF (.npy or raw f32)"},
    {KEY_GOLDEN, NULL},
    {KEY_ONLY, NULL},
    {KEY_BACKEND, "decoder: auto (default), cpu, scalar (the reference), or one CPU kernel set"},
    {KEY_THREADS, NULL},
    {KEY_JSON, "print the result as one JSON object on standard output, also on failure "
               "({\"ok\": false, \"error\": ...}; the exit status and the line on stderr stay); "
               "with --golden: every vector's result"},
    {KEY_IGNORE_TOTAL_SIZE, NULL},
    {KEY_MAX_OUTPUT_ELEMENTS, "a quantized model fails when its tensors decode to more "
                              "elements, all together (default 64 per container byte, as decode)"},
    {0, NULL},
};

/* verify --json: the object on stdout; on failure {"file", "ok": false, "error"}. */
static int print_json(const cli_args *a, json_t *root, int rc)
{
    if (rc != CLI_EXIT_OK) {
        json_decref(root);
        root = json_pack("{s:s,s:b,s:s}", "file", a->in ? a->in : "", "ok", 0, "error",
                         cli_last_error);
    }
    cli_print_json(root);
    return rc;
}

/* verify MODEL: the structure (checked by the open), every container strictly with its
 * sha256, and the D6 layout; a set over all its shards. */
static int verify_model(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_STRICT, KEY_AGAINST,
                                      KEY_BACKEND, KEY_THREADS, 0};
    int rc = cli_reject(a, "whole models", tensor_only);
    if (rc >= 0)
        return rc;
    sgfp4_model *m = NULL;
    if (!cli_model_open(a, a->in, &m))
        return CLI_EXIT_FAIL;
    sgfp4_model_verify_result r;
    sgfp4_model_verify_result_init(&r);
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_verify(m, &r, &diag);
    const size_t shards = sgfp4_model_shard_count(m);
    char set[64] = "";
    if (sgfp4_model_is_set(m))
        snprintf(set, sizeof set, " in %zu shard%s", shards, shards > 1 ? "s" : "");
    char text[2 * sizeof diag.message];
    if (s != SGFP4_OK) {
        rc = cli_error(a->command, "%s: %s [%s]", a->in,
                       cli_diag_text(s, diag.message, text, sizeof text), sgfp4_status_name(s));
    } else if ((rc = cli_check_output_elements(a, m, NULL)) >= 0) {
        /* decode would refuse it: verify says so */
    } else if (a->given[KEY_JSON]) {
        json_t *root = json_pack("{s:s,s:b,s:b,s:b,s:I,s:I,s:I,s:I,s:b}", "file", a->in, "ok", 1,
                                 "quantized", sgfp4_model_is_quantized(m), "set",
                                 sgfp4_model_is_set(m), "shards", (json_int_t)shards, "tensors",
                                 (json_int_t)r.tensors, "quantized_v1",
                                 (json_int_t)r.quantized_v1, "quantized_v2",
                                 (json_int_t)r.quantized_v2, "d6_aligned", r.d6_aligned);
        cli_print_json(root);
        rc = CLI_EXIT_OK;
    } else {
        if (cli_verbosity > 0 && sgfp4_model_is_quantized(m))
            printf("%s: OK: %zu tensors%s, %zu quantized (v2 %zu, v1 %zu), every container valid "
                   "and matching its manifest sha256; D6 alignment: %s\n",
                   a->in, r.tensors, set, r.quantized_v1 + r.quantized_v2, r.quantized_v2,
                   r.quantized_v1, r.d6_aligned ? "yes" : "no");
        else if (cli_verbosity > 0)
            printf("%s: OK: a valid safetensors %s with %zu tensors%s (no sgfp4 manifest)\n",
                   a->in, sgfp4_model_is_set(m) ? "set" : "file", r.tensors, set);
        rc = CLI_EXIT_OK;
    }
    sgfp4_model_close(m);
    return rc;
}

float *cli_reference_read(const cli_args *a, const sgfp4_tensor *t)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    uint64_t rows = info.rows, cols = info.cols;
    fileio_input in;
    char err[FILEIO_ERROR_SIZE];
    if (!fileio_read(a->against, &in, err))
        return cli_error(a->command, "%s", err), NULL;
    float *ref = fileio_matrix(&in, a->against, &rows, &cols, err);
    fileio_input_release(&in);
    if (!ref)
        cli_error(a->command, "%s", err);
    return ref;
}

/* `--against REF`: bits per weight, RMSE, relative L2, max abs error, SNR, and the share of
 * the (zero-padded) weights per leaf size and mode. Shared with `info`. */
int cli_quality_report(const cli_args *a, const sgfp4_tensor *t, const float *ref)
{
    static const unsigned edges[SGFP4_LEAF_SIZES] = {64, 32, 16, 8, 4};
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    sgfp4_quality q;
    sgfp4_quality_init(&q);
    const sgfp4_decode_options d = cli_decode_options(a);
    const sgfp4_status s = sgfp4_tensor_compare(t, ref, 0, &q, &d);
    if (s != SGFP4_OK)
        return cli_error(a->command, "cannot decode: %s", sgfp4_status_str(s));
    printf("against %s:\n", a->against);
    printf("  bits per weight: %.4f\n", info.bits_per_weight);
    printf("  RMSE: %.6g\n", q.rmse);
    printf("  relative L2 error: %.6f\n", q.reference_sq > 0 ? q.rel_l2 : 0.0);
    printf("  max abs error: %.6g\n", q.max_abs);
    if (q.sse > 0 && q.reference_sq > 0)
        printf("  SNR: %.2f dB\n", q.snr_db);
    else
        printf("  SNR: %s\n", q.sse > 0 ? "-inf dB" : "inf dB (exact)");
    const double padded = (double)info.blocks * 4096.0;
    printf("  share of weights (padded grid) per leaf size and mode:\n");
    printf("    size       FP4      T158\n");
    for (int k = 0; k < SGFP4_LEAF_SIZES; k++) {
        const double area = (double)edges[k] * edges[k];
        printf("    %2ux%-2u  %7.2f%%  %7.2f%%\n", edges[k], edges[k],
               100.0 * (double)info.leaves_by_size_mode[k][0] * area / padded,
               100.0 * (double)info.leaves_by_size_mode[k][1] * area / padded);
    }
    return CLI_EXIT_OK;
}

static int verify_container(const cli_args *a, json_t **json)
{
    cli_container c;
    int rc = cli_container_open(a, &c);
    if (rc >= 0)
        return rc;
    rc = CLI_EXIT_FAIL;
    float *ref = a->against ? cli_reference_read(a, c.tensor) : NULL; /* before any output */
    if (a->against && !ref) {
        cli_container_close(&c);
        return rc;
    }
    char container_hex[65], tensor_hex[65];
    const sgfp4_decode_options d = cli_decode_options(a);
    const uint64_t reserved = sgfp4_tensor_reserved_symbols(c.tensor);
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(c.tensor, &info);
    sgfp4_tensor_container_sha256(c.tensor, container_hex);
    const sgfp4_status s = sgfp4_tensor_decoded_sha256(c.tensor, tensor_hex, &d);
    if (s != SGFP4_OK) {
        cli_error(a->command, "%s: cannot decode: %s", a->in, sgfp4_status_str(s));
    } else if (a->given[KEY_STRICT] && reserved) {
        cli_error(a->command, "%s: %llu reserved T158 symbols (0b11) present (--strict)", a->in,
                  (unsigned long long)reserved);
    } else if (json) {
        *json = json_pack("{s:s,s:b,s:s,s:[I,I],s:I,s:f,s:s,s:s,s:I}", "file", a->in, "ok", 1,
                          "profile", cli_profile_name(c.profile), "shape", (json_int_t)a->rows,
                          (json_int_t)a->cols, "bytes", (json_int_t)c.in.size, "bits_per_weight",
                          info.bits_per_weight, "container_sha256", container_hex,
                          "decoded_f32_sha256", tensor_hex, "reserved_symbols",
                          (json_int_t)reserved);
        rc = CLI_EXIT_OK;
    } else {
        printf("%s: OK (%s, %llux%llu, %zu bytes, %.4f bits per weight)\n", a->in,
               cli_profile_name(c.profile), (unsigned long long)a->rows,
               (unsigned long long)a->cols, c.in.size, info.bits_per_weight);
        printf("container sha256: %s\n", container_hex);
        printf("decoded f32 sha256: %s\n", tensor_hex);
        if (reserved)
            printf("note: %llu reserved T158 symbols (0b11), decoded as 0\n",
                   (unsigned long long)reserved);
        rc = ref ? cli_quality_report(a, c.tensor, ref) : CLI_EXIT_OK;
    }
    free(ref);
    cli_container_close(&c);
    return rc;
}

static int run(const cli_args *a)
{
    if (a->golden) {
        return a->in ? cli_usage_error(a->command, "--golden takes no input file")
                     : cmd_verify_golden(a);
    }
    if (a->only)
        return cli_usage_error(a->command, "--only needs --golden DIR");
    if (a->vulkan)
        return cli_usage_error(a->command, "--backend vulkan: verify decodes on the CPU");
    if (cli_is_model_input(a)) {
        const int rc = verify_model(a); /* prints its JSON when it succeeds */
        return a->given[KEY_JSON] && rc == CLI_EXIT_FAIL ? print_json(a, NULL, rc) : rc;
    }
    if (a->given[KEY_IGNORE_TOTAL_SIZE])
        return cli_usage_error(a->command, "--ignore-total-size applies to sharded sets");
    static const int model_only[] = {KEY_MAX_OUTPUT_ELEMENTS, KEY_MAX_HEADER_BYTES,
                                     KEY_MAX_TENSORS, KEY_MAX_ZSTD_RATIO, KEY_MAX_TEMP_SPACE,
                                     KEY_MAX_DECOMPRESSED, 0};
    const int refused = cli_reject(a, "a single container", model_only);
    if (refused >= 0)
        return refused;
    if (a->given[KEY_JSON] && a->against)
        return cli_usage_error(a->command, "--json and --against exclude each other");
    json_t *json = NULL;
    const int rc = verify_container(a, a->given[KEY_JSON] ? &json : NULL);
    if (a->given[KEY_JSON] && rc != CLI_EXIT_USAGE)
        return print_json(a, json, rc);
    return rc;
}

const cli_command cli_verify = {
    "verify", "check a container (or a model) strictly and print its hashes",
    "usage: sgfp4 verify IN --shape OxI [--profile v1|v2] [--strict] [--against REF] [--json]\n"
    "       sgfp4 verify --golden DIR [--only NAME] [--backend B] [--json]\n"
    "       sgfp4 verify MODEL [--json]   (a .safetensors file, .zst, or a sharded set's index)\n"
    "\n"
    "Exit 0 when IN is a conformant container; otherwise 1 with the reason. Prints the sha256\n"
    "of the container bytes and of the decoded float32 tensor. The shape is not stored in a\n"
    "container: any --shape with the same number of 64x64 blocks, ceil(O/64) x ceil(I/64) in\n"
    "any arrangement (768x768 as 64x9216), verifies too, with other hashes; a v2 container\n"
    "warns when leaves in the shape's padding hold data. A model is checked strictly: its\n"
    "structure, every container and every container's sha256; a set over all its shards and\n"
    "its index.\n",
    options, run};
