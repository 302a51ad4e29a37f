/* sgfp4 info IN --shape OxI [--profile v1|v2] [--json]
 * Describes a container: profile, layouts, modes, leaf sizes, bits per weight, sha256.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include <jansson.h>

#include "cli_encode.h"

static const char help[] =
    "usage: sgfp4 info IN --shape OxI [--profile v1|v2] [--json]\n"
    "       sgfp4 info MODEL.sgfp4.safetensors [--json]\n"
    "       sgfp4 info --devices [--json]   (Vulkan devices and their exactness features)\n"
    "\n"
    "  --shape OxI       logical tensor shape (required)\n"
    "  --profile v1|v2   container profile (default: 'SGF4' magic, else extension)\n"
    "  --json            machine-readable output\n"
    "  --against REF     error statistics against the original weights REF (.npy or raw f32)\n"
    "  --map OUT.png     draw the leaf map (one pixel per 4x4 cell; docs/cli.md)\n";

static const char *const valued[] = {"--shape", "--profile", "--against", "--map", NULL};
static const char *const layout_names[6] = {"UNIFORM_64", "UNIFORM_32", "UNIFORM_16",
                                            "UNIFORM_8",  "MIXED",      "FULL_4X4"};
static const unsigned leaf_edges[SGFP4_LEAF_SIZES] = {64, 32, 16, 8, 4};

static void print_text(const char *path, const sgfp4_tensor_info *info, const char *sha)
{
    const double padded = (double)info->blocks * 4096.0;
    printf("file: %s\n", path);
    printf("profile: %s\n", info->profile == SGFP4_PROFILE_V1 ? "v1" : "v2");
    printf("shape: %llux%llu (%llux%llu macroblocks, %llu in all)\n",
           (unsigned long long)info->rows, (unsigned long long)info->cols,
           (unsigned long long)info->tiles_y, (unsigned long long)info->tiles_x,
           (unsigned long long)info->blocks);
    printf("container: %llu bytes, %.4f bits per weight\n",
           (unsigned long long)info->container_bytes, info->bits_per_weight);
    printf("sha256: %s\n", sha);
    if (info->profile == SGFP4_PROFILE_V2) {
        printf("layouts:");
        for (int l = 0; l < 6; l++)
            printf(" %s %llu%s", layout_names[l], (unsigned long long)info->records_by_layout[l],
                   l < 5 ? "," : "\n");
    } else {
        printf("error-hint blocks: %llu\n", (unsigned long long)info->error_hint_blocks);
    }
    printf("leaves: %llu (FP4 %llu, T158 %llu)\n", (unsigned long long)info->leaves,
           (unsigned long long)info->leaves_by_mode[0], (unsigned long long)info->leaves_by_mode[1]);
    printf("  size   leaves      FP4     T158   weights\n");
    for (int s = 0; s < SGFP4_LEAF_SIZES; s++) {
        const double share =
            (double)info->leaves_by_size[s] * leaf_edges[s] * leaf_edges[s] / padded * 100.0;
        printf("  %2ux%-2u %8llu %8llu %8llu   %6.2f%%\n", leaf_edges[s], leaf_edges[s],
               (unsigned long long)info->leaves_by_size[s],
               (unsigned long long)info->leaves_by_size_mode[s][0],
               (unsigned long long)info->leaves_by_size_mode[s][1], share);
    }
}

static void print_json(const char *path, const sgfp4_tensor_info *info, const char *sha)
{
    json_t *root = json_object();
    json_object_set_new(root, "file", json_string(path));
    json_object_set_new(root, "profile", json_string(info->profile == SGFP4_PROFILE_V1 ? "v1" : "v2"));
    json_object_set_new(root, "shape", json_pack("[I,I]", (json_int_t)info->rows,
                                                 (json_int_t)info->cols));
    json_object_set_new(root, "blocks", json_integer((json_int_t)info->blocks));
    json_object_set_new(root, "container_bytes", json_integer((json_int_t)info->container_bytes));
    json_object_set_new(root, "bits_per_weight", json_real(info->bits_per_weight));
    json_object_set_new(root, "sha256", json_string(sha));
    json_t *layouts = json_object();
    for (int l = 0; l < 6 && info->profile == SGFP4_PROFILE_V2; l++)
        json_object_set_new(layouts, layout_names[l],
                            json_integer((json_int_t)info->records_by_layout[l]));
    json_object_set_new(root, "layouts", layouts);
    if (info->profile == SGFP4_PROFILE_V1)
        json_object_set_new(root, "error_hint_blocks",
                            json_integer((json_int_t)info->error_hint_blocks));
    json_object_set_new(root, "leaves", json_integer((json_int_t)info->leaves));
    json_object_set_new(root, "leaves_fp4", json_integer((json_int_t)info->leaves_by_mode[0]));
    json_object_set_new(root, "leaves_t158", json_integer((json_int_t)info->leaves_by_mode[1]));
    json_t *sizes = json_array();
    for (int s = 0; s < SGFP4_LEAF_SIZES; s++)
        json_array_append_new(sizes, json_pack("{s:i,s:I,s:I,s:I}", "size", leaf_edges[s],
                                               "leaves", (json_int_t)info->leaves_by_size[s],
                                               "fp4", (json_int_t)info->leaves_by_size_mode[s][0],
                                               "t158", (json_int_t)info->leaves_by_size_mode[s][1]));
    json_object_set_new(root, "leaf_sizes", sizes);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
}

int cmd_info(int argc, char **argv)
{
    const char *cmd = "info";
    if (cli_is_model_path(cli_first_positional(argc, argv, valued)))
        return cmd_model_info(argc, argv);

    const char *in_path = NULL, *value = NULL, *error = NULL, *against = NULL, *map = NULL;
    uint64_t rows = 0, cols = 0;
    bool profile_given = false, as_json = false, devices = false;
    sgfp4_profile profile = SGFP4_PROFILE_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(help, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            as_json = true;
        } else if (strcmp(a, "--devices") == 0) {
            devices = true;
        } else if (cli_take_option(argc, argv, &i, "--shape", &value, &error)) {
            if (error || !cli_parse_shape(value, &rows, &cols))
                return cli_usage_error(cmd, "--shape wants OxI with O, I >= 1");
        } else if (cli_take_option(argc, argv, &i, "--profile", &value, &error)) {
            if (error || !cli_parse_profile(value, &profile))
                return cli_usage_error(cmd, "--profile wants v1 or v2");
            profile_given = true;
        } else if (cli_take_option(argc, argv, &i, "--against", &against, &error) ||
                   cli_take_option(argc, argv, &i, "--map", &map, &error)) {
            if (error)
                return cli_usage_error(cmd, "%s %s", a, error);
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error(cmd, "unknown option %s", a);
        } else if (!in_path) {
            in_path = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument %s", a);
        }
    }
    if (devices)
        return cmd_info_devices(as_json);
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
    if (cli_resolve_profile(cmd, in_path, &in, profile_given, profile, &profile) &&
        cli_open_tensor(cmd, in_path, &in, profile, rows, cols, &t)) {
        sgfp4_tensor_info info;
        sgfp4_tensor_get_info(t, &info);
        char sha[65];
        cli_sha256_hex(in.data, in.size, sha);
        if (as_json)
            print_json(in_path, &info, sha);
        else
            print_text(in_path, &info, sha);
        rc = CLI_EXIT_OK;
        if (against && rc == CLI_EXIT_OK)
            rc = cli_quality_report(cmd, t, against);
        if (map && rc == CLI_EXIT_OK)
            rc = cli_leaf_map(cmd, t, map);
    }
    sgfp4_tensor_close(t);
    cli_input_release(&in);
    return rc;
}
