/* sgfp4_vk_gemv_f16: the dense f16 matrix-vector product (shaders/gemv_f16.comp) that the
 * benchmarks measure beside the SGFP4 product. Pipelines (one per batch size) are created
 * on first use.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

typedef struct gemv_params {
    uint32_t rows, cols, w_base, x_base, y_base;
} gemv_params;

/* Rows per subgroup at a time (shaders/gemv_f16.comp: ROWS), workgroup size. */
enum { GEMV_ROWS_PER_SUBGROUP = 2, GEMV_GROUP = 256 };

/* Whether compute shaders have subgroupAdd. */
static int subgroups_usable(const sgfp4_vk_context *ctx)
{
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    vkGetPhysicalDeviceProperties2(ctx->physical_device, &p2);
    return (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
           sub.subgroupSize >= 1;
}


sgfp4_status sgfp4_vk_prepare_gemv(sgfp4_vk_context *ctx, VkBuffer w, VkDeviceSize w_offset,
                                   VkBuffer x, VkDeviceSize x_offset, VkBuffer y,
                                   VkDeviceSize y_offset, uint64_t rows, uint64_t cols,
                                   unsigned batch, int reset, sgfp4_vk_dispatch *d,
                                   sgfp4_diag *diag)
{
    if (!ctx || w == VK_NULL_HANDLE || x == VK_NULL_HANDLE || y == VK_NULL_HANDLE ||
        rows == 0 || cols == 0 || cols % 8 != 0 || batch < 1 ||
        batch > SGFP4_VK_GEMV_MAX_BATCH || (w_offset | x_offset | y_offset) % 16 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_gemv_f16: NULL handle, zero shape, cols not a multiple of "
                          "8, batch outside 1..%d or an offset not a multiple of 16",
                          SGFP4_VK_GEMV_MAX_BATCH);
    const uint64_t align = ctx->limits.minStorageBufferOffsetAlignment
                               ? ctx->limits.minStorageBufferOffsetAlignment
                               : 1;
    const uint64_t w_bytes = rows * cols * 2, x_bytes = batch * cols * 4,
                   y_bytes = batch * rows * 4;
    /* One subgroup per row group; the shader's grid-stride loop covers any excess (and a
     * subgroup size other than the reported one). */
    const uint64_t subgroups = GEMV_GROUP / (ctx->info.subgroup_size ? ctx->info.subgroup_size : 32);
    const uint64_t row_groups = (rows + GEMV_ROWS_PER_SUBGROUP - 1) / GEMV_ROWS_PER_SUBGROUP;
    uint64_t groups_x = (row_groups + subgroups - 1) / subgroups;
    groups_x = groups_x < 65535 ? groups_x : 65535;
    const uint64_t groups_y = 1;
    if (rows > UINT32_MAX || cols > UINT32_MAX || w_bytes / 16 > UINT32_MAX ||
        w_bytes + align > ctx->limits.maxStorageBufferRange ||
        groups_y > ctx->limits.maxComputeWorkGroupCount[1])
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "sgfp4_vk_gemv_f16: %llux%llu is too large for one dispatch",
                          (unsigned long long)rows, (unsigned long long)cols);
    if (!subgroups_usable(ctx))
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: the dense GEMV needs subgroup arithmetic in compute shaders");
    VkPipeline pipeline = VK_NULL_HANDLE;
    const uint32_t key = batch;
    sgfp4_status s = sgfp4_vk_kernel_pipeline(ctx, SGFP4_VK_GEMV, &key, 1, &pipeline, diag);
    if (s != SGFP4_OK)
        return s;
    const sgfp4_vk_kernel *k = &ctx->kernels[SGFP4_VK_GEMV];
    const VkDeviceSize w_at = w_offset - w_offset % align, x_at = x_offset - x_offset % align,
                       y_at = y_offset - y_offset % align;
    const VkDescriptorBufferInfo infos[3] = {{w, w_at, w_offset - w_at + w_bytes},
                                             {x, x_at, x_offset - x_at + x_bytes},
                                             {y, y_at, y_offset - y_at + y_bytes}};
    *d = (sgfp4_vk_dispatch){.pipeline = pipeline,
                             .layout = k->pipeline_layout,
                             .groups_x = (uint32_t)groups_x,
                             .groups_y = (uint32_t)groups_y};
    s = sgfp4_vk_bind_buffers(ctx, k->pool, k->set_layout, infos, 3, reset, &d->set, diag);
    const gemv_params params = {(uint32_t)rows,
                                (uint32_t)cols,
                                (uint32_t)((w_offset - w_at) / 16),
                                (uint32_t)((x_offset - x_at) / 16),
                                (uint32_t)((y_offset - y_at) / 4)};
    memcpy(d->push, &params, sizeof params);
    d->push_bytes = sizeof params;
    return s;
}

sgfp4_status sgfp4_vk_gemv_f16(sgfp4_vk_context *ctx, VkBuffer w, VkDeviceSize w_offset,
                               VkBuffer x, VkDeviceSize x_offset, VkBuffer y,
                               VkDeviceSize y_offset, uint64_t rows, uint64_t cols,
                               unsigned batch, sgfp4_diag *diag)
{
    sgfp4_vk_dispatch d;
    sgfp4_status s = sgfp4_vk_prepare_gemv(ctx, w, w_offset, x, x_offset, y, y_offset, rows,
                                           cols, batch, 1, &d, diag);
    return s == SGFP4_OK ? sgfp4_vk_run_dispatch(ctx, &d, SGFP4_VK_LAST_GEMV, diag) : s;
}
