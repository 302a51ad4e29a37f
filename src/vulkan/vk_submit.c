/* Recording and submitting the context's one command buffer, synchronously.
 * SPDX-License-Identifier: MIT */
#include "vulkan/vk_internal.h"
#include "container/diag.h"

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
