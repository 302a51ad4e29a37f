/* sgfp4_vk_copy_buffer: a compute-shader copy (shaders/copy.comp), the bandwidth reference
 * that decode is compared with. Its pipeline is created on first use.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

typedef struct copy_params {
    uint32_t count, groups_x, src_base, dst_base;
} copy_params;

static sgfp4_status copy_init(sgfp4_vk_context *ctx, sgfp4_diag *diag)
{
    if (ctx->copy_pipeline)
        return SGFP4_OK;
    VkResult r;
    const VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                           .codeSize = sgfp4_vk_spv_copy_size,
                                           .pCode = sgfp4_vk_spv_copy};
    if ((r = vkCreateShaderModule(ctx->device, &smci, NULL, &ctx->copy_module)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateShaderModule");
    const sgfp4_status s =
        sgfp4_vk_layouts_create(ctx->device, 2, sizeof(copy_params), 1, &ctx->copy_set_layout,
                                &ctx->copy_pipeline_layout, &ctx->copy_descriptor_pool, diag);
    if (s != SGFP4_OK)
        return s;
    const VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = ctx->copy_module,
                  .pName = "main"},
        .layout = ctx->copy_pipeline_layout};
    if ((r = vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &ci, NULL,
                                      &ctx->copy_pipeline)) != VK_SUCCESS) {
        ctx->copy_pipeline = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreateComputePipelines");
    }
    return SGFP4_OK;
}

void sgfp4_vk_copy_release(sgfp4_vk_context *ctx)
{
    if (ctx->copy_pipeline)
        vkDestroyPipeline(ctx->device, ctx->copy_pipeline, NULL);
    if (ctx->copy_descriptor_pool)
        vkDestroyDescriptorPool(ctx->device, ctx->copy_descriptor_pool, NULL);
    if (ctx->copy_pipeline_layout)
        vkDestroyPipelineLayout(ctx->device, ctx->copy_pipeline_layout, NULL);
    if (ctx->copy_set_layout)
        vkDestroyDescriptorSetLayout(ctx->device, ctx->copy_set_layout, NULL);
    if (ctx->copy_module)
        vkDestroyShaderModule(ctx->device, ctx->copy_module, NULL);
}

sgfp4_status sgfp4_vk_prepare_copy(sgfp4_vk_context *ctx, VkBuffer src,
                                   VkDeviceSize src_offset, VkBuffer dst,
                                   VkDeviceSize dst_offset, uint64_t size, sgfp4_vk_dispatch *d,
                                   sgfp4_diag *diag)
{
    if (!ctx || src == VK_NULL_HANDLE || dst == VK_NULL_HANDLE || size == 0 ||
        (src_offset | dst_offset | size) % 16 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_copy_buffer: NULL handle, or an offset or size that is "
                          "not a multiple of 16");
    const uint64_t align = ctx->limits.minStorageBufferOffsetAlignment
                               ? ctx->limits.minStorageBufferOffsetAlignment
                               : 1;
    const VkDeviceSize src_at = src_offset - src_offset % align;
    const VkDeviceSize dst_at = dst_offset - dst_offset % align;
    const uint64_t count = size / 16;
    const uint64_t groups = (count + 1023) / 1024;
    const uint64_t groups_x = groups < 65535 ? groups : 65535;
    const uint64_t groups_y = (groups + groups_x - 1) / groups_x;
    if (count > UINT32_MAX / 2 || groups_y > ctx->limits.maxComputeWorkGroupCount[1] ||
        size + 256 > ctx->limits.maxStorageBufferRange)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "sgfp4_vk_copy_buffer: %llu bytes is too large for one dispatch",
                          (unsigned long long)size);
    sgfp4_status s = copy_init(ctx, diag);
    if (s != SGFP4_OK)
        return s;
    const VkDescriptorBufferInfo infos[2] = {{src, src_at, src_offset - src_at + size},
                                             {dst, dst_at, dst_offset - dst_at + size}};
    *d = (sgfp4_vk_dispatch){.pipeline = ctx->copy_pipeline,
                             .layout = ctx->copy_pipeline_layout,
                             .groups_x = (uint32_t)groups_x,
                             .groups_y = (uint32_t)groups_y};
    s = sgfp4_vk_bind_buffers(ctx, ctx->copy_descriptor_pool, ctx->copy_set_layout, infos, 2, 1,
                              &d->set, diag);
    const copy_params params = {(uint32_t)count, (uint32_t)groups_x,
                                (uint32_t)((src_offset - src_at) / 16),
                                (uint32_t)((dst_offset - dst_at) / 16)};
    memcpy(d->push, &params, sizeof params);
    d->push_bytes = sizeof params;
    return s;
}

sgfp4_status sgfp4_vk_copy_buffer(sgfp4_vk_context *ctx, VkBuffer src, VkDeviceSize src_offset,
                                  VkBuffer dst, VkDeviceSize dst_offset, uint64_t size,
                                  sgfp4_diag *diag)
{
    sgfp4_vk_dispatch d;
    sgfp4_status s = sgfp4_vk_prepare_copy(ctx, src, src_offset, dst, dst_offset, size, &d, diag);
    return s == SGFP4_OK ? sgfp4_vk_run_dispatch(ctx, &d, SGFP4_VK_LAST_COPY, diag) : s;
}
