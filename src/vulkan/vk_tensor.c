/* Making an opened tensor resident on the device: for v2 the products' layout
 * (vk_matvec_layout.c) and, where a decode may read the container, its bytes (uploaded, or
 * the caller's buffer) and the v2 leaf table.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

/* The v2 kernel a context uses: the table unless SGFP4_VK_V2_WALK asks for the walk. */
static int use_walk(const sgfp4_vk_context *ctx)
{
    return (ctx->flags & SGFP4_VK_V2_WALK) && !(ctx->flags & SGFP4_VK_V2_TABLE);
}

/* Allocates *out and fills the shape; checks what the 32-bit shader indices can address. */
static sgfp4_status tensor_begin(sgfp4_vk_context *ctx, const sgfp4_tensor *t,
                                 sgfp4_vk_tensor **out, sgfp4_diag *diag)
{
    if (t->size / 4 + 64 > UINT32_MAX || 4 * t->blocks + 1 + t->info.leaves > UINT32_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: a container of %llu bytes exceeds the 32-bit word indices "
                          "of the shaders",
                          (unsigned long long)t->size);
    if (t->tiles_x > ctx->limits.maxComputeWorkGroupCount[0] ||
        t->tiles_y > ctx->limits.maxComputeWorkGroupCount[1])
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: %llux%llu macroblocks exceed the device's workgroup count",
                          (unsigned long long)t->tiles_y, (unsigned long long)t->tiles_x);
    if (t->size + 256 > ctx->limits.maxStorageBufferRange ||
        4 * (4 * t->blocks + 1 + t->info.leaves) > ctx->limits.maxStorageBufferRange)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: container of %llu bytes exceeds maxStorageBufferRange %u",
                          (unsigned long long)t->size, ctx->limits.maxStorageBufferRange);
    sgfp4_vk_tensor *vt = calloc(1, sizeof *vt);
    if (!vt)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    vt->profile = t->profile;
    vt->rows = t->rows;
    vt->cols = t->cols;
    vt->tiles_x = t->tiles_x;
    vt->tiles_y = t->tiles_y;
    vt->blocks = t->blocks;
    vt->record_base = t->record_base;
    vt->container_bytes = t->size;
    vt->leaves = t->profile == SGFP4_PROFILE_V2 ? t->info.leaves : 0;
    vt->mixed_records =
        t->profile == SGFP4_PROFILE_V2 ? t->info.records_by_layout[SGFP4_LAYOUT_MIXED] : 0;
    vt->walk = use_walk(ctx);
    *out = vt;
    return SGFP4_OK;
}

/* The container bytes as the device gets them, at p: the caller's bytes with every place a
 * shader reads (v1 payload offsets; v2 record offsets, sb_headers, split maps and leaf
 * modes) written from the view's copy of the places (container/tensor.h), so that bytes
 * changed since the open cannot send a shader's read outside the buffer. Where nothing
 * changed, this writes the bytes that are there. */
static void stage_container(const sgfp4_tensor *t, uint8_t *p)
{
    memcpy(p, t->data, t->size);
    if (t->profile == SGFP4_PROFILE_V1) {
        for (uint64_t b = 0; b < t->blocks; b++)
            sgfp4_store_u32le(p + 4 * (t->blocks + b), t->v1_offsets[b]);
        return;
    }
    sgfp4_leaf_ref refs[SGFP4_MAX_LEAVES];
    for (uint64_t b = 0; b < t->blocks; b++) {
        const uint32_t offset = sgfp4_record_offset(t, b);
        const unsigned layout = sgfp4_record_layout(t, b);
        uint8_t *rec = p + t->record_base + offset;
        sgfp4_store_u32le(p + SGFP4_V2_FIXED_HEADER + 4 * b, offset);
        sgfp4_store_u32le(rec, layout);
        if (layout == SGFP4_LAYOUT_MIXED)
            for (unsigned w = 0; w < 3; w++)
                sgfp4_store_u32le(rec + 4 + 4 * w, sgfp4_record_map(t, b)[w]);
        uint8_t *headers = rec + sgfp4_record_headers_at(layout);
        const unsigned n = sgfp4_block_leaf_refs(t, b, refs);
        for (unsigned i = 0; i < n; i++) /* flag bits 1-3 zero, as validated */
            sgfp4_store_u32le(headers + 4 * i, (refs[i].header & ~0xFu) | refs[i].mode);
    }
}

/* Uploads the tensor's device data through one staging buffer and one submission: for v2
 * the products' layout into vt->product (none where it would not fit one binding: the
 * products then refuse the tensor); where a decode may read the container (v1; v2 without
 * the layout or on a context that asks for the leaf table or the walk), the container bytes
 * (with_container) into vt->container and the v2 leaf table after them (else into
 * vt->table). A v2 tensor with the layout on any other context holds the layout alone:
 * every decode and product reads it. */
static sgfp4_status upload(sgfp4_vk_context *ctx, const sgfp4_tensor *t, int with_container,
                           sgfp4_vk_tensor *vt, sgfp4_diag *diag)
{
    uint64_t product_bytes = 0;
    if (t->profile == SGFP4_PROFILE_V2) {
        product_bytes = 4 * sgfp4_vk_product_layout_words(t, &vt->product_at);
        if (product_bytes > ctx->limits.maxStorageBufferRange || product_bytes / 4 > UINT32_MAX)
            product_bytes = 0;
    }
    const int reads_container =
        t->profile != SGFP4_PROFILE_V2 || !product_bytes || !sgfp4_vk_layout_decodes(ctx);
    const int copies_container = with_container && reads_container;
    uint32_t *table = NULL;
    size_t table_words = 0;
    if (t->profile == SGFP4_PROFILE_V2 && reads_container) {
        table_words = sgfp4_vk_build_leaf_table(t, &table);
        if (!table_words)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                              "out of memory for the leaf table");
    }
    /* An upload keeps the table in the container's buffer, right after the bytes (at a
     * 256-byte boundary, the largest minStorageBufferOffsetAlignment Vulkan allows). */
    const uint64_t container_bytes = copies_container ? (t->size + 255) & ~(uint64_t)255 : 0;
    const uint64_t table_bytes = table_words * 4;
    const uint64_t staged = container_bytes + table_bytes + product_bytes;
    sgfp4_vk_buffer staging = {0};
    sgfp4_status s = SGFP4_OK;
    vt->product_bytes = product_bytes;
    vt->table_bytes = table_bytes;
    if (copies_container) {
        s = sgfp4_vk_buffer_init(ctx, container_bytes + (table_bytes ? table_bytes : 16), 0,
                                 &vt->container, diag);
        vt->table_src = vt->container.buffer;
        vt->table_offset = container_bytes;
    } else {
        s = sgfp4_vk_buffer_init(ctx, table_bytes ? table_bytes : 16, 0, &vt->table, diag);
        vt->table_src = vt->table.buffer;
        vt->table_offset = 0;
    }
    if (s == SGFP4_OK && product_bytes)
        s = sgfp4_vk_buffer_init(ctx, product_bytes, 0, &vt->product, diag);
    if (s == SGFP4_OK && staged > 0)
        s = sgfp4_vk_buffer_init(ctx, staged, 1, &staging, diag);
    if (s == SGFP4_OK && staged > 0) {
        uint8_t *p = staging.mapped;
        if (copies_container) {
            stage_container(t, p);
            memset(p + t->size, 0, container_bytes - t->size);
        }
        if (table_bytes)
            memcpy(p + container_bytes, table, table_bytes);
        if (product_bytes)
            sgfp4_vk_build_product_layout(t, &vt->product_at,
                                          (uint32_t *)(p + container_bytes + table_bytes));
        s = sgfp4_vk_begin(ctx, diag);
        if (s == SGFP4_OK) {
            if (product_bytes) {
                const VkBufferCopy pc = {container_bytes + table_bytes, 0, product_bytes};
                vkCmdCopyBuffer(ctx->cmd, staging.buffer, vt->product.buffer, 1, &pc);
            }
            const VkBufferCopy c = {0, 0, container_bytes + table_bytes};
            if (copies_container) {
                vkCmdCopyBuffer(ctx->cmd, staging.buffer, vt->container.buffer, 1, &c);
            } else if (table_bytes) { /* a copy of 0 bytes is not a valid command */
                const VkBufferCopy tc = {0, 0, table_bytes};
                vkCmdCopyBuffer(ctx->cmd, staging.buffer, vt->table.buffer, 1, &tc);
            }
            sgfp4_vk_barrier_all(ctx);
            s = sgfp4_vk_submit_wait(ctx, diag);
        }
    }
    sgfp4_vk_buffer_release(ctx, &staging);
    sgfp4_free_with(&t->allocator, table);
    return s;
}

sgfp4_status sgfp4_vk_tensor_create(sgfp4_vk_context *ctx, const sgfp4_tensor *tensor,
                                    sgfp4_vk_tensor **out, sgfp4_diag *diag)
{
    if (!ctx || !tensor || !out)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_tensor_create: NULL argument");
    *out = NULL;
    sgfp4_vk_tensor *vt = NULL;
    sgfp4_status s = tensor_begin(ctx, tensor, &vt, diag);
    if (s != SGFP4_OK)
        return s;
    if ((s = upload(ctx, tensor, 1, vt, diag)) != SGFP4_OK) {
        sgfp4_vk_tensor_free(ctx, vt);
        return s;
    }
    vt->src = vt->container.buffer;
    vt->src_offset = 0;
    *out = vt;
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_tensor_create_from_buffer(sgfp4_vk_context *ctx,
                                                const sgfp4_tensor *tensor, VkBuffer buffer,
                                                VkDeviceSize offset, sgfp4_vk_tensor **out,
                                                sgfp4_diag *diag)
{
    if (!ctx || !tensor || !out || buffer == VK_NULL_HANDLE)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_tensor_create_from_buffer: NULL argument");
    *out = NULL;
    if (offset % 4 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_tensor_create_from_buffer: offset %llu is not a multiple of 4",
                          (unsigned long long)offset);
    sgfp4_vk_tensor *vt = NULL;
    sgfp4_status s = tensor_begin(ctx, tensor, &vt, diag);
    if (s != SGFP4_OK)
        return s;
    if ((s = upload(ctx, tensor, 0, vt, diag)) != SGFP4_OK) {
        sgfp4_vk_tensor_free(ctx, vt);
        return s;
    }
    vt->src = buffer;
    vt->src_offset = offset;
    *out = vt;
    return SGFP4_OK;
}

uint64_t sgfp4_vk_tensor_table_bytes(const sgfp4_vk_tensor *tensor)
{
    return tensor ? tensor->table_bytes + tensor->product_bytes : 0;
}

uint64_t sgfp4_vk_tensor_device_bytes(const sgfp4_vk_tensor *tensor)
{
    return tensor ? tensor->container.size + tensor->table.size + tensor->product.size : 0;
}

sgfp4_status sgfp4_vk_tensor_product_range(const sgfp4_vk_tensor *tensor, VkBuffer *buffer,
                                           VkDeviceSize *offset, uint64_t *bytes,
                                           sgfp4_diag *diag)
{
    if (!tensor || !buffer || !offset || !bytes)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_tensor_product_range: NULL argument");
    if (tensor->profile == SGFP4_PROFILE_V1) { /* as the products bind it (vk_matvec.c) */
        *buffer = tensor->src;
        *offset = tensor->src_offset;
        *bytes = tensor->container_bytes;
        return SGFP4_OK;
    }
    if (tensor->product_bytes == 0)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: this %llux%llu tensor has no products' layout (it would "
                          "exceed maxStorageBufferRange)",
                          (unsigned long long)tensor->rows, (unsigned long long)tensor->cols);
    *buffer = tensor->product.buffer;
    *offset = 0;
    *bytes = tensor->product_bytes;
    return SGFP4_OK;
}

void sgfp4_vk_tensor_free(sgfp4_vk_context *ctx, sgfp4_vk_tensor *tensor)
{
    if (!ctx || !tensor)
        return;
    sgfp4_vk_buffer_release(ctx, &tensor->container);
    sgfp4_vk_buffer_release(ctx, &tensor->table);
    sgfp4_vk_buffer_release(ctx, &tensor->product);
    free(tensor);
}
