/* sgfp4_vk_copy_buffer: a compute-shader copy (shaders/copy.comp), the bandwidth reference
 * that decode is compared with. Its pipeline is created on first use.
 * SPDX-License-Identifier: MIT */
#include <time.h>

#include "vulkan/vk_internal.h"
#include "container/diag.h"

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
        sgfp4_vk_layouts_create(ctx->device, 2, sizeof(copy_params), &ctx->copy_set_layout,
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

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

sgfp4_status sgfp4_vk_copy_buffer(sgfp4_vk_context *ctx, VkBuffer src, VkDeviceSize src_offset,
                                  VkBuffer dst, VkDeviceSize dst_offset, uint64_t size,
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
    VkResult r = vkResetDescriptorPool(ctx->device, ctx->copy_descriptor_pool, 0);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkResetDescriptorPool");
    VkDescriptorSet set;
    const VkDescriptorSetAllocateInfo dsai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = ctx->copy_descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &ctx->copy_set_layout};
    if ((r = vkAllocateDescriptorSets(ctx->device, &dsai, &set)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkAllocateDescriptorSets");
    const VkDescriptorBufferInfo infos[2] = {{src, src_at, src_offset - src_at + size},
                                             {dst, dst_at, dst_offset - dst_at + size}};
    VkWriteDescriptorSet writes[2];
    for (uint32_t i = 0; i < 2; i++)
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                           .dstSet = set,
                                           .dstBinding = i,
                                           .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &infos[i]};
    vkUpdateDescriptorSets(ctx->device, 2, writes, 0, NULL);
    const copy_params params = {(uint32_t)count, (uint32_t)groups_x,
                                (uint32_t)((src_offset - src_at) / 16),
                                (uint32_t)((dst_offset - dst_at) / 16)};
    const double t0 = now_seconds();
    ctx->last_call = SGFP4_VK_LAST_NONE;
    if ((s = sgfp4_vk_begin(ctx, diag)) != SGFP4_OK)
        return s;
    if (ctx->timestamps)
        vkCmdResetQueryPool(ctx->cmd, ctx->queries, 0, 4);
    sgfp4_vk_barrier_all(ctx);
    if (ctx->timestamps)
        vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->queries, 0);
    vkCmdBindPipeline(ctx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ctx->copy_pipeline);
    vkCmdBindDescriptorSets(ctx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ctx->copy_pipeline_layout,
                            0, 1, &set, 0, NULL);
    vkCmdPushConstants(ctx->cmd, ctx->copy_pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       sizeof params, &params);
    vkCmdDispatch(ctx->cmd, (uint32_t)groups_x, (uint32_t)groups_y, 1);
    if (ctx->timestamps)
        vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->queries, 1);
    sgfp4_vk_barrier_all(ctx);
    if ((s = sgfp4_vk_submit_wait(ctx, diag)) != SGFP4_OK)
        return s;
    ctx->last_call = SGFP4_VK_LAST_COPY;
    ctx->last_submit_seconds = now_seconds() - t0;
    return SGFP4_OK;
}
