/* Prepared operations (the quantizer and the matrix-vector products): one dispatch with its
 * own descriptor set, recorded into the caller's command buffer or run synchronously on the
 * context's queue; and the helpers their preparation shares.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"
#include "common/options.h"

sgfp4_status sgfp4_vk_matvec_options_init_sized(sgfp4_vk_matvec_options *options, size_t size)
{
    sgfp4_vk_matvec_options defaults;
    memset(&defaults, 0, sizeof defaults);
    return SGFP4_OPTIONS_INIT(sgfp4_vk_matvec_options, options, size, &defaults);
}

sgfp4_status sgfp4_vk_module(sgfp4_vk_context *ctx, const uint32_t *words, size_t bytes,
                             VkShaderModule *out, sgfp4_diag *diag)
{
    const VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                           .codeSize = bytes,
                                           .pCode = words};
    const VkResult r = vkCreateShaderModule(ctx->device, &smci, NULL, out);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreateShaderModule");
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_op_layouts(VkDevice device, uint32_t buffers, uint32_t push_bytes,
                                 VkDescriptorSetLayout *set_layout,
                                 VkPipelineLayout *pipeline_layout, sgfp4_diag *diag)
{
    VkDescriptorSetLayoutBinding bindings[SGFP4_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < buffers; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    const VkDescriptorSetLayoutCreateInfo dsl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = buffers,
        .pBindings = bindings};
    VkResult r = vkCreateDescriptorSetLayout(device, &dsl, NULL, set_layout);
    if (r != VK_SUCCESS) {
        *set_layout = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreateDescriptorSetLayout");
    }
    const VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                       .size = push_bytes};
    const VkPipelineLayoutCreateInfo plci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &range};
    if ((r = vkCreatePipelineLayout(device, &plci, NULL, pipeline_layout)) != VK_SUCCESS) {
        *pipeline_layout = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreatePipelineLayout");
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_compute_pipeline(sgfp4_vk_context *ctx, VkShaderModule module,
                                       VkPipelineLayout layout, const uint32_t *values,
                                       uint32_t count, VkPipeline *out, sgfp4_diag *diag)
{
    VkSpecializationMapEntry entries[16];
    if (count > 16)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "too many constants");
    for (uint32_t i = 0; i < count; i++)
        entries[i] = (VkSpecializationMapEntry){i, 4 * i, 4};
    const VkSpecializationInfo spec = {.mapEntryCount = count,
                                       .pMapEntries = entries,
                                       .dataSize = 4 * (size_t)count,
                                       .pData = values};
    const VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = layout};
    const VkResult r = vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &ci, NULL, out);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreateComputePipelines");
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_range(const sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                            uint64_t bytes, VkDescriptorBufferInfo *info, uint64_t *skip,
                            sgfp4_diag *diag)
{
    const uint64_t align = ctx->limits.minStorageBufferOffsetAlignment
                               ? ctx->limits.minStorageBufferOffsetAlignment
                               : 1;
    const VkDeviceSize at = offset - offset % align;
    const uint64_t span = ((offset - at) + bytes + 3) & ~(uint64_t)3;
    if (span > ctx->limits.maxStorageBufferRange)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: a range of %llu bytes exceeds maxStorageBufferRange %u",
                          (unsigned long long)span, ctx->limits.maxStorageBufferRange);
    *info = (VkDescriptorBufferInfo){buffer, at, span};
    *skip = offset - at;
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_op_begin(sgfp4_vk_context *ctx, int kind, uint32_t bindings,
                               sgfp4_vk_op **out, sgfp4_diag *diag)
{
    *out = NULL;
    sgfp4_vk_op *op = calloc(1, sizeof *op);
    if (!op)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    op->ctx = ctx;
    op->kind = kind;
    const VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .descriptorCount = bindings};
    const VkDescriptorPoolCreateInfo dpci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &size};
    const VkResult r = vkCreateDescriptorPool(ctx->device, &dpci, NULL, &op->pool);
    if (r != VK_SUCCESS) {
        free(op);
        return sgfp4_vk_fail(diag, r, "vkCreateDescriptorPool");
    }
    *out = op;
    return SGFP4_OK;
}

void sgfp4_vk_op_record(const sgfp4_vk_op *op, VkCommandBuffer cmd)
{
    if (!op || !cmd)
        return;
    sgfp4_vk_record_dispatch_into(cmd, &op->dispatch);
}

sgfp4_status sgfp4_vk_op_run(sgfp4_vk_op *op, sgfp4_diag *diag)
{
    if (!op)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "sgfp4_vk_op_run: NULL op");
    const sgfp4_status s = sgfp4_vk_run_dispatch(op->ctx, &op->dispatch, SGFP4_VK_LAST_MATVEC,
                                                 diag);
    return s == SGFP4_OK ? sgfp4_vk_op_status(op, diag) : s;
}

sgfp4_status sgfp4_vk_op_status(sgfp4_vk_op *op, sgfp4_diag *diag)
{
    if (!op)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "sgfp4_vk_op_status: NULL op");
    if (op->kind != SGFP4_VK_OP_QUANTIZE)
        return SGFP4_OK;
    uint32_t *word = op->scratch.mapped;
    const uint32_t first = *word;
    *word = UINT32_MAX;
    if (first == UINT32_MAX)
        return SGFP4_OK;
    return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                      "activation %llu of vector %llu is NaN or infinite (Class A needs finite "
                      "activations)",
                      (unsigned long long)(first % op->cols),
                      (unsigned long long)(first / op->cols));
}

uint64_t sgfp4_vk_op_bytes(const sgfp4_vk_op *op)
{
    return op && op->scratch.buffer ? op->scratch.size : 0;
}

void sgfp4_vk_op_free(sgfp4_vk_op *op)
{
    if (!op)
        return;
    sgfp4_vk_buffer_release(op->ctx, &op->scratch);
    if (op->pool)
        vkDestroyDescriptorPool(op->ctx->device, op->pool, NULL);
    free(op);
}
