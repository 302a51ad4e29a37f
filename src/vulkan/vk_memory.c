/* Buffers and their memory: device-local storage buffers, and host-visible mapped ones
 * for staging uploads and reading results back.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

/* A memory type allowed by `bits` with all of `want`; -1 if none. */
static int find_memory_type(const VkPhysicalDeviceMemoryProperties *m, uint32_t bits,
                            VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < m->memoryTypeCount; i++)
        if ((bits & (1u << i)) && (m->memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

sgfp4_status sgfp4_vk_buffer_init(sgfp4_vk_context *ctx, uint64_t size, int host,
                                  sgfp4_vk_buffer *buffer, sgfp4_diag *diag)
{
    *buffer = (sgfp4_vk_buffer){0};
    if (size == 0)
        size = 16;
    const VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(ctx->device, &bci, NULL, &buffer->buffer);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx->device, buffer->buffer, &req);
    int type;
    if (host) { /* prefer cached memory: results are read back by the CPU */
        type = find_memory_type(&ctx->memory, req.memoryTypeBits,
                                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                    VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                    VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (type < 0)
            type = find_memory_type(&ctx->memory, req.memoryTypeBits,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    } else {
        type = find_memory_type(&ctx->memory, req.memoryTypeBits,
                                VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (type < 0)
            type = find_memory_type(&ctx->memory, req.memoryTypeBits, 0);
    }
    if (type < 0) {
        sgfp4_vk_buffer_release(ctx, buffer);
        return sgfp4_fail(diag, SGFP4_ERR_VK, -1, -1, -1,
                          "Vulkan: no suitable memory type for a %s buffer",
                          host ? "host-visible" : "device");
    }
    const VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                      .allocationSize = req.size,
                                      .memoryTypeIndex = (uint32_t)type};
    if ((r = vkAllocateMemory(ctx->device, &mai, NULL, &buffer->memory)) != VK_SUCCESS) {
        sgfp4_vk_buffer_release(ctx, buffer);
        return sgfp4_vk_fail(diag, r, "vkAllocateMemory");
    }
    if ((r = vkBindBufferMemory(ctx->device, buffer->buffer, buffer->memory, 0)) != VK_SUCCESS) {
        sgfp4_vk_buffer_release(ctx, buffer);
        return sgfp4_vk_fail(diag, r, "vkBindBufferMemory");
    }
    if (host && (r = vkMapMemory(ctx->device, buffer->memory, 0, VK_WHOLE_SIZE, 0,
                                 &buffer->mapped)) != VK_SUCCESS) {
        sgfp4_vk_buffer_release(ctx, buffer);
        return sgfp4_vk_fail(diag, r, "vkMapMemory");
    }
    buffer->size = size;
    return SGFP4_OK;
}

void sgfp4_vk_buffer_release(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer)
{
    if (buffer->buffer)
        vkDestroyBuffer(ctx->device, buffer->buffer, NULL);
    if (buffer->memory)
        vkFreeMemory(ctx->device, buffer->memory, NULL); /* unmaps implicitly */
    *buffer = (sgfp4_vk_buffer){0};
}

sgfp4_status sgfp4_vk_buffer_create(sgfp4_vk_context *ctx, uint64_t size, sgfp4_vk_buffer **out,
                                    sgfp4_diag *diag)
{
    if (!ctx || !out || size == 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_buffer_create: NULL argument or zero size");
    *out = NULL;
    sgfp4_vk_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    const sgfp4_status s = sgfp4_vk_buffer_init(ctx, size, 0, b, diag);
    if (s != SGFP4_OK) {
        free(b);
        return s;
    }
    *out = b;
    return SGFP4_OK;
}

uint64_t sgfp4_vk_buffer_size(const sgfp4_vk_buffer *buffer)
{
    return buffer ? buffer->size : 0;
}

VkBuffer sgfp4_vk_buffer_handle(const sgfp4_vk_buffer *buffer)
{
    return buffer ? buffer->buffer : VK_NULL_HANDLE;
}

void sgfp4_vk_buffer_free(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer)
{
    if (!ctx || !buffer)
        return;
    sgfp4_vk_buffer_release(ctx, buffer);
    free(buffer);
}
