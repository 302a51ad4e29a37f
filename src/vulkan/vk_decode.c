/* Decoding a resident tensor: into a caller's VkBuffer (one dispatch of one workgroup per
 * macroblock), or into host memory (dispatch, copy back, scatter the rows).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"
#include "common/options.h"

/* Whether a context's v2 decodes read a tensor's products' layout where the tensor has one:
 * unless SGFP4_VK_V2_TABLE, or SGFP4_VK_V2_WALK without SGFP4_VK_V2_LAYOUT, asks for the
 * container. The layout is the faster source for every output type (measurements:
 * docs/notes/2026-12-vulkan-kernels.md). An upload copies the container and the leaf table
 * only where this is false (vk_tensor.c). */
int sgfp4_vk_layout_decodes(const sgfp4_vk_context *ctx)
{
    if (ctx->flags & SGFP4_VK_V2_TABLE)
        return 0;
    return (ctx->flags & SGFP4_VK_V2_LAYOUT) || !(ctx->flags & SGFP4_VK_V2_WALK);
}

int sgfp4_vk_decode_reads_layout(const sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                                 sgfp4_dtype dtype)
{
    (void)dtype; /* every output type reads the same source */
    if (!ctx || !vt || vt->profile != SGFP4_PROFILE_V2 || !vt->product_bytes)
        return 0;
    return sgfp4_vk_layout_decodes(ctx);
}

/* The kernel of a decode from the products' layout: two blocks per workgroup (the shader's
 * decode_pair_layout) for f16 outputs, and for bf16 outputs of a tensor at least 7/8 of whose
 * records are MIXED (as in an encoder's output); one block per workgroup otherwise: pairs
 * win for f16 on every kind of tensor and for bf16 on MIXED-heavy records only, and lose for
 * f32 (measurements: docs/notes/2026-12-vulkan-kernels.md). */
static unsigned layout_kernel(const sgfp4_vk_tensor *vt, sgfp4_dtype dtype)
{
    const int pairs = dtype == SGFP4_DTYPE_F16 ||
                      (dtype == SGFP4_DTYPE_BF16 && 8 * vt->mixed_records >= 7 * vt->blocks);
    return pairs ? SGFP4_VK_KERNEL_V2_LAYOUT_PAIRS : SGFP4_VK_KERNEL_V2_LAYOUT;
}

sgfp4_status sgfp4_vk_prepare_decode(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                                     sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                     uint64_t row_stride, VkDescriptorPool pool,
                                     sgfp4_vk_dispatch *d, sgfp4_diag *diag)
{
    const uint64_t elem = sgfp4_dtype_size(dtype);
    const uint64_t align = ctx->limits.minStorageBufferOffsetAlignment
                               ? ctx->limits.minStorageBufferOffsetAlignment
                               : 1;
    const VkDeviceSize src_at = vt->src_offset - vt->src_offset % align;
    const VkDeviceSize dst_at = dst_offset - dst_offset % align;
    const uint64_t dst_base = (dst_offset - dst_at) / elem;
    /* Elements from dst_at through the last one written, and the bytes bound (rounded up to
     * whole words: 16-bit outputs change only their own half of a shared word). */
    const uint64_t span = dst_base + (vt->rows - 1) * row_stride + vt->cols;
    const uint64_t dst_bytes = (span * elem + 3) & ~(uint64_t)3;
    if (span > UINT32_MAX || dst_bytes > ctx->limits.maxStorageBufferRange)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: an output of %llu elements exceeds the shaders' 32-bit "
                          "indices or maxStorageBufferRange",
                          (unsigned long long)span);
    const int from_layout = sgfp4_vk_decode_reads_layout(ctx, vt, dtype);
    const unsigned kernel = vt->profile == SGFP4_PROFILE_V1 ? SGFP4_VK_KERNEL_V1
                            : from_layout                  ? layout_kernel(vt, dtype)
                            : vt->walk                     ? SGFP4_VK_KERNEL_V2_WALK
                                                           : SGFP4_VK_KERNEL_V2_TABLE;
    /* One workgroup per macroblock, or per pair of block columns. */
    const uint64_t groups_x =
        kernel == SGFP4_VK_KERNEL_V2_LAYOUT_PAIRS ? (vt->tiles_x + 1) / 2 : vt->tiles_x;
    /* PROFILE, DTYPE, then the context's variant constants (constant_id 2, 3). */
    const unsigned id = dtype == SGFP4_DTYPE_F16 && ctx->info.f16_conversion ==
                                                        SGFP4_VK_F16_DEVICE_CONVERSION
                            ? SGFP4_VK_DECODE_F16
                            : SGFP4_VK_DECODE;
    const uint32_t key[2 + SGFP4_VK_VARIANT_CONSTANTS] = {kernel, (uint32_t)dtype,
                                                          ctx->variant[0], ctx->variant[1]};
    VkPipeline pipeline;
    sgfp4_status s = sgfp4_vk_kernel_pipeline(ctx, id, key, 2 + SGFP4_VK_VARIANT_CONSTANTS,
                                              &pipeline, diag);
    if (s != SGFP4_OK)
        return s;
    const sgfp4_vk_kernel *k = &ctx->kernels[id];
    *d = (sgfp4_vk_dispatch){.pipeline = pipeline,
                             .layout = k->pipeline_layout,
                             .groups_x = (uint32_t)groups_x,
                             .groups_y = (uint32_t)vt->tiles_y};
    const VkDescriptorBufferInfo container =
        from_layout ? (VkDescriptorBufferInfo){vt->product.buffer, 0, vt->product_bytes}
                    : (VkDescriptorBufferInfo){vt->src, src_at,
                                               (vt->src_offset - src_at) + vt->container_bytes};
    const VkDescriptorBufferInfo infos[SGFP4_VK_BINDINGS] = {
        container,
        {vt->table_src, vt->table_offset, VK_WHOLE_SIZE},
        {dst, dst_at, dst_bytes},
        {dst, dst_at, dst_bytes},
        {dst, dst_at, dst_bytes},
        container};
    s = sgfp4_vk_bind_buffers(ctx, pool ? pool : k->pool, k->set_layout, infos,
                              SGFP4_VK_BINDINGS, !pool, &d->set, diag);
    const sgfp4_vk_params params = {.tiles_x = (uint32_t)vt->tiles_x,
                                    .rows = (uint32_t)vt->rows,
                                    .cols = (uint32_t)vt->cols,
                                    .blocks = (uint32_t)vt->blocks,
                                    .src_base = from_layout ? 0
                                                : (uint32_t)((vt->src_offset - src_at) / 4),
                                    .table_base = 0,
                                    .dst_base = (uint32_t)dst_base,
                                    .row_stride = (uint32_t)row_stride,
                                    .record_base = (uint32_t)(vt->record_base / 4),
                                    .map_base = (uint32_t)vt->product_at.maps,
                                    .desc_base = (uint32_t)vt->product_at.desc,
                                    .sb_base = (uint32_t)vt->product_at.sb};
    memcpy(d->push, &params, sizeof params);
    d->push_bytes = sizeof params;
    return s;
}

static sgfp4_status check_args(const sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                               sgfp4_dtype dtype, sgfp4_diag *diag)
{
    if (!ctx || !vt)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL context or tensor");
    if (sgfp4_dtype_size(dtype) == 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "unknown dtype %d", (int)dtype);
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_decode_options_init_sized(sgfp4_vk_decode_options *options, size_t size)
{
    sgfp4_vk_decode_options defaults;
    memset(&defaults, 0, sizeof defaults);
    return SGFP4_OPTIONS_INIT(sgfp4_vk_decode_options, options, size, &defaults);
}

/* The checks of a decode into a caller's buffer; *row_stride 0 becomes cols. */
static sgfp4_status check_buffer_args(const sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                                      sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                      uint64_t *row_stride, uint64_t dst_capacity,
                                      const sgfp4_vk_decode_options *given, sgfp4_diag *diag)
{
    sgfp4_status s = check_args(ctx, vt, dtype, diag);
    if (s != SGFP4_OK)
        return s;
    sgfp4_vk_decode_options options;
    if (SGFP4_OPTIONS_READ(sgfp4_vk_decode_options, given, &options) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_vk_decode_options_init)",
                          given->struct_size);
    if (options.flags != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: flags 0x%x, but no decode flag is defined", options.flags);
    if (dst == VK_NULL_HANDLE)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL destination buffer");
    const uint64_t elem = sgfp4_dtype_size(dtype);
    if (*row_stride == 0)
        *row_stride = vt->cols;
    if (*row_stride < vt->cols || dst_offset % elem != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "row stride below cols, or an offset that is not a multiple of the "
                          "element size");
    /* Elements from dst_offset through the last one, compared without overflow; then the
     * end of the last element's 4-byte word (16-bit outputs bind whole words). */
    const uint64_t room = dst_capacity > dst_offset ? (dst_capacity - dst_offset) / elem : 0;
    int fits = vt->cols <= room &&
               (vt->rows == 1 || *row_stride <= (room - vt->cols) / (vt->rows - 1));
    if (fits) {
        const uint64_t end = dst_offset + ((vt->rows - 1) * *row_stride + vt->cols) * elem;
        fits = ((end + 3) & ~(uint64_t)3) <= dst_capacity;
    }
    if (!fits)
        return sgfp4_fail(diag, SGFP4_ERR_DST_TOO_SMALL, -1, -1, -1,
                          "a %llu-byte destination buffer is too small for the tensor at "
                          "offset %llu",
                          (unsigned long long)dst_capacity, (unsigned long long)dst_offset);
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_decode_create(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                    sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                    uint64_t row_stride, uint64_t dst_capacity,
                                    const sgfp4_vk_decode_options *options, sgfp4_vk_op **out,
                                    sgfp4_diag *diag)
{
    if (!out)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL out");
    *out = NULL;
    sgfp4_status s = check_buffer_args(ctx, tensor, dtype, dst, dst_offset, &row_stride,
                                       dst_capacity, options, diag);
    sgfp4_vk_op *op = NULL;
    if (s == SGFP4_OK)
        s = sgfp4_vk_op_begin(ctx, SGFP4_VK_OP_DECODE, SGFP4_VK_BINDINGS, &op, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_prepare_decode(ctx, tensor, dtype, dst, dst_offset, row_stride, op->pool,
                                    &op->dispatch, diag);
    if (s != SGFP4_OK) {
        sgfp4_vk_op_free(op);
        return s;
    }
    *out = op;
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_decode_to_buffer(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                       sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                       uint64_t row_stride, uint64_t dst_capacity,
                                       const sgfp4_vk_decode_options *options, sgfp4_diag *diag)
{
    sgfp4_status s = check_buffer_args(ctx, tensor, dtype, dst, dst_offset, &row_stride,
                                       dst_capacity, options, diag);
    sgfp4_vk_dispatch d;
    if (s == SGFP4_OK)
        s = sgfp4_vk_prepare_decode(ctx, tensor, dtype, dst, dst_offset, row_stride,
                                    VK_NULL_HANDLE, &d, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_run_dispatch(ctx, &d, diag);
    return s;
}

sgfp4_status sgfp4_vk_decode_to_host(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                     sgfp4_dtype dtype, void *dst, size_t row_stride,
                                     size_t dst_capacity, sgfp4_diag *diag)
{
    sgfp4_status s = check_args(ctx, tensor, dtype, diag);
    if (s != SGFP4_OK)
        return s;
    const uint64_t elem = sgfp4_dtype_size(dtype);
    if (row_stride == 0)
        row_stride = (size_t)tensor->cols;
    if (!dst || row_stride < tensor->cols)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "NULL destination, or a row stride below cols");
    if (((tensor->rows - 1) * row_stride + tensor->cols) > dst_capacity / elem)
        return sgfp4_fail(diag, SGFP4_ERR_DST_TOO_SMALL, -1, -1, -1,
                          "a %zu-byte destination is too small for the tensor", dst_capacity);
    const uint64_t packed = ((tensor->rows * tensor->cols * elem) + 15) & ~(uint64_t)15;
    sgfp4_vk_buffer device = {0}, readback = {0};
    s = sgfp4_vk_buffer_init(ctx, packed, 0, &device, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_buffer_init(ctx, packed, 1, &readback, diag);
    sgfp4_vk_dispatch d;
    if (s == SGFP4_OK)
        s = sgfp4_vk_prepare_decode(ctx, tensor, dtype, device.buffer, 0, tensor->cols,
                                    VK_NULL_HANDLE, &d, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_begin(ctx, diag);
    if (s == SGFP4_OK) {
        sgfp4_vk_barrier_all(ctx);
        sgfp4_vk_record_dispatch(ctx, &d);
        sgfp4_vk_barrier_all(ctx);
        const VkBufferCopy c = {0, 0, packed};
        vkCmdCopyBuffer(ctx->cmd, device.buffer, readback.buffer, 1, &c);
        const VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                    .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                    .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(ctx->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
        s = sgfp4_vk_submit_wait(ctx, diag);
    }
    if (s == SGFP4_OK) {
        const size_t row_bytes = (size_t)(tensor->cols * elem);
        const uint8_t *from = readback.mapped;
        uint8_t *to = dst;
        if (row_stride == tensor->cols) {
            memcpy(to, from, row_bytes * (size_t)tensor->rows);
        } else {
            for (uint64_t r = 0; r < tensor->rows; r++)
                memcpy(to + r * row_stride * elem, from + r * row_bytes, row_bytes);
        }
    }
    sgfp4_vk_buffer_release(ctx, &device);
    sgfp4_vk_buffer_release(ctx, &readback);
    return s;
}
