/* The Class A activation quantizer on the device (shaders/quantize.comp): the q8 bytes of
 * sgfp4_matvec_quantize() from activations already in a device buffer. Integer-exact where
 * it matters (docs/vulkan.md), so it runs on every device, RTE or not.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

typedef struct quantize_params {
    uint32_t cols, tiles_x, x_base, x_stride, q_base, q_stride;
} quantize_params;

sgfp4_status sgfp4_vk_quantize_create(sgfp4_vk_context *ctx, VkBuffer x, VkDeviceSize x_offset,
                                      sgfp4_dtype dtype, uint64_t cols, unsigned batch,
                                      uint64_t x_stride, VkBuffer q8, VkDeviceSize q8_offset,
                                      const sgfp4_vk_matvec_options *options,
                                      sgfp4_vk_op **out, sgfp4_diag *diag)
{
    (void)options; /* nothing to tune: one workgroup per block and vector */
    if (out)
        *out = NULL;
    if (!ctx || !out || x == VK_NULL_HANDLE || q8 == VK_NULL_HANDLE)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_quantize_create: NULL argument");
    if (dtype != SGFP4_DTYPE_F32 && dtype != SGFP4_DTYPE_F16)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "sgfp4_vk_quantize_create: activations must be f32 or f16");
    const uint64_t elem = sgfp4_dtype_size(dtype);
    if (x_stride == 0)
        x_stride = cols;
    if (cols == 0 || batch < 1 || batch > SGFP4_MATVEC_MAX_BATCH || x_stride < cols ||
        x_offset % elem != 0 || q8_offset % 4 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_quantize_create: cols 0, batch outside 1..%d, a stride "
                          "below cols, or a misaligned offset",
                          SGFP4_MATVEC_MAX_BATCH);
    const uint64_t tiles_x = (cols + 63) / 64;
    const uint64_t vector_bytes = (tiles_x * 68 + 63) & ~(uint64_t)63;
    const uint64_t x_elems = (batch - 1) * x_stride + cols;
    if (tiles_x > ctx->limits.maxComputeWorkGroupCount[0] || (uint64_t)batch * cols >= UINT32_MAX ||
        x_elems + x_offset / elem + 64 > UINT32_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: %llu activations exceed the quantizer's 32-bit indices or "
                          "workgroup counts",
                          (unsigned long long)x_elems);
    VkDescriptorBufferInfo infos[3];
    uint64_t x_skip, q_skip, unused;
    sgfp4_status s = sgfp4_vk_range(ctx, x, x_offset, x_elems * elem, &infos[0], &x_skip, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_range(ctx, q8, q8_offset, batch * vector_bytes, &infos[1], &q_skip, diag);
    if (s != SGFP4_OK)
        return s;
    VkPipeline pipeline;
    const uint32_t f16 = dtype == SGFP4_DTYPE_F16;
    if ((s = sgfp4_vk_kernel_pipeline(ctx, SGFP4_VK_QUANTIZE, &f16, 1, &pipeline, diag)) !=
        SGFP4_OK)
        return s;
    sgfp4_vk_op *op;
    if ((s = sgfp4_vk_op_begin(ctx, SGFP4_VK_OP_QUANTIZE, 3, &op, diag)) != SGFP4_OK)
        return s;
    op->cols = cols;
    s = sgfp4_vk_buffer_init(ctx, 16, 1, &op->scratch, diag);
    if (s == SGFP4_OK) {
        memset(op->scratch.mapped, 0xFF, 16); /* no bad activation seen */
        s = sgfp4_vk_range(ctx, op->scratch.buffer, 0, 16, &infos[2], &unused, diag);
    }
    if (s == SGFP4_OK)
        s = sgfp4_vk_bind_buffers(ctx, op->pool, ctx->kernels[SGFP4_VK_QUANTIZE].set_layout,
                                  infos, 3, 0,
                                  &op->dispatch.set, diag);
    if (s != SGFP4_OK) {
        sgfp4_vk_op_free(op);
        return s;
    }
    const quantize_params p = {(uint32_t)cols,
                               (uint32_t)tiles_x,
                               (uint32_t)(x_skip / elem),
                               (uint32_t)x_stride,
                               (uint32_t)(q_skip / 4),
                               (uint32_t)(vector_bytes / 4)};
    op->dispatch.pipeline = pipeline;
    op->dispatch.layout = ctx->kernels[SGFP4_VK_QUANTIZE].pipeline_layout;
    memcpy(op->dispatch.push, &p, sizeof p);
    op->dispatch.push_bytes = sizeof p;
    op->dispatch.groups_x = (uint32_t)tiles_x;
    op->dispatch.groups_y = batch;
    *out = op;
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_quantize(sgfp4_vk_context *ctx, VkBuffer x, VkDeviceSize x_offset,
                               sgfp4_dtype dtype, uint64_t cols, unsigned batch,
                               uint64_t x_stride, VkBuffer q8, VkDeviceSize q8_offset,
                               const sgfp4_vk_matvec_options *options, sgfp4_diag *diag)
{
    sgfp4_vk_op *op;
    sgfp4_status s = sgfp4_vk_quantize_create(ctx, x, x_offset, dtype, cols, batch, x_stride,
                                              q8, q8_offset, options, &op, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_op_run(op, diag);
    sgfp4_vk_op_free(op);
    return s;
}
