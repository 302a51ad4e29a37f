/* The Vulkan API of a build without Vulkan: every call reports SGFP4_ERR_UNAVAILABLE (or
 * does nothing, for the release and query calls), so callers link and fail cleanly.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/diag.h"
#include "common/options.h"
#include "sgfp4_experimental.h"
#include "sgfp4_vulkan.h"

static sgfp4_status unavailable(sgfp4_diag *diag)
{
    return sgfp4_fail(diag, SGFP4_ERR_UNAVAILABLE, -1, -1, -1,
                      "libsgfp4 was built without the Vulkan backend (SGFP4_VULKAN=OFF)");
}

sgfp4_status sgfp4_vk_list_devices(sgfp4_vk_device_info *out, size_t capacity, size_t *count,
                                   sgfp4_diag *diag)
{
    (void)out;
    (void)capacity;
    if (count)
        *count = 0;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_context_options_init_sized(sgfp4_vk_context_options *options,
                                                 size_t size)
{
    sgfp4_vk_context_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.device_index = -1;
    return SGFP4_OPTIONS_INIT(sgfp4_vk_context_options, options, size, &defaults);
}

sgfp4_status sgfp4_vk_context_create(sgfp4_vk_context **out,
                                     const sgfp4_vk_context_options *options, sgfp4_diag *diag)
{
    (void)options;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_context_import(const sgfp4_vk_handles *handles, sgfp4_vk_context **out,
                                     const sgfp4_vk_context_options *options, sgfp4_diag *diag)
{
    (void)handles;
    (void)options;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

void sgfp4_vk_context_free(sgfp4_vk_context *ctx) { (void)ctx; }

sgfp4_status sgfp4_vk_context_get_info(const sgfp4_vk_context *ctx, sgfp4_vk_device_info *info)
{
    /* No context can exist without the backend. */
    (void)ctx;
    (void)info;
    return SGFP4_ERR_ARGUMENT;
}

void sgfp4_vk_context_get_handles(const sgfp4_vk_context *ctx, sgfp4_vk_handles *handles)
{
    (void)ctx;
    if (handles)
        memset(handles, 0, sizeof *handles);
}

int sgfp4_vk_decode_reads_layout(const sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                 sgfp4_dtype dtype)
{
    (void)ctx, (void)tensor, (void)dtype;
    return 0;
}

sgfp4_status sgfp4_vk_tensor_product_range(const sgfp4_vk_tensor *tensor, VkBuffer *buffer,
                                           VkDeviceSize *offset, uint64_t *bytes,
                                           sgfp4_diag *diag)
{
    (void)tensor, (void)buffer, (void)offset, (void)bytes;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_buffer_create(sgfp4_vk_context *ctx, uint64_t size, sgfp4_vk_buffer **out,
                                    sgfp4_diag *diag)
{
    (void)ctx;
    (void)size;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

uint64_t sgfp4_vk_buffer_size(const sgfp4_vk_buffer *buffer)
{
    (void)buffer;
    return 0;
}

VkBuffer sgfp4_vk_buffer_handle(const sgfp4_vk_buffer *buffer)
{
    (void)buffer;
    return (VkBuffer)0;
}

void sgfp4_vk_buffer_free(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer)
{
    (void)ctx;
    (void)buffer;
}

sgfp4_status sgfp4_vk_tensor_create(sgfp4_vk_context *ctx, const sgfp4_tensor *tensor,
                                    sgfp4_vk_tensor **out, sgfp4_diag *diag)
{
    (void)ctx;
    (void)tensor;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_tensor_create_from_buffer(sgfp4_vk_context *ctx,
                                                const sgfp4_tensor *tensor, VkBuffer buffer,
                                                VkDeviceSize offset, sgfp4_vk_tensor **out,
                                                sgfp4_diag *diag)
{
    (void)ctx;
    (void)tensor;
    (void)buffer;
    (void)offset;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

void sgfp4_vk_tensor_free(sgfp4_vk_context *ctx, sgfp4_vk_tensor *tensor)
{
    (void)ctx;
    (void)tensor;
}

sgfp4_status sgfp4_vk_decode_options_init_sized(sgfp4_vk_decode_options *options, size_t size)
{
    sgfp4_vk_decode_options defaults;
    memset(&defaults, 0, sizeof defaults);
    return SGFP4_OPTIONS_INIT(sgfp4_vk_decode_options, options, size, &defaults);
}

sgfp4_status sgfp4_vk_decode_create(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                    sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                    uint64_t row_stride, uint64_t dst_capacity,
                                    const sgfp4_vk_decode_options *options, sgfp4_vk_op **out,
                                    sgfp4_diag *diag)
{
    (void)ctx, (void)tensor, (void)dtype, (void)dst, (void)dst_offset, (void)row_stride;
    (void)dst_capacity, (void)options;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_decode_to_buffer(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                       sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                       uint64_t row_stride, uint64_t dst_capacity,
                                       const sgfp4_vk_decode_options *options, sgfp4_diag *diag)
{
    (void)ctx, (void)tensor, (void)dtype, (void)dst, (void)dst_offset, (void)row_stride;
    (void)dst_capacity, (void)options;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_decode_to_host(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                     sgfp4_dtype dtype, void *dst, size_t row_stride,
                                     size_t dst_capacity, sgfp4_diag *diag)
{
    (void)ctx;
    (void)tensor;
    (void)dtype;
    (void)dst;
    (void)row_stride;
    (void)dst_capacity;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_buffer_write(sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                   const void *data, size_t size, sgfp4_diag *diag)
{
    (void)ctx;
    (void)buffer;
    (void)offset;
    (void)data;
    (void)size;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_buffer_read(sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                  void *data, size_t size, sgfp4_diag *diag)
{
    (void)ctx;
    (void)buffer;
    (void)offset;
    (void)data;
    (void)size;
    return unavailable(diag);
}

uint64_t sgfp4_vk_tensor_table_bytes(const sgfp4_vk_tensor *tensor)
{
    (void)tensor;
    return 0;
}

uint64_t sgfp4_vk_tensor_device_bytes(const sgfp4_vk_tensor *tensor)
{
    (void)tensor;
    return 0;
}

sgfp4_status sgfp4_vk_matvec_options_init_sized(sgfp4_vk_matvec_options *options, size_t size)
{
    sgfp4_vk_matvec_options defaults;
    memset(&defaults, 0, sizeof defaults);
    return SGFP4_OPTIONS_INIT(sgfp4_vk_matvec_options, options, size, &defaults);
}

sgfp4_status sgfp4_vk_quantize_create(sgfp4_vk_context *ctx, VkBuffer x, VkDeviceSize x_offset,
                                      sgfp4_dtype dtype, uint64_t cols, unsigned batch,
                                      uint64_t x_stride, VkBuffer q8, VkDeviceSize q8_offset,
                                      const sgfp4_vk_matvec_options *options,
                                      sgfp4_vk_op **out, sgfp4_diag *diag)
{
    (void)ctx, (void)x, (void)x_offset, (void)dtype, (void)cols, (void)batch, (void)x_stride;
    (void)q8, (void)q8_offset, (void)options;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_matvec_q8_create(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                       VkBuffer q8, VkDeviceSize q8_offset, unsigned batch,
                                       VkBuffer y, VkDeviceSize y_offset, uint64_t y_stride,
                                       const sgfp4_vk_matvec_options *options, sgfp4_vk_op **out,
                                       sgfp4_diag *diag)
{
    (void)ctx, (void)tensor, (void)q8, (void)q8_offset, (void)batch, (void)y, (void)y_offset;
    (void)y_stride, (void)options;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_matvec_float_create(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                          VkBuffer x, VkDeviceSize x_offset, sgfp4_dtype dtype,
                                          unsigned batch, uint64_t x_stride, VkBuffer y,
                                          VkDeviceSize y_offset, uint64_t y_stride,
                                          const sgfp4_vk_matvec_options *options,
                                          sgfp4_vk_op **out, sgfp4_diag *diag)
{
    (void)ctx, (void)tensor, (void)x, (void)x_offset, (void)dtype, (void)x_stride, (void)batch;
    (void)y, (void)y_offset, (void)y_stride, (void)options;
    if (out)
        *out = NULL;
    return unavailable(diag);
}

void sgfp4_vk_op_record(const sgfp4_vk_op *op, VkCommandBuffer cmd)
{
    (void)op, (void)cmd;
}

sgfp4_status sgfp4_vk_op_run(sgfp4_vk_op *op, sgfp4_diag *diag)
{
    (void)op;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_op_status(sgfp4_vk_op *op, sgfp4_diag *diag)
{
    (void)op;
    return unavailable(diag);
}

uint64_t sgfp4_vk_op_bytes(const sgfp4_vk_op *op)
{
    (void)op;
    return 0;
}

void sgfp4_vk_op_free(sgfp4_vk_op *op) { (void)op; }

sgfp4_status sgfp4_vk_quantize(sgfp4_vk_context *ctx, VkBuffer x, VkDeviceSize x_offset,
                               sgfp4_dtype dtype, uint64_t cols, unsigned batch,
                               uint64_t x_stride, VkBuffer q8, VkDeviceSize q8_offset,
                               const sgfp4_vk_matvec_options *options, sgfp4_diag *diag)
{
    (void)ctx, (void)x, (void)x_offset, (void)dtype, (void)cols, (void)batch, (void)x_stride;
    (void)q8, (void)q8_offset, (void)options;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_matvec_q8(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                VkBuffer q8, VkDeviceSize q8_offset, unsigned batch, VkBuffer y,
                                VkDeviceSize y_offset, uint64_t y_stride,
                                const sgfp4_vk_matvec_options *options, sgfp4_diag *diag)
{
    (void)ctx, (void)tensor, (void)q8, (void)q8_offset, (void)batch, (void)y, (void)y_offset;
    (void)y_stride, (void)options;
    return unavailable(diag);
}

sgfp4_status sgfp4_vk_matvec_float(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                   VkBuffer x, VkDeviceSize x_offset, sgfp4_dtype dtype,
                                   unsigned batch, uint64_t x_stride, VkBuffer y,
                                   VkDeviceSize y_offset, uint64_t y_stride,
                                   const sgfp4_vk_matvec_options *options, sgfp4_diag *diag)
{
    (void)ctx, (void)tensor, (void)x, (void)x_offset, (void)dtype, (void)x_stride, (void)batch;
    (void)y, (void)y_offset, (void)y_stride, (void)options;
    return unavailable(diag);
}
