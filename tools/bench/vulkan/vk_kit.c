/* The kit's own submission machinery on the context's device and queue: a command buffer, a
 * fence, timestamp queries; bursts and streams of recorded steps.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "vk_kit_internal.h"

sgfp4_status vkit_fail(sgfp4_diag *diag, sgfp4_status status, const char *fmt, ...)
{
    if (diag) {
        *diag = (sgfp4_diag){
            .status = status, .offset = -1, .block = -1, .leaf = -1, .row = -1, .col = -1};
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->message, sizeof diag->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

sgfp4_status vkit_vk_fail(sgfp4_diag *diag, VkResult r, const char *what)
{
    return vkit_fail(diag, r == VK_ERROR_DEVICE_LOST ? SGFP4_ERR_VK_DEVICE_LOST : SGFP4_ERR_VK,
                     "Vulkan: %s failed (VkResult %d)", what, (int)r);
}

static sgfp4_status create_objects(vkit *k, sgfp4_diag *diag)
{
    const VkDevice dev = k->h.device;
    const VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                         .queueFamilyIndex = k->h.queue_family};
    VkResult r = vkCreateCommandPool(dev, &pci, NULL, &k->pool);
    if (r != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkCreateCommandPool");
    const VkCommandBufferAllocateInfo cai = {.sType =
                                                 VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                             .commandPool = k->pool,
                                             .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                             .commandBufferCount = 1};
    if ((r = vkAllocateCommandBuffers(dev, &cai, &k->cmd)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkAllocateCommandBuffers");
    const VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vkCreateFence(dev, &fci, NULL, &k->fence)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkCreateFence");
    const VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                       .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                       .queryCount = 2 * VKIT_MAX_TIMED};
    if ((r = vkCreateQueryPool(dev, &qci, NULL, &k->queries)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkCreateQueryPool");
    return vkit_kernels_init(k, diag);
}

sgfp4_status vkit_open(sgfp4_vk_context *ctx, vkit **out, sgfp4_diag *diag)
{
    if (!ctx || !out)
        return vkit_fail(diag, SGFP4_ERR_ARGUMENT, "vkit_open: NULL argument");
    *out = NULL;
    vkit *k = calloc(1, sizeof *k);
    if (!k)
        return vkit_fail(diag, SGFP4_ERR_NOMEM, "out of memory");
    k->ctx = ctx;
    sgfp4_vk_context_get_handles(ctx, &k->h);
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(k->h.physical_device, &p);
    k->limits = p.limits;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(k->h.physical_device, &nq, NULL);
    VkQueueFamilyProperties *q = calloc(nq ? nq : 1, sizeof *q);
    if (q)
        vkGetPhysicalDeviceQueueFamilyProperties(k->h.physical_device, &nq, q);
    const int timestamps = q && k->h.queue_family < nq &&
                           q[k->h.queue_family].timestampValidBits > 0 &&
                           p.limits.timestampPeriod > 0;
    free(q);
    sgfp4_status s =
        timestamps ? create_objects(k, diag)
                   : vkit_fail(diag, SGFP4_ERR_UNSUPPORTED, "Vulkan: the queue has no timestamps");
    if (s != SGFP4_OK) {
        vkit_close(k);
        return s;
    }
    *out = k;
    return SGFP4_OK;
}

sgfp4_vk_context *vkit_context(const vkit *k)
{
    return k->ctx;
}

void vkit_close(vkit *k)
{
    if (!k)
        return;
    vkit_kernels_release(k);
    const VkDevice dev = k->h.device;
    if (k->queries)
        vkDestroyQueryPool(dev, k->queries, NULL);
    if (k->fence)
        vkDestroyFence(dev, k->fence, NULL);
    if (k->pool)
        vkDestroyCommandPool(dev, k->pool, NULL);
    free(k);
}

static void barrier(VkCommandBuffer cmd)
{
    const VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                                .dstAccessMask =
                                    VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void record(const vkit *k, const vkit_step *step)
{
    if (step->op) {
        sgfp4_vk_op_record(step->op, k->cmd);
        return;
    }
    const vkit_dispatch *d = step->dispatch;
    if (!d->pipeline) {
        const VkBufferCopy c = {0, 0, d->bytes};
        vkCmdCopyBuffer(k->cmd, d->src, d->dst, 1, &c);
        return;
    }
    vkCmdBindPipeline(k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline);
    vkCmdBindDescriptorSets(k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &d->set, 0,
                            NULL);
    vkCmdPushConstants(k->cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, d->push_bytes, d->push);
    vkCmdDispatch(k->cmd, d->groups_x, d->groups_y, 1);
}

/* Records and submits `groups` timed groups (group g: steps first[g][0..len[g])) and waits. */
static sgfp4_status submit_groups(vkit *k, const vkit_step *const *first, const unsigned *len,
                                  unsigned groups, double *seconds, sgfp4_diag *diag)
{
    /* the pool resets its buffers on begin */
    const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                         .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkBeginCommandBuffer(k->cmd, &bi);
    if (r != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkBeginCommandBuffer");
    vkCmdResetQueryPool(k->cmd, k->queries, 0, 2 * groups);
    for (unsigned g = 0; g < groups; g++) {
        barrier(k->cmd); /* the previous group is done: no overlap */
        vkCmdWriteTimestamp(k->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, k->queries, 2 * g);
        for (unsigned i = 0; i < len[g]; i++)
            record(k, &first[g][i]);
        vkCmdWriteTimestamp(k->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, k->queries, 2 * g + 1);
    }
    barrier(k->cmd);
    if ((r = vkEndCommandBuffer(k->cmd)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkEndCommandBuffer");
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                             .commandBufferCount = 1,
                             .pCommandBuffers = &k->cmd};
    if ((r = vkResetFences(k->h.device, 1, &k->fence)) != VK_SUCCESS ||
        (r = vkQueueSubmit(k->h.queue, 1, &si, k->fence)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkQueueSubmit");
    /* Ten minutes: far beyond any benchmark (lavapipe included); a hang is reported. */
    r = vkWaitForFences(k->h.device, 1, &k->fence, VK_TRUE, 600ull * 1000000000ull);
    if (r != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkWaitForFences");
    uint64_t *ticks = malloc(sizeof *ticks * 2 * groups);
    if (!ticks)
        return vkit_fail(diag, SGFP4_ERR_NOMEM, "out of memory");
    r = vkGetQueryPoolResults(k->h.device, k->queries, 0, 2 * groups, sizeof *ticks * 2 * groups,
                              ticks, sizeof *ticks,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    for (unsigned g = 0; r == VK_SUCCESS && g < groups; g++)
        seconds[g] = (double)(ticks[2 * g + 1] - ticks[2 * g]) * k->limits.timestampPeriod * 1e-9;
    free(ticks);
    return r == VK_SUCCESS ? SGFP4_OK : vkit_vk_fail(diag, r, "vkGetQueryPoolResults");
}

sgfp4_status vkit_run(vkit *k, const vkit_step *steps, unsigned n, const vkit_step *copy,
                      unsigned rounds, int stream, double *op_seconds, double *copy_seconds,
                      sgfp4_diag *diag)
{
    const unsigned per_round = copy ? 2 : 1, groups = rounds * per_round;
    const uint64_t timed = (uint64_t)rounds * ((stream ? n : 1) + (copy ? 1 : 0));
    if (!k || !steps || n < 1 || n > VKIT_MAX_STEPS || rounds < 1 || !op_seconds ||
        (copy && !copy_seconds) || timed > VKIT_MAX_TIMED)
        return vkit_fail(diag, SGFP4_ERR_ARGUMENT,
                         "vkit_run: NULL argument, or not 1..%d steps, or %u rounds of them "
                         "over %d dispatches",
                         VKIT_MAX_STEPS, rounds, VKIT_MAX_TIMED);
    const vkit_step **first = malloc(sizeof *first * groups);
    unsigned *len = malloc(sizeof *len * groups);
    double *seconds = malloc(sizeof *seconds * groups);
    sgfp4_status s =
        first && len && seconds ? SGFP4_OK : vkit_fail(diag, SGFP4_ERR_NOMEM, "out of memory");
    for (unsigned r = 0; s == SGFP4_OK && r < rounds; r++) {
        first[r * per_round] = stream ? steps : &steps[r % n];
        len[r * per_round] = stream ? n : 1;
        if (copy) {
            first[r * per_round + 1] = copy;
            len[r * per_round + 1] = 1;
        }
    }
    if (s == SGFP4_OK)
        s = submit_groups(k, first, len, groups, seconds, diag);
    for (unsigned r = 0; s == SGFP4_OK && r < rounds; r++) {
        op_seconds[r] = seconds[r * per_round] / (stream ? n : 1);
        if (copy)
            copy_seconds[r] = seconds[r * per_round + 1];
    }
    free(first);
    free(len);
    free(seconds);
    return s;
}

sgfp4_status vkit_time(vkit *k, vkit_step step, double *seconds, sgfp4_diag *diag)
{
    return vkit_run(k, &step, 1, NULL, 1, 0, seconds, NULL, diag);
}
