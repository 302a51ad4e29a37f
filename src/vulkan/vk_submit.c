/* Recording and submitting the context's one command buffer, synchronously; descriptor sets;
 * one timed dispatch, or a timed burst of them in one submission.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "vulkan/vk_internal.h"
#include "common/clock.h"
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
                                   int last_call, sgfp4_diag *diag)
{
    const double t0 = sgfp4_now();
    ctx->last_call = SGFP4_VK_LAST_NONE;
    sgfp4_status s = sgfp4_vk_begin(ctx, diag);
    if (s != SGFP4_OK)
        return s;
    if (ctx->timestamps)
        vkCmdResetQueryPool(ctx->cmd, ctx->queries, 0, 4);
    sgfp4_vk_barrier_all(ctx); /* earlier work of this queue is visible */
    if (ctx->timestamps)
        vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->queries, 0);
    sgfp4_vk_record_dispatch(ctx, d);
    if (ctx->timestamps)
        vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->queries, 1);
    sgfp4_vk_barrier_all(ctx); /* the results are visible to later work of this queue */
    if ((s = sgfp4_vk_submit_wait(ctx, diag)) != SGFP4_OK)
        return s;
    ctx->last_call = last_call;
    ctx->last_submit_seconds = sgfp4_now() - t0;
    return SGFP4_OK;
}

/* The shared body of the bursts: the dispatches in groups of group_len[g] (a group's
 * dispatches recorded back to back with no barrier between them), each group after a full
 * barrier and between two timestamps: seconds[g] is group g. */
static sgfp4_status run_groups(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d,
                               const unsigned *group_len, unsigned groups, double *seconds,
                               sgfp4_diag *diag)
{
    VkQueryPool queries;
    const VkQueryPoolCreateInfo qp = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                      .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                      .queryCount = 2 * groups};
    VkResult r = vkCreateQueryPool(ctx->device, &qp, NULL, &queries);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateQueryPool");
    uint64_t *ticks = malloc(sizeof *ticks * 2 * groups);
    ctx->last_call = SGFP4_VK_LAST_NONE; /* a burst leaves no single timing */
    sgfp4_status s = ticks ? sgfp4_vk_begin(ctx, diag)
                           : sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    if (s == SGFP4_OK) {
        vkCmdResetQueryPool(ctx->cmd, queries, 0, 2 * groups);
        unsigned next = 0;
        for (unsigned g = 0; g < groups; g++) {
            sgfp4_vk_barrier_all(ctx); /* the previous group is done: no overlap */
            vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 2 * g);
            for (unsigned k = 0; k < group_len[g]; k++)
                sgfp4_vk_record_dispatch(ctx, &d[next++]);
            vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries,
                                2 * g + 1);
        }
        sgfp4_vk_barrier_all(ctx);
        s = sgfp4_vk_submit_wait(ctx, diag);
    }
    if (s == SGFP4_OK &&
        (r = vkGetQueryPoolResults(ctx->device, queries, 0, 2 * groups,
                                   sizeof *ticks * 2 * groups, ticks, sizeof *ticks,
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT)) !=
            VK_SUCCESS)
        s = sgfp4_vk_fail(diag, r, "vkGetQueryPoolResults");
    for (unsigned g = 0; s == SGFP4_OK && g < groups; g++)
        seconds[g] = (double)(ticks[2 * g + 1] - ticks[2 * g]) * ctx->timestamp_ns * 1e-9;
    free(ticks);
    vkDestroyQueryPool(ctx->device, queries, NULL);
    return s;
}

sgfp4_status sgfp4_vk_run_burst(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d, unsigned n,
                                unsigned rounds, double *seconds, sgfp4_diag *diag)
{
    const unsigned count = n * rounds;
    if (!ctx->timestamps)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: the queue has no timestamps");
    if (n == 0 || rounds == 0 || count > SGFP4_VK_BURST_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "a burst of %u x %u dispatches (1..%d)", rounds, n,
                          SGFP4_VK_BURST_MAX);
    sgfp4_vk_dispatch *seq = malloc(sizeof *seq * count);
    unsigned *ones = malloc(sizeof *ones * count);
    sgfp4_status s = seq && ones ? SGFP4_OK
                                 : sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (unsigned i = 0; s == SGFP4_OK && i < count; i++) {
        seq[i] = d[i % n];
        ones[i] = 1;
    }
    if (s == SGFP4_OK)
        s = run_groups(ctx, seq, ones, count, seconds, diag);
    free(seq);
    free(ones);
    return s;
}

sgfp4_status sgfp4_vk_run_stream(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d, unsigned n,
                                 const sgfp4_vk_dispatch *after, unsigned rounds,
                                 double *seconds, sgfp4_diag *diag)
{
    const unsigned per_round = n + (after ? 1 : 0), groups = rounds * (after ? 2 : 1);
    if (!ctx->timestamps)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: the queue has no timestamps");
    if (n == 0 || rounds == 0 || (uint64_t)per_round * rounds > SGFP4_VK_BURST_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "a stream of %u x %u dispatches (1..%d)", rounds, per_round,
                          SGFP4_VK_BURST_MAX);
    sgfp4_vk_dispatch *seq = malloc(sizeof *seq * per_round * rounds);
    unsigned *len = malloc(sizeof *len * groups);
    sgfp4_status s = seq && len ? SGFP4_OK
                                : sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (unsigned r = 0; s == SGFP4_OK && r < rounds; r++) {
        for (unsigned k = 0; k < n; k++)
            seq[r * per_round + k] = d[k];
        if (after) {
            seq[r * per_round + n] = *after;
            len[2 * r] = n;
            len[2 * r + 1] = 1;
        } else {
            len[r] = n;
        }
    }
    if (s == SGFP4_OK)
        s = run_groups(ctx, seq, len, groups, seconds, diag);
    free(seq);
    free(len);
    return s;
}
