/* sgfp4_vk_buffer_write / sgfp4_vk_buffer_read: bytes between host memory and a device
 * buffer through a host-visible staging buffer (benchmarks and tests fill weights and
 * activations, and read results, with them).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

/* One copy between `buffer` at `offset` and a fresh staging buffer, in the direction asked. */
static sgfp4_status transfer(sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                             void *host, size_t size, int to_device, sgfp4_diag *diag)
{
    if (!ctx || buffer == VK_NULL_HANDLE || (!host && size))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_buffer_%s: NULL argument", to_device ? "write" : "read");
    if (size == 0)
        return SGFP4_OK;
    sgfp4_vk_buffer staging;
    sgfp4_status s = sgfp4_vk_buffer_init(ctx, size, 1, &staging, diag);
    if (s != SGFP4_OK)
        return s;
    if (to_device)
        memcpy(staging.mapped, host, size);
    s = sgfp4_vk_begin(ctx, diag);
    if (s == SGFP4_OK) {
        sgfp4_vk_barrier_all(ctx); /* earlier work of this queue on `buffer` is done */
        const VkBufferCopy c = {to_device ? 0 : offset, to_device ? offset : 0, size};
        if (to_device)
            vkCmdCopyBuffer(ctx->cmd, staging.buffer, buffer, 1, &c);
        else
            vkCmdCopyBuffer(ctx->cmd, buffer, staging.buffer, 1, &c);
        sgfp4_vk_barrier_all(ctx); /* and visible to the host and to later work */
        s = sgfp4_vk_submit_wait(ctx, diag);
    }
    if (s == SGFP4_OK && !to_device)
        memcpy(host, staging.mapped, size);
    sgfp4_vk_buffer_release(ctx, &staging);
    return s;
}

sgfp4_status sgfp4_vk_buffer_write(sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                   const void *data, size_t size, sgfp4_diag *diag)
{
    return transfer(ctx, buffer, offset, (void *)data, size, 1, diag);
}

sgfp4_status sgfp4_vk_buffer_read(sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                  void *data, size_t size, sgfp4_diag *diag)
{
    return transfer(ctx, buffer, offset, data, size, 0, diag);
}
