/* sgfp4_vk_copy_buffer: a compute-shader copy (shaders/copy.comp), the bandwidth reference
 * that decode is compared with. Its pipeline is created on first use.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

typedef struct copy_params {
    uint32_t count, groups_x, src_base, dst_base;
} copy_params;


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
    VkPipeline pipeline;
    sgfp4_status s = sgfp4_vk_kernel_pipeline(ctx, SGFP4_VK_COPY, NULL, 0, &pipeline, diag);
    if (s != SGFP4_OK)
        return s;
    const sgfp4_vk_kernel *k = &ctx->kernels[SGFP4_VK_COPY];
    const VkDescriptorBufferInfo infos[2] = {{src, src_at, src_offset - src_at + size},
                                             {dst, dst_at, dst_offset - dst_at + size}};
    *d = (sgfp4_vk_dispatch){.pipeline = pipeline,
                             .layout = k->pipeline_layout,
                             .groups_x = (uint32_t)groups_x,
                             .groups_y = (uint32_t)groups_y};
    s = sgfp4_vk_bind_buffers(ctx, k->pool, k->set_layout, infos, 2, 1, &d->set, diag);
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
