/* sgfp4 verify IN --shape OxI [--profile v1|v2] [--strict]
 * sgfp4 verify --golden DIR [--backend ...]
 * A container verifies when it opens (every acceptance rule holds) and decodes; the two
 * hashes an execution contract pins (spec §22.10) are printed: the container's bytes and
 * the decoded float32 tensor.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli_encode.h"

static const char help[] =
    "usage: sgfp4 verify IN --shape OxI [--profile v1|v2] [--strict]\n"
    "       sgfp4 verify --golden DIR [--only NAME] [--backend auto|cpu|scalar]\n"
    "       sgfp4 verify MODEL.sgfp4.safetensors\n"
    "\n"
    "Exit 0 when IN is a conformant container; otherwise non-zero with the reason.\n"
    "Prints the sha256 of the container bytes and of the decoded float32 tensor.\n"
    "\n"
    "  --shape OxI       logical tensor shape (required)\n"
    "  --profile v1|v2   container profile (default: 'SGF4' magic, else extension)\n"
    "  --strict          also fail on reserved T158 symbols (0b11, which decode as 0)\n"
    "  --against REF     error statistics against the original weights REF (.npy or raw f32)\n"
    "  --golden DIR      run the golden set DIR/manifest.json, one line per vector\n"
    "  --only NAME       with --golden: run only the vector NAME (fails if there is none)\n"
    "  --backend B       decoder for --golden: auto (default), cpu, scalar\n"
    "  -q                quiet: only errors\n";

static const char *const valued[] = {"--shape", "--profile", "--golden", "--only",
                                     "--backend", "--against", NULL};

/* Decodes a whole tensor to float32 in a new buffer (NULL on failure). */
static float *decode_f32(const sgfp4_tensor *t, const sgfp4_decode_options *options,
                         size_t *bytes)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_get_info(t, &info);
    *bytes = (size_t)(info.rows * info.cols) * 4;
    float *f = malloc(*bytes);
    if (f && sgfp4_decode(t, SGFP4_DTYPE_F32, f, 0, *bytes, options) != SGFP4_OK) {
        free(f);
        f = NULL;
    }
    return f;
}

/* Runs one golden vector; returns true when it passes, else prints why into why[]. */
static bool run_vector(const char *dir, json_t *v, const sgfp4_decode_options *options,
                       char *why, size_t why_size)
{
    const char *file = json_string_value(json_object_get(v, "file"));
    const char *profile_text = json_string_value(json_object_get(v, "profile"));
    const char *expect = json_string_value(json_object_get(v, "expect"));
    json_t *shape = json_object_get(v, "shape");
    sgfp4_profile profile;
    if (!file || !expect || !json_is_array(shape) || json_array_size(shape) != 2 ||
        !cli_parse_profile(profile_text, &profile)) {
        snprintf(why, why_size, "malformed vector entry in manifest.json");
        return false;
    }
    const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
    const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cli_input in;
    if (!cli_read_input("verify", path, &in)) {
        snprintf(why, why_size, "cannot read %.400s", path);
        return false;
    }
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s =
        sgfp4_tensor_open(in.data, in.size, profile, rows, cols, &t, NULL, &diag);
    bool pass = false;
    if (strcmp(expect, "reject") == 0) {
        const char *want = json_string_value(json_object_get(v, "status"));
        if (s == SGFP4_OK)
            snprintf(why, why_size, "accepted, but must be rejected with %s",
                     want ? want : "an error");
        else if (want && strcmp(want, sgfp4_status_name(s)) != 0)
            snprintf(why, why_size, "rejected with %s, expected %s (%s)", sgfp4_status_name(s),
                     want, diag.message);
        else
            pass = true;
    } else if (s != SGFP4_OK) {
        snprintf(why, why_size, "rejected: %s [%s]", diag.message, sgfp4_status_name(s));
    } else {
        size_t bytes;
        float *f = decode_f32(t, options, &bytes);
        const char *want = json_string_value(json_object_get(v, "sha256"));
        char hex[65];
        if (!f) {
            snprintf(why, why_size, "decode failed");
        } else {
            cli_sha256_hex(f, bytes, hex);
            if (!want || strcmp(hex, want) != 0)
                snprintf(why, why_size, "decoded sha256 %s, expected %s", hex,
                         want ? want : "(none)");
            else
                pass = true;
        }
        free(f);
    }
    sgfp4_tensor_close(t);
    cli_input_release(&in);
    return pass;
}

/* Runs every vector of DIR/manifest.json, or only the one named `only` (if not NULL). */
static int run_golden(const char *dir, const char *only, const sgfp4_decode_options *options)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return cli_error("verify", "%s: line %d: %s", path, jerr.line, jerr.text);
    json_t *vectors = json_object_get(root, "vectors");
    if (!json_is_array(vectors)) {
        json_decref(root);
        return cli_error("verify", "%s: no \"vectors\" array", path);
    }
    size_t passed = 0, failed = 0, index;
    json_t *v;
    json_array_foreach(vectors, index, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (only && (!name || strcmp(name, only) != 0))
            continue;
        char why[512] = "";
        if (run_vector(dir, v, options, why, sizeof why)) {
            passed++;
            if (!cli_quiet)
                printf("PASS %s\n", name ? name : "?");
        } else {
            failed++;
            printf("FAIL %s: %s\n", name ? name : "?", why);
        }
    }
    json_decref(root);
    if (only && passed + failed == 0)
        return cli_error("verify", "%s: no vector named '%s'", path, only);
    printf("golden: %zu passed, %zu failed\n", passed, failed);
    return failed || passed == 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cmd_verify(int argc, char **argv)
{
    const char *cmd = "verify";
    if (cli_is_model_path(cli_first_positional(argc, argv, valued)))
        return cmd_model_verify(argc, argv);

    const char *in_path = NULL, *golden = NULL, *only = NULL, *value = NULL, *error = NULL;
    const char *against = NULL;
    uint64_t rows = 0, cols = 0;
    bool profile_given = false, strict = false;
    sgfp4_profile profile = SGFP4_PROFILE_AUTO;
    sgfp4_decode_options options;
    sgfp4_decode_options_init(&options);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(help, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(a, "-q") == 0) {
            cli_quiet = true;
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (cli_take_option(argc, argv, &i, "--shape", &value, &error)) {
            if (error || !cli_parse_shape(value, &rows, &cols))
                return cli_usage_error(cmd, "--shape wants OxI with O, I >= 1");
        } else if (cli_take_option(argc, argv, &i, "--profile", &value, &error)) {
            if (error || !cli_parse_profile(value, &profile))
                return cli_usage_error(cmd, "--profile wants v1 or v2");
            profile_given = true;
        } else if (cli_take_option(argc, argv, &i, "--golden", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "--golden needs a folder");
            golden = value;
        } else if (cli_take_option(argc, argv, &i, "--only", &value, &error)) {
            if (error)
                return cli_usage_error(cmd, "--only needs a vector name");
            only = value;
        } else if (cli_take_option(argc, argv, &i, "--backend", &value, &error)) {
            if (error || !cli_parse_backend(value, &options.backend))
                return cli_usage_error(cmd, "--backend wants " CLI_CPU_BACKENDS);
        } else if (cli_take_option(argc, argv, &i, "--against", &against, &error)) {
            if (error)
                return cli_usage_error(cmd, "--against needs a file");
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error(cmd, "unknown option %s", a);
        } else if (!in_path) {
            in_path = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument %s", a);
        }
    }
    if (golden)
        return in_path ? cli_usage_error(cmd, "--golden takes no input file")
                       : run_golden(golden, only, &options);
    if (only)
        return cli_usage_error(cmd, "--only needs --golden DIR");
    if (!in_path)
        return cli_usage_error(cmd, "no input given");
    if (rows == 0)
        return cli_usage_error(cmd, "--shape OxI is required: a bare container carries no "
                                    "shape");

    cli_input in;
    if (!cli_read_input(cmd, in_path, &in))
        return CLI_EXIT_FAIL;
    int rc = CLI_EXIT_FAIL;
    sgfp4_tensor *t = NULL;
    float *f = NULL;
    if (!cli_resolve_profile(cmd, in_path, &in, profile_given, profile, &profile) ||
        !cli_open_tensor(cmd, in_path, &in, profile, rows, cols, &t))
        goto done;
    size_t bytes;
    f = decode_f32(t, &options, &bytes);
    if (!f) {
        cli_error(cmd, "%s: cannot decode (out of memory?)", in_path);
        goto done;
    }
    const uint64_t reserved = sgfp4_tensor_reserved_symbols(t);
    char container_hex[65], tensor_hex[65];
    cli_sha256_hex(in.data, in.size, container_hex);
    cli_sha256_hex(f, bytes, tensor_hex);
    sgfp4_tensor_info info;
    sgfp4_tensor_get_info(t, &info);
    if (strict && reserved) {
        cli_error(cmd, "%s: %llu reserved T158 symbols (0b11) present (--strict)", in_path,
                  (unsigned long long)reserved);
        goto done;
    }
    printf("%s: OK (%s, %llux%llu, %zu bytes, %.4f bits per weight)\n", in_path,
           profile == SGFP4_PROFILE_V1 ? "v1" : "v2", (unsigned long long)rows,
           (unsigned long long)cols, in.size, info.bits_per_weight);
    printf("container sha256: %s\n", container_hex);
    printf("decoded f32 sha256: %s\n", tensor_hex);
    if (reserved)
        printf("note: %llu reserved T158 symbols (0b11), decoded as 0\n",
               (unsigned long long)reserved);
    rc = against ? cli_quality_report(cmd, t, against) : CLI_EXIT_OK;
done:
    free(f);
    sgfp4_tensor_close(t);
    cli_input_release(&in);
    return rc;
}
