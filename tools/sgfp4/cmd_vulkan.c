/* The Vulkan parts of the CLI outside bench: `sgfp4 info --devices` (the Vulkan devices and
 * the exactness features they report), decoding through the GPU for
 * `sgfp4 decode --backend vulkan` and the products of `sgfp4 matvec --backend vulkan`.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "sgfp4_vulkan.h"

static void version_text(uint32_t v, char out[32])
{
    snprintf(out, 32, "%u.%u.%u", (v >> 22) & 0x7Fu, (v >> 12) & 0x3FFu, v & 0xFFFu);
}

int cmd_info_devices(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_AGAINST, KEY_MAP, 0};
    const int rc = cli_reject(a, "--devices", tensor_only);
    if (rc >= 0)
        return rc;
    if (a->in)
        return cli_usage_error(a->command, "--devices takes no input file");
    sgfp4_vk_device_info devices[16];
    for (size_t i = 0; i < 16; i++)
        sgfp4_vk_device_info_init(&devices[i]);
    size_t count = 0;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_vk_list_devices(devices, 16, &count, &diag);
    if (s != SGFP4_OK && s != SGFP4_ERR_VK_NO_DEVICE && s != SGFP4_ERR_UNAVAILABLE)
        return cli_error("info", "--devices: %s", diag.message);
    if (count > 16)
        count = 16;
    if (a->given[KEY_JSON]) {
        json_t *list = json_array();
        for (size_t i = 0; i < count; i++) {
            char api[32];
            version_text(devices[i].api_version, api);
            json_array_append_new(
                list, json_pack("{s:i,s:s,s:s,s:b,s:b,s:b,s:i,s:I}", "index", (int)i, "name",
                                devices[i].name, "api_version", api, "discrete",
                                devices[i].discrete, "rounding_mode_rte_float32",
                                devices[i].rte_float32, "denorm_preserve_float16",
                                devices[i].denorm_preserve_float16, "subgroup_size",
                                (int)devices[i].subgroup_size, "max_storage_buffer_range",
                                (json_int_t)devices[i].max_storage_buffer_range));
            json_t *d = json_array_get(list, json_array_size(list) - 1);
            json_object_set_new(d, "rounding_mode_rte_float16",
                                json_boolean(devices[i].rte_float16));
            json_object_set_new(d, "signed_zero_inf_nan_preserve_float32",
                                json_boolean(devices[i].signed_zero_preserve_float32));
            json_object_set_new(d, "signed_zero_inf_nan_preserve_float16",
                                json_boolean(devices[i].signed_zero_preserve_float16));
            json_object_set_new(d, "shader_float16", json_boolean(devices[i].shader_float16));
        }
        json_t *root = json_pack("{s:o,s:s}", "vulkan_devices", list, "status",
                                 sgfp4_status_name(s));
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
        return CLI_EXIT_OK;
    }
    if (s != SGFP4_OK) {
        printf("vulkan: no devices (%s)\n", diag.message);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < count; i++) {
        char api[32];
        version_text(devices[i].api_version, api);
        printf("vulkan device %zu: %s (Vulkan %s, %s)\n", i, devices[i].name, api,
               devices[i].discrete ? "discrete" : "not discrete");
        const int rte = devices[i].rte_float32 && devices[i].signed_zero_preserve_float32;
        printf("  shaderRoundingModeRTEFloat32: %d, shaderSignedZeroInfNanPreserveFloat32: %d "
               "-> decode uses the %s pipeline\n",
               devices[i].rte_float32, devices[i].signed_zero_preserve_float32,
               rte ? "RTE float" : "integer-exact");
        printf("  shaderFloat16: %d, shaderRoundingModeRTEFloat16: %d, "
               "shaderSignedZeroInfNanPreserveFloat16: %d -> f16 outputs by %s\n",
               devices[i].shader_float16, devices[i].rte_float16,
               devices[i].signed_zero_preserve_float16,
               !rte ? "integer code"
               : devices[i].shader_float16 && devices[i].rte_float16 &&
                       devices[i].signed_zero_preserve_float16
                   ? "the device's conversion"
                   : "one f32 add");
        printf("  shaderDenormPreserveFloat16: %d (%s)\n", devices[i].denorm_preserve_float16,
               devices[i].denorm_preserve_float16
                   ? "declared: no subnormal check on f16 outputs"
                   : "f16 outputs in the subnormal range are checked and rounded by the add");
        printf("  subgroup size %u, max storage buffer range %llu bytes\n",
               devices[i].subgroup_size,
               (unsigned long long)devices[i].max_storage_buffer_range);
    }
    return CLI_EXIT_OK;
}

bool cli_vulkan_decode(const char *command, const sgfp4_tensor *t, sgfp4_dtype dtype, void *dst,
                       size_t dst_capacity)
{
    sgfp4_vk_context *ctx = NULL;
    sgfp4_vk_tensor *vt = NULL;
    sgfp4_diag diag;
    sgfp4_status s = sgfp4_vk_context_create(&ctx, NULL, &diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_tensor_create(ctx, t, &vt, &diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_decode_to_host(ctx, vt, dtype, dst, 0, dst_capacity, &diag);
    if (s != SGFP4_OK)
        cli_error(command, "--backend vulkan: %s", diag.message);
    sgfp4_vk_tensor_free(ctx, vt);
    sgfp4_vk_context_free(ctx);
    return s == SGFP4_OK;
}

bool cli_vulkan_matvec(const char *command, const sgfp4_tensor *t, uint64_t rows, uint64_t cols,
                       bool class_b, bool fast, const float *x, uint64_t batch, float *y)
{
    sgfp4_vk_context *ctx = NULL;
    sgfp4_vk_tensor *vt = NULL;
    sgfp4_vk_buffer *xb = NULL, *qb = NULL, *yb = NULL;
    sgfp4_diag diag;
    /* the buffers hold one call's vectors; a longer batch runs call after call */
    const unsigned most = batch < SGFP4_MATVEC_MAX_BATCH ? (unsigned)batch : SGFP4_MATVEC_MAX_BATCH;
    const size_t x_bytes = sizeof *x * most * (size_t)cols;
    const size_t y_bytes = sizeof *y * most * (size_t)rows;
    const size_t q8_bytes = sgfp4_matvec_q8_bytes(cols, most);
    sgfp4_vk_matvec_options o;
    sgfp4_vk_matvec_options_init(&o);
    o.fast = fast;
    sgfp4_status s = sgfp4_vk_context_create(&ctx, NULL, &diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_tensor_create(ctx, t, &vt, &diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_buffer_create(ctx, x_bytes, &xb, &diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_buffer_create(ctx, y_bytes, &yb, &diag);
    if (s == SGFP4_OK && !class_b)
        s = sgfp4_vk_buffer_create(ctx, q8_bytes, &qb, &diag);
    bool activations = false; /* the failure is the activations' (Class A: NaN or infinity) */
    for (uint64_t k = 0; s == SGFP4_OK && k < batch; k += most) {
        const unsigned n = batch - k < most ? (unsigned)(batch - k) : most;
        s = sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(xb), 0, x + k * cols,
                                  sizeof *x * n * (size_t)cols, &diag);
        if (s == SGFP4_OK && !class_b) {
            s = sgfp4_vk_quantize(ctx, sgfp4_vk_buffer_handle(xb), 0, SGFP4_DTYPE_F32, cols, n, 0,
                                  sgfp4_vk_buffer_handle(qb), 0, NULL, &diag);
            activations = s == SGFP4_ERR_ARGUMENT;
            if (s == SGFP4_OK)
                s = sgfp4_vk_matvec_q8(ctx, vt, sgfp4_vk_buffer_handle(qb), 0, n,
                                       sgfp4_vk_buffer_handle(yb), 0, 0, &o, &diag);
        } else if (s == SGFP4_OK) {
            s = sgfp4_vk_matvec_float(ctx, vt, sgfp4_vk_buffer_handle(xb), 0, SGFP4_DTYPE_F32, n,
                                      0, sgfp4_vk_buffer_handle(yb), 0, 0, &o, &diag);
        }
        if (s == SGFP4_OK)
            s = sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(yb), 0, y + k * rows,
                                     sizeof *y * n * (size_t)rows, &diag);
    }
    if (s != SGFP4_OK)
        cli_error(command, "--backend vulkan: %s%s", diag.message,
                  activations ? " (--class b takes any float)" : "");
    sgfp4_vk_buffer_free(ctx, xb);
    sgfp4_vk_buffer_free(ctx, qb);
    sgfp4_vk_buffer_free(ctx, yb);
    sgfp4_vk_tensor_free(ctx, vt);
    sgfp4_vk_context_free(ctx);
    return s == SGFP4_OK;
}
