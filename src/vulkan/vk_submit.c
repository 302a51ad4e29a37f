/* Recording and submitting the context's one command buffer, synchronously; descriptor sets;
 * one dispatch.
 * SPDX-License-Identifier: MIT */
#include "vulkan/vk_internal.h"
#include "common/diag.h"

sgfp4_status sgfp4_vk_begin(sgfp4_vk_context *ctx, sgfp4_diag *diag)
{
    VkResult r = vkResetCommandBuffer(ctx->cmd, 0);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkResetCommandBuffer");
    const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                         .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if ((r = vkBeginCommandBuffer(ctx->cmd, &bi)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkBeginCommandBuffer");
    return SGFP4_OK;
}

void sgfp4_vk_barrier_all(sgfp4_vk_context *ctx)
{
    const VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                                .dstAccessMask =
                                    VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    vkCmdPipelineBarrier(ctx->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

sgfp4_status sgfp4_vk_submit_wait(sgfp4_vk_context *ctx, sgfp4_diag *diag)
{
    VkResult r = vkEndCommandBuffer(ctx->cmd);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkEndCommandBuffer");
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                             .commandBufferCount = 1,
                             .pCommandBuffers = &ctx->cmd};
    if ((r = vkResetFences(ctx->device, 1, &ctx->fence)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkResetFences");
    if ((r = vkQueueSubmit(ctx->queue, 1, &si, ctx->fence)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkQueueSubmit");
    /* Ten minutes: far beyond any decode (lavapipe included); a hang is reported, not waited
     * out forever. */
    r = vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, 600ull * 1000000000ull);
    if (r == VK_TIMEOUT)
        return sgfp4_fail(diag, SGFP4_ERR_VK, -1, -1, -1,
                          "Vulkan: the GPU did not finish within 10 minutes");
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkWaitForFences");
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_bind_buffers(sgfp4_vk_context *ctx, VkDescriptorPool pool,
                                   VkDescriptorSetLayout layout,
                                   const VkDescriptorBufferInfo *infos, uint32_t count,
                                   int reset, VkDescriptorSet *set, sgfp4_diag *diag)
{
    VkResult r;
    if (reset && (r = vkResetDescriptorPool(ctx->device, pool, 0)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkResetDescriptorPool");
    const VkDescriptorSetAllocateInfo dsai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &layout};
    if ((r = vkAllocateDescriptorSets(ctx->device, &dsai, set)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkAllocateDescriptorSets");
    VkWriteDescriptorSet writes[SGFP4_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < count; i++)
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                           .dstSet = *set,
                                           .dstBinding = i,
                                           .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &infos[i]};
    vkUpdateDescriptorSets(ctx->device, count, writes, 0, NULL);
    return SGFP4_OK;
}

void sgfp4_vk_record_dispatch_into(VkCommandBuffer cmd, const sgfp4_vk_dispatch *d)
{
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &d->set, 0,
                            NULL);
    vkCmdPushConstants(cmd, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, d->push_bytes, d->push);
    vkCmdDispatch(cmd, d->groups_x, d->groups_y, 1);
}

void sgfp4_vk_record_dispatch(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d)
{
    sgfp4_vk_record_dispatch_into(ctx->cmd, d);
}

sgfp4_status sgfp4_vk_run_dispatch(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d,
                                   sgfp4_diag *diag)
{
    const sgfp4_status s = sgfp4_vk_begin(ctx, diag);
    if (s != SGFP4_OK)
        return s;
    sgfp4_vk_barrier_all(ctx); /* earlier work of this queue is visible */
    sgfp4_vk_record_dispatch(ctx, d);
    sgfp4_vk_barrier_all(ctx); /* the results are visible to later work of this queue */
    return sgfp4_vk_submit_wait(ctx, diag);
}
