/* Prepared operations (the quantizer, the decode and the matrix-vector products): one
 * dispatch with its own descriptor set, recorded into the caller's command buffer or run
 * synchronously on the context's queue; and the helpers their preparation shares.
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
    const sgfp4_status s = sgfp4_vk_run_dispatch(op->ctx, &op->dispatch, diag);
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
