/* sgfp4 info IN --shape OxI: what a container holds (profile, layouts, modes, leaf sizes, bits
 * per weight, sha256), as text or JSON; --against REF, --map OUT.png; --devices lists the
 * Vulkan devices (cmd_vulkan.c); a model goes to cmd_model_info.c.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"

static const cli_accept options[] = {
    {KEY_SHAPE, NULL},
    {KEY_PROFILE, NULL},
    {KEY_JSON, NULL},
    {KEY_AGAINST, "error statistics against the original weights REF (.npy or raw f32; for "
                  "a model: the source model)"},
    {KEY_MAP, NULL},
    {KEY_DEVICES, NULL},
    {KEY_TENSOR, "a model: describe tensor NAME (its container, as for a file; --map draws it)"},
    {KEY_THREADS, NULL},
    {KEY_IGNORE_TOTAL_SIZE, NULL},
    {KEY_FORCE, "replace an existing --map file"},
    {0, NULL},
};

static const char *const layout_names[6] = {"UNIFORM_64", "UNIFORM_32", "UNIFORM_16",
                                            "UNIFORM_8",  "MIXED",      "FULL_4X4"};
static const unsigned leaf_edges[SGFP4_LEAF_SIZES] = {64, 32, 16, 8, 4};

static void print_text(const char *path, const sgfp4_tensor_info *info, const char *sha)
{
    const double padded = (double)info->blocks * 4096.0;
    printf("file: %s\n", path);
    printf("profile: %s\n", cli_profile_name(info->profile));
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
    json_t *root = json_pack("{s:s,s:s,s:[I,I],s:I,s:I,s:f,s:s}", "file", path, "profile",
                             cli_profile_name(info->profile), "shape", (json_int_t)info->rows,
                             (json_int_t)info->cols, "blocks", (json_int_t)info->blocks,
                             "container_bytes", (json_int_t)info->container_bytes,
                             "bits_per_weight", info->bits_per_weight, "sha256", sha);
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
    cli_print_json(root);
}

int cli_info_container(const cli_args *a, const char *name, const sgfp4_tensor *t)
{
    fileio_output map;
    if (a->map && !cli_output_open(a, a->map, &map))
        return CLI_EXIT_FAIL;
    float *ref = a->against ? cli_reference_read(a, t) : NULL; /* before any output */
    if (a->against && !ref) {
        if (a->map)
            fileio_output_abort(&map);
        return CLI_EXIT_FAIL;
    }
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    char sha[65], err[FILEIO_ERROR_SIZE];
    sgfp4_tensor_container_sha256(t, sha);
    (a->given[KEY_JSON] ? print_json : print_text)(name, &info, sha);
    int rc = ref ? cli_quality_report(a, t, ref) : CLI_EXIT_OK;
    free(ref);
    if (a->map) {
        if (rc == CLI_EXIT_OK &&
            (!fileio_leaf_map(t, &map, err) || !fileio_output_commit(&map, err)))
            rc = cli_error(a->command, "%s", err);
        fileio_output_abort(&map);
    }
    return rc;
}

static int run(const cli_args *a)
{
    if (a->given[KEY_DEVICES])
        return cmd_info_devices(a);
    if (a->map && !fileio_leaf_map_available())
        return cli_error(a->command, "--map needs libpng, which this sgfp4 was built without");
    if (cli_is_model_input(a))
        return a->tensor ? cmd_info_model_tensor(a) : cmd_info_model(a);
    static const int model_only[] = {KEY_TENSOR, KEY_IGNORE_TOTAL_SIZE, KEY_MAX_HEADER_BYTES,
                                     KEY_MAX_TENSORS, KEY_MAX_ZSTD_RATIO, KEY_MAX_TEMP_SPACE,
                                     KEY_MAX_DECOMPRESSED, 0};
    int rc = cli_reject(a, "a single container", model_only);
    if (rc >= 0)
        return rc;
    cli_container c;
    if ((rc = cli_container_open(a, &c)) >= 0)
        return rc;
    rc = cli_info_container(a, a->in, c.tensor);
    cli_container_close(&c);
    return rc;
}

const cli_command cli_info = {
    "info", "describe a container: layouts, modes, leaf sizes, bits per weight",
    "usage: sgfp4 info IN --shape OxI [--profile v1|v2] [--json] [--against REF] [--map PNG]\n"
    "       sgfp4 info MODEL [--json] [--against SOURCE]   (a file, .zst, or a set's index)\n"
    "       sgfp4 info MODEL --tensor NAME [--json] [--map PNG]\n"
    "       sgfp4 info --devices [--json]   (Vulkan devices and their exactness features)\n",
    options, run};
