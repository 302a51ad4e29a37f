/* The kernel records: for each compute kernel of the backend one shader module, one
 * descriptor-set layout, one pipeline layout, a descriptor pool for the synchronous calls
 * where the kernel has them, and its pipelines by specialization, all created on first use
 * through sgfp4_vk_kernel_pipeline() and released with the context.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

/* What each kernel binds: storage buffers (bindings 0..n-1), and descriptor sets in its own
 * pool (0: only operations, which bring their own pools, bind it). */
static const struct {
    uint32_t buffers, sets;
} kernel_shape[SGFP4_VK_KERNEL_COUNT] = {[SGFP4_VK_DECODE] = {SGFP4_VK_BINDINGS, 1},
                                         [SGFP4_VK_DECODE_F16] = {SGFP4_VK_BINDINGS, 1},
                                         [SGFP4_VK_MATVEC] = {6, 0},
                                         [SGFP4_VK_QUANTIZE] = {3, 0}};

static sgfp4_status module_of(sgfp4_vk_context *ctx, const uint32_t *words, size_t bytes,
                              VkShaderModule *out, sgfp4_diag *diag)
{
    const VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = words};
    const VkResult r = vkCreateShaderModule(ctx->device, &smci, NULL, out);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreateShaderModule");
    }
    return SGFP4_OK;
}

/* decode_rte16 with RoundingModeRTE and SignedZeroInfNanPreserve for 16-bit results added,
 * and DenormPreserve 16 where the context uses it (F16_GUARD 0). */
static sgfp4_status f16_module(sgfp4_vk_context *ctx, VkShaderModule *out, sgfp4_diag *diag)
{
    enum {
        CAP_DENORM_PRESERVE = 4464,
        MODE_DENORM_PRESERVE = 4459,
        MODE_SIGNED_ZERO_INF_NAN_PRESERVE = 4461,
        MODE_ROUNDING_RTE = 4462
    };
    const uint32_t capabilities[1] = {CAP_DENORM_PRESERVE};
    const uint32_t modes[3][2] = {{MODE_ROUNDING_RTE, 16},
                                  {MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 16},
                                  {MODE_DENORM_PRESERVE, 16}};
    const int denorms = ctx->variant[1] == 0;
    size_t count;
    uint32_t *words =
        sgfp4_vk_spirv_add_modes(sgfp4_vk_spv_rte16, sgfp4_vk_spv_rte16_size / 4, capabilities,
                                 denorms ? 1 : 0, modes, denorms ? 3 : 2, &count);
    if (!words)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "out of memory (or a malformed embedded shader)");
    const sgfp4_status s = module_of(ctx, words, count * 4, out, diag);
    free(words);
    return s;
}

/* The shader module of kernel `id`, by the context's choices (the decode's RTE float or
 * integer reconstruction, the products' OpSDot or written-out dot products). */
static sgfp4_status kernel_module(sgfp4_vk_context *ctx, unsigned id, VkShaderModule *out,
                                  sgfp4_diag *diag)
{
    const int exact = ctx->info.exact_path;
    const int dot = ctx->info.matvec_path == SGFP4_VK_MATVEC_DOT_PRODUCT;
    switch (id) {
    case SGFP4_VK_DECODE:
        return module_of(ctx, exact ? sgfp4_vk_spv_int : sgfp4_vk_spv_rte,
                         exact ? sgfp4_vk_spv_int_size : sgfp4_vk_spv_rte_size, out, diag);
    case SGFP4_VK_DECODE_F16: return f16_module(ctx, out, diag);
    case SGFP4_VK_MATVEC:
        return module_of(ctx, dot ? sgfp4_vk_spv_matvec_dot : sgfp4_vk_spv_matvec,
                         dot ? sgfp4_vk_spv_matvec_dot_size : sgfp4_vk_spv_matvec_size, out, diag);
    default: return module_of(ctx, sgfp4_vk_spv_quantize, sgfp4_vk_spv_quantize_size, out, diag);
    }
}

/* The set layout, the pipeline layout (push constants: the most a dispatch carries) and the
 * pool of a kernel. Handles created before a failure stay set, for sgfp4_vk_kernels_release. */
static sgfp4_status kernel_layouts(sgfp4_vk_context *ctx, unsigned id, sgfp4_vk_kernel *k,
                                   sgfp4_diag *diag)
{
    const uint32_t buffers = kernel_shape[id].buffers, sets = kernel_shape[id].sets;
    VkDescriptorSetLayoutBinding bindings[SGFP4_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < buffers; i++)
        bindings[i] =
            (VkDescriptorSetLayoutBinding){.binding = i,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .descriptorCount = 1,
                                           .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    const VkDescriptorSetLayoutCreateInfo dsl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = buffers,
        .pBindings = bindings};
    VkResult r = vkCreateDescriptorSetLayout(ctx->device, &dsl, NULL, &k->set_layout);
    if (r != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateDescriptorSetLayout");
    const VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                       .size = sizeof(((sgfp4_vk_dispatch *)0)->push)};
    const VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                             .setLayoutCount = 1,
                                             .pSetLayouts = &k->set_layout,
                                             .pushConstantRangeCount = 1,
                                             .pPushConstantRanges = &range};
    if ((r = vkCreatePipelineLayout(ctx->device, &plci, NULL, &k->pipeline_layout)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreatePipelineLayout");
    if (sets == 0)
        return SGFP4_OK;
    const VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .descriptorCount = buffers * sets};
    const VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                             .maxSets = sets,
                                             .poolSizeCount = 1,
                                             .pPoolSizes = &size};
    if ((r = vkCreateDescriptorPool(ctx->device, &dpci, NULL, &k->pool)) != VK_SUCCESS)
        return sgfp4_vk_fail(diag, r, "vkCreateDescriptorPool");
    return SGFP4_OK;
}

/* A compute pipeline of the kernel's module with key[0..count) at constant_id 0..count-1. */
static sgfp4_status create_pipeline(sgfp4_vk_context *ctx, const sgfp4_vk_kernel *k,
                                    const uint32_t *key, uint32_t count, VkPipeline *out,
                                    sgfp4_diag *diag)
{
    VkSpecializationMapEntry entries[SGFP4_VK_MAX_CONSTANTS];
    for (uint32_t i = 0; i < count; i++)
        entries[i] = (VkSpecializationMapEntry){i, 4 * i, 4};
    const VkSpecializationInfo spec = {.mapEntryCount = count,
                                       .pMapEntries = entries,
                                       .dataSize = 4 * (size_t)count,
                                       .pData = key};
    const VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = k->module,
                  .pName = "main",
                  .pSpecializationInfo = count ? &spec : NULL},
        .layout = k->pipeline_layout};
    const VkResult r = vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &ci, NULL, out);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return sgfp4_vk_fail(diag, r, "vkCreateComputePipelines");
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_kernel_pipeline(sgfp4_vk_context *ctx, unsigned id, const uint32_t *key,
                                      uint32_t count, VkPipeline *out, sgfp4_diag *diag)
{
    sgfp4_vk_kernel *k = &ctx->kernels[id];
    sgfp4_status s = SGFP4_OK;
    if (count > SGFP4_VK_MAX_CONSTANTS)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "too many constants");
    if (!k->module)
        s = kernel_module(ctx, id, &k->module, diag);
    if (s == SGFP4_OK && !k->pipeline_layout)
        s = kernel_layouts(ctx, id, k, diag);
    if (s != SGFP4_OK)
        return s;
    sgfp4_vk_pipeline_entry want = {.count = count};
    if (count) /* a kernel without constants may pass key NULL */
        memcpy(want.key, key, 4 * (size_t)count);
    for (unsigned i = 0; i < k->count; i++)
        if (memcmp(&k->pipelines[i].key, &want.key, sizeof want.key) == 0 &&
            k->pipelines[i].count == count) {
            *out = k->pipelines[i].pipeline;
            return SGFP4_OK;
        }
    if (k->count == k->capacity) {
        const unsigned cap = k->capacity ? 2 * k->capacity : 8;
        sgfp4_vk_pipeline_entry *grown = realloc(k->pipelines, sizeof *grown * cap);
        if (!grown)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        k->pipelines = grown;
        k->capacity = cap;
    }
    if ((s = create_pipeline(ctx, k, key, count, &want.pipeline, diag)) != SGFP4_OK)
        return s;
    k->pipelines[k->count++] = want;
    *out = want.pipeline;
    return SGFP4_OK;
}

void sgfp4_vk_kernels_release(sgfp4_vk_context *ctx)
{
    for (unsigned id = 0; id < SGFP4_VK_KERNEL_COUNT; id++) {
        sgfp4_vk_kernel *k = &ctx->kernels[id];
        for (unsigned i = 0; i < k->count; i++)
            vkDestroyPipeline(ctx->device, k->pipelines[i].pipeline, NULL);
        free(k->pipelines);
        if (k->pool)
            vkDestroyDescriptorPool(ctx->device, k->pool, NULL);
        if (k->pipeline_layout)
            vkDestroyPipelineLayout(ctx->device, k->pipeline_layout, NULL);
        if (k->set_layout)
            vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, NULL);
        if (k->module)
            vkDestroyShaderModule(ctx->device, k->module, NULL);
        memset(k, 0, sizeof *k);
    }
}
