/* The plain read of the benchmarks (shaders/read.comp): a dispatch that only reads a byte
 * range, the ceiling of a kernel that reads the same bytes as a product at the same size.
 * Its pipeline is created on first use.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

/* The push constants of shaders/read.comp, in order. */
typedef struct read_params {
    uint32_t count, base, groups, tail, unexpected;
} read_params;

/* 16-byte vectors a workgroup reads a step (256 invocations, 8 loads each: read.comp). */
#define READ_CHUNK 2048u
/* The most workgroups of a dispatch: 128 MiB a step of the loop, so that every range the
 * benchmarks read (at most tens of MB) is one chunk a workgroup, all of them launched. */
#define READ_MAX_GROUPS 4096u


sgfp4_status sgfp4_vk_prepare_read(sgfp4_vk_context *ctx, VkBuffer src,
                                   VkDeviceSize src_offset, uint64_t bytes, VkBuffer sink,
                                   VkDescriptorPool pool, sgfp4_vk_dispatch *d,
                                   sgfp4_diag *diag)
{
    if (!ctx || src == VK_NULL_HANDLE || sink == VK_NULL_HANDLE || bytes == 0 ||
        src_offset % 16 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "read: NULL handle, no bytes, or an offset that is not a multiple "
                          "of 16");
    /* The range as the products bind theirs: from the aligned offset below, rounded up to
     * whole words (maxStorageBufferRange, a 32-bit limit, keeps every index below). Its
     * start is a multiple of 16 from the binding's. */
    VkDescriptorBufferInfo infos[3];
    uint64_t skip, unused;
    sgfp4_status s = sgfp4_vk_range(ctx, src, src_offset, bytes, &infos[0], &skip, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_range(ctx, sink, 0, 16, &infos[2], &unused, diag);
    VkPipeline pipeline;
    if (s == SGFP4_OK)
        s = sgfp4_vk_kernel_pipeline(ctx, SGFP4_VK_READ, NULL, 0, &pipeline, diag);
    if (s != SGFP4_OK)
        return s;
    const sgfp4_vk_kernel *k = &ctx->kernels[SGFP4_VK_READ];
    infos[1] = infos[0];
    const uint64_t words = (bytes + 3) / 4;
    const uint64_t count = words / 4;
    const uint64_t chunks = (count + READ_CHUNK - 1) / READ_CHUNK;
    uint64_t groups = chunks < READ_MAX_GROUPS ? chunks : READ_MAX_GROUPS;
    if (groups > ctx->limits.maxComputeWorkGroupCount[0])
        groups = ctx->limits.maxComputeWorkGroupCount[0];
    if (groups == 0) /* the tail alone */
        groups = 1;
    *d = (sgfp4_vk_dispatch){.pipeline = pipeline,
                             .layout = k->pipeline_layout,
                             .groups_x = (uint32_t)groups,
                             .groups_y = 1};
    s = sgfp4_vk_bind_buffers(ctx, pool, k->set_layout, infos, 3, 0, &d->set, diag);
    const read_params params = {(uint32_t)count, (uint32_t)(skip / 16), (uint32_t)groups,
                                (uint32_t)(words % 4), SGFP4_VK_READ_UNEXPECTED};
    memcpy(d->push, &params, sizeof params);
    d->push_bytes = sizeof params;
    return s;
}
