/* The kit's state, shared by its two files.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_VK_KIT_INTERNAL_H
#define SGFP4_VK_KIT_INTERNAL_H

#include "vk_kit.h"

enum { VKIT_COPY, VKIT_READ, VKIT_KERNELS };

struct vkit {
    sgfp4_vk_context *ctx;
    sgfp4_vk_handles h;
    VkPhysicalDeviceLimits limits;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries; /* two timestamps per timed group */
    /* The kernels: one set layout (three storage buffers) and pipeline layout for all,
     * a pool their sets are freed to, and the pipelines, created on first use. */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkDescriptorPool sets;
    VkShaderModule modules[VKIT_KERNELS];
    VkPipeline copy, read;
    sgfp4_vk_buffer *sink;
};

sgfp4_status vkit_fail(sgfp4_diag *diag, sgfp4_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
sgfp4_status vkit_vk_fail(sgfp4_diag *diag, VkResult r, const char *what);
sgfp4_status vkit_kernels_init(vkit *kit, sgfp4_diag *diag);
void vkit_kernels_release(vkit *kit);

#endif
