/* The kit's reference kernels (shaders/: copy.comp and read.comp beside this file), their layouts and pipelines, and their dispatches.
 * SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vk_kit_internal.h"

#include "copy.spv.h"
#include "read.spv.h"

/* Descriptor sets alive at once (a benchmark case holds at most a few dozen). */
enum { MAX_SETS = 1024, BINDINGS = 3, PUSH_BYTES = sizeof(((vkit_dispatch *)0)->push) };

sgfp4_status vkit_kernels_init(vkit *k, sgfp4_diag *diag)
{
    const VkDevice dev = k->h.device;
    VkDescriptorSetLayoutBinding b[BINDINGS];
    for (uint32_t i = 0; i < BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    const VkDescriptorSetLayoutCreateInfo dsl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = BINDINGS,
        .pBindings = b};
    VkResult r = vkCreateDescriptorSetLayout(dev, &dsl, NULL, &k->set_layout);
    if (r != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkCreateDescriptorSetLayout");
    const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, PUSH_BYTES};
    const VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                             .setLayoutCount = 1,
                                             .pSetLayouts = &k->set_layout,
                                             .pushConstantRangeCount = 1,
                                             .pPushConstantRanges = &range};
    if ((r = vkCreatePipelineLayout(dev, &plci, NULL, &k->layout)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkCreatePipelineLayout");
    const VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, BINDINGS * MAX_SETS};
    const VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                             .flags =
                                                 VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                                             .maxSets = MAX_SETS,
                                             .poolSizeCount = 1,
                                             .pPoolSizes = &size};
    if ((r = vkCreateDescriptorPool(dev, &dpci, NULL, &k->sets)) != VK_SUCCESS)
        return vkit_vk_fail(diag, r, "vkCreateDescriptorPool");
    const uint32_t *code[VKIT_KERNELS] = {sgfp4_spv_copy, sgfp4_spv_read};
    const size_t bytes[VKIT_KERNELS] = {sizeof sgfp4_spv_copy, sizeof sgfp4_spv_read};
    for (int i = 0; i < VKIT_KERNELS; i++) {
        const VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                               .codeSize = bytes[i],
                                               .pCode = code[i]};
        if ((r = vkCreateShaderModule(dev, &smci, NULL, &k->modules[i])) != VK_SUCCESS)
            return vkit_vk_fail(diag, r, "vkCreateShaderModule");
    }
    return sgfp4_vk_buffer_create(k->ctx, 16, &k->sink, diag);
}

void vkit_kernels_release(vkit *k)
{
    const VkDevice dev = k->h.device;
    if (k->copy)
        vkDestroyPipeline(dev, k->copy, NULL);
    if (k->read)
        vkDestroyPipeline(dev, k->read, NULL);
    for (int i = 0; i < VKIT_KERNELS; i++)
        if (k->modules[i])
            vkDestroyShaderModule(dev, k->modules[i], NULL);
    if (k->sets)
        vkDestroyDescriptorPool(dev, k->sets, NULL);
    if (k->layout)
        vkDestroyPipelineLayout(dev, k->layout, NULL);
    if (k->set_layout)
        vkDestroyDescriptorSetLayout(dev, k->set_layout, NULL);
    sgfp4_vk_buffer_free(k->ctx, k->sink);
}

/* *pipeline, created on first use from kernel `id`. */
static sgfp4_status pipeline_of(vkit *k, int id, VkPipeline *pipeline, sgfp4_diag *diag)
{
    if (*pipeline)
        return SGFP4_OK;
    const VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = k->modules[id],
                  .pName = "main"},
        .layout = k->layout};
    const VkResult r =
        vkCreateComputePipelines(k->h.device, VK_NULL_HANDLE, 1, &ci, NULL, pipeline);
    if (r != VK_SUCCESS) {
        *pipeline = VK_NULL_HANDLE;
        return vkit_vk_fail(diag, r, "vkCreateComputePipelines");
    }
    return SGFP4_OK;
}

/* Fills *d: the pipeline, a set binding infos[0..n), the push constants, the grid. */
static sgfp4_status dispatch_of(vkit *k, VkPipeline pipeline, const VkDescriptorBufferInfo *infos,
                                uint32_t n, const void *push, uint32_t push_bytes,
                                uint64_t groups_x, uint64_t groups_y, vkit_dispatch *d,
                                sgfp4_diag *diag)
{
    *d = (vkit_dispatch){.pipeline = pipeline,
                         .push_bytes = push_bytes,
                         .groups_x = (uint32_t)groups_x,
                         .groups_y = (uint32_t)groups_y};
    memcpy(d->push, push, push_bytes);
    const VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                            .descriptorPool = k->sets,
                                            .descriptorSetCount = 1,
                                            .pSetLayouts = &k->set_layout};
    const VkResult r = vkAllocateDescriptorSets(k->h.device, &ai, &d->set);
    if (r != VK_SUCCESS) {
        d->set = VK_NULL_HANDLE;
        return vkit_vk_fail(diag, r, "vkAllocateDescriptorSets");
    }
    VkWriteDescriptorSet w[BINDINGS];
    for (uint32_t i = 0; i < n; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = d->set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &infos[i]};
    vkUpdateDescriptorSets(k->h.device, n, w, 0, NULL);
    return SGFP4_OK;
}

void vkit_dispatch_free(vkit *k, vkit_dispatch *d)
{
    if (k && d && d->set)
        vkFreeDescriptorSets(k->h.device, k->sets, 1, &d->set);
    if (d)
        d->set = VK_NULL_HANDLE;
}

VkBuffer vkit_read_sink(const vkit *k)
{
    return sgfp4_vk_buffer_handle(k->sink);
}

static uint64_t offset_align(const vkit *k)
{
    return k->limits.minStorageBufferOffsetAlignment ? k->limits.minStorageBufferOffsetAlignment
                                                     : 1;
}

sgfp4_status vkit_copy_prepare(vkit *k, VkBuffer src, VkBuffer dst, uint64_t bytes,
                               vkit_dispatch *out, sgfp4_diag *diag)
{
    if (!k || !out || src == VK_NULL_HANDLE || dst == VK_NULL_HANDLE || bytes == 0 ||
        bytes % 16 != 0)
        return vkit_fail(diag, SGFP4_ERR_ARGUMENT,
                         "copy: NULL handle, or a size that is not a multiple of 16");
    /* 1024 vectors a workgroup (copy.comp), the groups in rows of at most 65535 */
    const uint64_t count = bytes / 16, groups = (count + 1023) / 1024;
    const uint64_t groups_x = groups < 65535 ? groups : 65535;
    const uint64_t groups_y = (groups + groups_x - 1) / groups_x;
    if (count > UINT32_MAX / 2 || groups_y > k->limits.maxComputeWorkGroupCount[1] ||
        bytes > k->limits.maxStorageBufferRange)
        return vkit_fail(diag, SGFP4_ERR_UNSUPPORTED,
                         "copy: %llu bytes is too large for one dispatch",
                         (unsigned long long)bytes);
    sgfp4_status s = pipeline_of(k, VKIT_COPY, &k->copy, diag);
    const VkDescriptorBufferInfo infos[2] = {{src, 0, bytes}, {dst, 0, bytes}};
    const uint32_t push[4] = {(uint32_t)count, (uint32_t)groups_x, 0, 0};
    return s == SGFP4_OK
               ? dispatch_of(k, k->copy, infos, 2, push, sizeof push, groups_x, groups_y, out, diag)
               : s;
}

vkit_dispatch vkit_dma(VkBuffer src, VkBuffer dst, uint64_t bytes)
{
    return (vkit_dispatch){.src = src, .dst = dst, .bytes = bytes};
}

sgfp4_status vkit_read_prepare(vkit *k, VkBuffer buffer, VkDeviceSize offset, uint64_t bytes,
                               vkit_dispatch *out, sgfp4_diag *diag)
{
    enum { CHUNK = 2048, MAX_GROUPS = 4096 }; /* read.comp: vectors a workgroup reads a step */
    if (!k || !out || buffer == VK_NULL_HANDLE || bytes == 0 || offset % 16 != 0)
        return vkit_fail(diag, SGFP4_ERR_ARGUMENT,
                         "read: NULL argument, no bytes, or an offset that is not a multiple "
                         "of 16");
    /* the range as the products bind theirs: from the aligned offset below, whole words */
    const VkDeviceSize at = offset - offset % offset_align(k);
    const uint64_t span = ((offset - at) + bytes + 3) & ~(uint64_t)3;
    if (span > k->limits.maxStorageBufferRange)
        return vkit_fail(diag, SGFP4_ERR_UNSUPPORTED,
                         "read: a range of %llu bytes exceeds maxStorageBufferRange",
                         (unsigned long long)span);
    const uint64_t words = (bytes + 3) / 4, count = words / 4;
    uint64_t groups = (count + CHUNK - 1) / CHUNK;
    groups = groups < MAX_GROUPS ? groups : MAX_GROUPS;
    if (groups > k->limits.maxComputeWorkGroupCount[0])
        groups = k->limits.maxComputeWorkGroupCount[0];
    if (groups == 0) /* the tail alone */
        groups = 1;
    sgfp4_status s = pipeline_of(k, VKIT_READ, &k->read, diag);
    const VkDescriptorBufferInfo infos[3] = {
        {buffer, at, span}, {buffer, at, span}, {vkit_read_sink(k), 0, 16}};
    const uint32_t push[5] = {(uint32_t)count, (uint32_t)((offset - at) / 16), (uint32_t)groups,
                              (uint32_t)(words % 4), VKIT_READ_UNEXPECTED};
    return s == SGFP4_OK
               ? dispatch_of(k, k->read, infos, 3, push, sizeof push, groups, 1, out, diag)
               : s;
}
