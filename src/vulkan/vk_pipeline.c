/* The decode pipelines: one shader module (RTE float or integer reconstruction, chosen per
 * device; plus decode_rte16 for f16 outputs where the device's conversion is used), one
 * pipeline per (kernel, dtype) through specialization constants, created on first use.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

sgfp4_status sgfp4_vk_layouts_create(VkDevice device, uint32_t buffers, uint32_t push_bytes,
                                     uint32_t sets,
                                     VkDescriptorSetLayout *set_layout,
                                     VkPipelineLayout *pipeline_layout, VkDescriptorPool *pool,
                                     sgfp4_diag *diag)
{
    VkResult r;
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
    if ((r = vkCreateDescriptorSetLayout(device, &dsl, NULL, set_layout)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateDescriptorSetLayout");
    const VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                       .size = push_bytes};
    const VkPipelineLayoutCreateInfo plci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &range};
    if ((r = vkCreatePipelineLayout(device, &plci, NULL, pipeline_layout)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreatePipelineLayout");
    const VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .descriptorCount = buffers * sets};
    const VkDescriptorPoolCreateInfo dpci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = sets,
        .poolSizeCount = 1,
        .pPoolSizes = &size};
    if ((r = vkCreateDescriptorPool(device, &dpci, NULL, pool)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateDescriptorPool");
    return SGFP4_OK;
}

/* decode_rte16 with RoundingModeRTE and SignedZeroInfNanPreserve for 16-bit results added,
 * and DenormPreserve 16 where the context uses it (F16_GUARD 0). */
static sgfp4_status create_f16_module(sgfp4_vk_context *ctx, sgfp4_diag *diag)
{
    enum { CAP_DENORM_PRESERVE = 4464, MODE_DENORM_PRESERVE = 4459,
           MODE_SIGNED_ZERO_INF_NAN_PRESERVE = 4461, MODE_ROUNDING_RTE = 4462 };
    const uint32_t capabilities[1] = {CAP_DENORM_PRESERVE};
    const uint32_t modes[3][2] = {{MODE_ROUNDING_RTE, 16},
                                  {MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 16},
                                  {MODE_DENORM_PRESERVE, 16}};
    const int denorms = ctx->variant[1] == 0;
    size_t count;
    uint32_t *words = sgfp4_vk_spirv_add_modes(sgfp4_vk_spv_rte16, sgfp4_vk_spv_rte16_size / 4,
                                               capabilities, denorms ? 1 : 0, modes,
                                               denorms ? 3 : 2, &count);
    if (!words)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "out of memory (or a malformed embedded shader)");
    const VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                           .codeSize = count * 4,
                                           .pCode = words};
    const VkResult r = vkCreateShaderModule(ctx->device, &smci, NULL, &ctx->module_f16);
    free(words);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateShaderModule");
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_pipelines_init(sgfp4_vk_context *ctx, sgfp4_diag *diag)
{
    VkResult r;
    const VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = ctx->info.exact_path ? sgfp4_vk_spv_int_size : sgfp4_vk_spv_rte_size,
        .pCode = ctx->info.exact_path ? sgfp4_vk_spv_int : sgfp4_vk_spv_rte};
    if ((r = vkCreateShaderModule(ctx->device, &smci, NULL, &ctx->module)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateShaderModule");
    if (ctx->info.f16_conversion == SGFP4_VK_F16_DEVICE_CONVERSION) {
        const sgfp4_status s = create_f16_module(ctx, diag);
        if (s != SGFP4_OK)
            return s;
    }
    return sgfp4_vk_layouts_create(ctx->device, SGFP4_VK_BINDINGS, sizeof(sgfp4_vk_params), 1,
                                   &ctx->set_layout, &ctx->pipeline_layout,
                                   &ctx->descriptor_pool, diag);
}

void sgfp4_vk_pipelines_release(sgfp4_vk_context *ctx)
{
    for (unsigned k = 0; k < SGFP4_VK_KERNELS; k++)
        for (unsigned d = 0; d < SGFP4_VK_DTYPES; d++)
            if (ctx->pipelines[k][d])
                vkDestroyPipeline(ctx->device, ctx->pipelines[k][d], NULL);
    if (ctx->descriptor_pool)
        vkDestroyDescriptorPool(ctx->device, ctx->descriptor_pool, NULL);
    if (ctx->pipeline_layout)
        vkDestroyPipelineLayout(ctx->device, ctx->pipeline_layout, NULL);
    if (ctx->set_layout)
        vkDestroyDescriptorSetLayout(ctx->device, ctx->set_layout, NULL);
    if (ctx->module)
        vkDestroyShaderModule(ctx->device, ctx->module, NULL);
    if (ctx->module_f16)
        vkDestroyShaderModule(ctx->device, ctx->module_f16, NULL);
}

sgfp4_status sgfp4_vk_pipeline(sgfp4_vk_context *ctx, unsigned kernel, sgfp4_dtype dtype,
                               VkPipeline *out, sgfp4_diag *diag)
{
    VkPipeline *slot = &ctx->pipelines[kernel][dtype];
    if (!*slot) {
        /* PROFILE, DTYPE, then the context's variant constants (constant_id 2, 3). */
        uint32_t values[2 + SGFP4_VK_VARIANT_CONSTANTS] = {kernel, (uint32_t)dtype};
        VkSpecializationMapEntry entries[2 + SGFP4_VK_VARIANT_CONSTANTS];
        for (uint32_t i = 0; i < 2 + SGFP4_VK_VARIANT_CONSTANTS; i++) {
            if (i >= 2)
                values[i] = ctx->variant[i - 2];
            entries[i] = (VkSpecializationMapEntry){i, 4 * i, 4};
        }
        const int f16_module = dtype == SGFP4_DTYPE_F16 && ctx->module_f16;
        const VkSpecializationInfo spec = {.mapEntryCount = 2 + SGFP4_VK_VARIANT_CONSTANTS,
                                           .pMapEntries = entries,
                                           .dataSize = sizeof values,
                                           .pData = values};
        const VkComputePipelineCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = f16_module ? ctx->module_f16 : ctx->module,
                      .pName = "main",
                      .pSpecializationInfo = &spec},
            .layout = ctx->pipeline_layout};
        const VkResult r =
            vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &ci, NULL, slot);
        if (r != VK_SUCCESS) {
            *slot = VK_NULL_HANDLE;
            return sgfp4_vk_fail(diag, r, "vkCreateComputePipelines");
        }
    }
    *out = *slot;
    return SGFP4_OK;
}
