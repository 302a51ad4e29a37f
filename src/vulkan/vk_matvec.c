/* The D8 matrix-vector products on a resident tensor (shaders/matvec_body.glsl): how the
 * work is split (workgroups per band, blocks in flight per workgroup, the counters' depths),
 * the pipelines (one per specialization, created on first use), the scratch of a product
 * whose bands span several workgroups, and the synchronous calls.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "vulkan/vk_internal.h"
#include "common/options.h"
#include "common/diag.h"

/* The push constants of the shader (Params), in order. */
typedef struct matvec_params {
    uint32_t tiles_x, rows, cols, blocks, src_base, map_base, desc_base, sb_base, x_base,
        x_stride, y_base, y_stride, slices, classes, steps, scratch_parts;
} matvec_params;

/* Specialization constants (constant_id order of the shader). */
enum { K_PROFILE, K_CLASS, K_BATCH, K_X_F16, K_LEVELS, K_ROWS, K_VEC, K_GROUP, K_S_LEVELS,
       K_PREFETCH, K_ACT_ALL, K_LEAVES_AHEAD, K_FAST, K_COUNT };

_Static_assert(K_COUNT <= SGFP4_VK_MAX_CONSTANTS,
               "a pipeline's key holds every specialization constant");

/* The default number of workgroups a product aims at (a band's slices only add partial
 * sums, never change a bit): fewer, longer-lived workgroups than a full GPU holds at once,
 * fewer for v2 (more registers an invocation: each cell's S and Bias); the values that gave
 * the least time over the benchmark shapes (docs/notes/2026-12-vulkan-kernels.md). */
enum { TARGET_WORKGROUPS_V1 = 512, TARGET_WORKGROUPS_V2 = 256, MAX_SLICES = 64 };

static unsigned log2_exact(uint64_t v)
{
    unsigned l = 0;
    while ((UINT64_C(1) << l) < v)
        l++;
    return l;
}

/* The shared memory the shader declares for these constants (matvec_body.glsl): `buffers`
 * buffers of activations, the T158 table of v1 Class A, the last-workgroup flag. */
static uint64_t shared_bytes(int v2, int class_a, unsigned batch, unsigned subs,
                             uint64_t buffers)
{
    return buffers * ((uint64_t)subs * batch * 16 * 16 + (uint64_t)subs * batch * 4) +
           (class_a && !v2 ? 1024 : 4) + 16;
}

/* At batch 1 a workgroup stages all its steps' activations at once (no barrier in its loop)
 * where they take at most this much shared memory; otherwise two buffers, one barrier a step
 * (larger batches hold more registers, where staging all at once loses:
 * docs/notes/2026-12-vulkan-kernels.md). */
enum { ACT_ALL_MAX_BYTES = 24 * 1024 };

/* Zeroes the scratch's counters (and partials) once, synchronously. */
static sgfp4_status zero_scratch(sgfp4_vk_context *ctx, const sgfp4_vk_buffer *b,
                                 sgfp4_diag *diag)
{
    sgfp4_status s = sgfp4_vk_begin(ctx, diag);
    if (s != SGFP4_OK)
        return s;
    vkCmdFillBuffer(ctx->cmd, b->buffer, 0, VK_WHOLE_SIZE, 0);
    sgfp4_vk_barrier_all(ctx);
    return sgfp4_vk_submit_wait(ctx, diag);
}

/* How a product is split: rows per workgroup, blocks in flight per workgroup (subs),
 * workgroups per row group (slices), the block classes and each class's blocks (steps). */
typedef struct split {
    unsigned rows, subs, slices, classes, steps, levels, s_levels;
    int act_all; /* every step's activations staged before the loop */
} split;

/* The rows per workgroup unless a v1 product's flags ask for 16 or 32. */
enum { DEFAULT_ROWS = 64 };

static sgfp4_status choose_split(const sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                                 int class_a, unsigned batch,
                                 const sgfp4_vk_matvec_options *o, split *out,
                                 sgfp4_diag *diag)
{
    const int v2 = vt->profile == SGFP4_PROFILE_V2;
    unsigned rows = DEFAULT_ROWS; /* v2: always (the row flags are tested on v1 only) */
    if (!v2 && (o->flags & SGFP4_VK_MATVEC_ROWS_16))
        rows = 16;
    else if (!v2 && (o->flags & SGFP4_VK_MATVEC_ROWS_32))
        rows = 32;
    /* 256 invocations (128 above batch 8), fewer where shared memory is short. */
    unsigned group = batch > 8 ? 128 : 256;
    while (group > rows &&
           shared_bytes(v2, class_a, batch, group / rows, 2) > ctx->limits.maxComputeSharedMemorySize)
        group /= 2;
    const unsigned subs = group / rows;
    if (shared_bytes(v2, class_a, batch, subs, 2) > ctx->limits.maxComputeSharedMemorySize)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: a product of batch %u needs %llu bytes of shared memory, the "
                          "device has %u",
                          batch, (unsigned long long)shared_bytes(v2, class_a, batch, subs, 2),
                          ctx->limits.maxComputeSharedMemorySize);
    uint64_t padded = 1;
    while (padded < vt->tiles_x)
        padded *= 2;
    const uint64_t row_groups = vt->tiles_y * (64 / rows);
    unsigned slices = o->slices;
    if (slices == 0) {
        slices = 1;
        const uint64_t target = v2 ? TARGET_WORKGROUPS_V2 : TARGET_WORKGROUPS_V1;
        while (row_groups * slices < target && 2ull * subs * slices <= padded &&
               slices < MAX_SLICES)
            slices *= 2;
    } else if ((slices & (slices - 1)) != 0 || slices > MAX_SLICES ||
               (slices > 1 && (uint64_t)subs * slices > padded)) {
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: slices %u is not a power of two up to %d with %u blocks "
                          "in flight per slice within the row's %llu (padded) blocks",
                          slices, MAX_SLICES, subs, (unsigned long long)padded);
    }
    const uint64_t classes = (uint64_t)subs * slices < padded ? (uint64_t)subs * slices : padded;
    const uint64_t steps = padded / classes;
    out->rows = rows;
    out->subs = subs;
    out->slices = slices;
    out->classes = (unsigned)classes;
    out->steps = (unsigned)steps;
    out->levels = log2_exact(steps) + 1;
    out->s_levels = log2_exact(slices) + 1;
    const uint64_t all = shared_bytes(v2, class_a, batch, subs, steps);
    out->act_all = batch == 1 && steps > 1 && all <= ACT_ALL_MAX_BYTES &&
                   all <= ctx->limits.maxComputeSharedMemorySize;
    if (out->levels > 20)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: %llu columns are beyond the product's block counter",
                          (unsigned long long)vt->cols);
    return SGFP4_OK;
}

/* Whether a v2 product loads the next step's S and Bias pairs a step ahead of its use (the
 * shader's LEAVES_AHEAD): Class A by default; Class B, which holds more registers across a
 * step, loads them at use (measurements: docs/notes/2026-12-vulkan-kernels.md). */
static uint32_t leaves_ahead(int v1, int class_a, unsigned flags)
{
    if (v1 || (flags & SGFP4_VK_MATVEC_LEAVES_AT_USE))
        return 0;
    return class_a || (flags & SGFP4_VK_MATVEC_LEAVES_AHEAD) ? 1 : 0;
}

/* The options (NULL: the defaults). */
static sgfp4_status read_options(const sgfp4_vk_matvec_options *given,
                                 sgfp4_vk_matvec_options *o, sgfp4_diag *diag)
{
    if (SGFP4_OPTIONS_READ(sgfp4_vk_matvec_options, given, o) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_vk_matvec_options_init)",
                          given->struct_size);
    if (o->fast != 0 && o->fast != 1)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: fast is %d, not 0 (D8 products) or 1 (D9 fast products)",
                          o->fast);
    return SGFP4_OK;
}

/* A product's request: what the public calls were given (strides 0 already replaced). */
typedef struct product {
    const sgfp4_vk_tensor *vt;
    int class_a; /* 1: q8 activations */
    VkBuffer x;
    VkDeviceSize x_offset;
    sgfp4_dtype dtype;
    unsigned batch;
    uint64_t x_stride;
    VkBuffer y;
    VkDeviceSize y_offset;
    uint64_t y_stride;
} product;

/* The checks of a request that need no device ranges; strides 0 become the packed ones. */
static sgfp4_status check_product(const sgfp4_vk_context *ctx, product *p, sgfp4_diag *diag)
{
    const sgfp4_vk_tensor *vt = p->vt;
    if (ctx->info.matvec_path == SGFP4_VK_MATVEC_UNAVAILABLE)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: device '%s' cannot declare RoundingModeRTE and "
                          "SignedZeroInfNanPreserve for 32-bit floats, which the exact "
                          "matrix-vector products need",
                          ctx->info.name);
    if (!p->class_a && p->dtype != SGFP4_DTYPE_F32 && p->dtype != SGFP4_DTYPE_F16)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "matrix-vector product: activations must be f32 or f16");
    const uint64_t elem = p->class_a ? 1 : sgfp4_dtype_size(p->dtype);
    if (p->x_stride == 0)
        p->x_stride = vt->cols;
    if (p->y_stride == 0)
        p->y_stride = vt->rows;
    if (p->batch < 1 || p->batch > SGFP4_MATVEC_MAX_BATCH ||
        (!p->class_a && p->x_stride < vt->cols) || p->y_stride < vt->rows ||
        p->x_offset % (p->class_a ? 4 : elem) != 0 || p->y_offset % 4 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "matrix-vector product: batch outside 1..%d, a stride below the "
                          "vector length, or a misaligned offset",
                          SGFP4_MATVEC_MAX_BATCH);
    if (vt->profile != SGFP4_PROFILE_V1 && vt->product_bytes == 0)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: the products' layout of this %llux%llu tensor exceeds the "
                          "device's maxStorageBufferRange (%u bytes)",
                          (unsigned long long)vt->rows, (unsigned long long)vt->cols,
                          ctx->limits.maxStorageBufferRange);
    return SGFP4_OK;
}

/* Where a product's buffers are bound (infos[0..4]; the scratch, binding 5, comes with the
 * op) and the push constants that say where each array starts in its binding. */
typedef struct product_bindings {
    VkDescriptorBufferInfo infos[6];
    matvec_params params;
    uint64_t src_skip, row_groups, scratch_words;
} product_bindings;

static sgfp4_status bind_product(const sgfp4_vk_context *ctx, const product *p, const split *sp,
                                 product_bindings *b, sgfp4_diag *diag)
{
    const sgfp4_vk_tensor *vt = p->vt;
    const int v1 = vt->profile == SGFP4_PROFILE_V1;
    const uint64_t elem = p->class_a ? 1 : sgfp4_dtype_size(p->dtype);
    const uint64_t vector_bytes = (vt->tiles_x * 68 + 63) & ~(uint64_t)63;
    const uint64_t x_bytes = p->class_a ? p->batch * vector_bytes
                                        : ((p->batch - 1) * p->x_stride + vt->cols) * elem;
    const uint64_t y_floats = (p->batch - 1) * p->y_stride + vt->rows;
    b->row_groups = vt->tiles_y * (64 / sp->rows);
    const uint64_t counters = (b->row_groups + 15) & ~(uint64_t)15;
    const uint64_t parts = sp->slices > 1 ? b->row_groups * sp->slices * p->batch * sp->rows : 0;
    b->scratch_words = counters + parts;
    /* v1 reads the container; v2 the products' layout (codes, maps and descriptions as
     * words and 16-byte vectors, the leaves' S and Bias as pairs). */
    uint64_t x_skip, y_skip;
    sgfp4_status s = v1 ? sgfp4_vk_range(ctx, vt->src, vt->src_offset, vt->container_bytes,
                                         &b->infos[0], &b->src_skip, diag)
                        : sgfp4_vk_range(ctx, vt->product.buffer, 0, vt->product_bytes,
                                         &b->infos[0], &b->src_skip, diag);
    b->infos[1] = b->infos[2] = b->infos[0];
    if (s == SGFP4_OK)
        s = sgfp4_vk_range(ctx, p->x, p->x_offset, x_bytes, &b->infos[3], &x_skip, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_range(ctx, p->y, p->y_offset, y_floats * 4, &b->infos[4], &y_skip, diag);
    if (s != SGFP4_OK)
        return s;
    const uint64_t x_base = p->class_a ? x_skip / 4 : x_skip / elem;
    const uint64_t x_step = p->class_a ? vector_bytes / 4 : p->x_stride;
    const uint64_t x_len = p->class_a ? vector_bytes / 4 : vt->cols;
    if (x_base + (p->batch - 1) * x_step + x_len > UINT32_MAX || y_skip / 4 + y_floats > UINT32_MAX ||
        b->scratch_words > UINT32_MAX / 4 ||
        b->row_groups > ctx->limits.maxComputeWorkGroupCount[1] || vt->rows > UINT32_MAX ||
        vt->cols > UINT32_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_UNSUPPORTED, -1, -1, -1,
                          "Vulkan: a %llux%llu product of batch %u exceeds the shader's 32-bit "
                          "indices or the device's workgroup counts",
                          (unsigned long long)vt->rows, (unsigned long long)vt->cols, p->batch);
    b->params = (matvec_params){(uint32_t)vt->tiles_x,
                                (uint32_t)vt->rows,
                                (uint32_t)vt->cols,
                                (uint32_t)vt->blocks,
                                (uint32_t)(b->src_skip / 4),
                                (uint32_t)(v1 ? 0 : vt->product_at.maps),
                                (uint32_t)(v1 ? 0 : vt->product_at.desc),
                                (uint32_t)(v1 ? 0 : vt->product_at.sb / 2),
                                (uint32_t)x_base,
                                (uint32_t)x_step,
                                (uint32_t)(y_skip / 4),
                                (uint32_t)p->y_stride,
                                sp->slices,
                                sp->classes,
                                sp->steps,
                                (uint32_t)counters};
    return SGFP4_OK;
}

/* The product's pipeline, by its specialization constants. */
static sgfp4_status product_pipeline(sgfp4_vk_context *ctx, const product *p, const split *sp,
                                     const product_bindings *b,
                                     const sgfp4_vk_matvec_options *o, VkPipeline *out,
                                     sgfp4_diag *diag)
{
    const int v1 = p->vt->profile == SGFP4_PROFILE_V1;
    const uint32_t key[K_COUNT] = {
        [K_PROFILE] = v1 ? 0 : 1,
        [K_CLASS] = p->class_a ? 0 : 1,
        [K_BATCH] = p->batch,
        [K_X_F16] = !p->class_a && p->dtype == SGFP4_DTYPE_F16,
        [K_LEVELS] = sp->levels,
        [K_ROWS] = sp->rows,
        [K_VEC] = !v1 || (b->src_skip / 4 + 2 * p->vt->blocks) % 4 == 0,
        [K_GROUP] = sp->rows * sp->subs,
        [K_S_LEVELS] = sp->s_levels,
        [K_PREFETCH] = !(o->flags & SGFP4_VK_MATVEC_NO_PREFETCH),
        [K_ACT_ALL] = sp->act_all,
        [K_LEAVES_AHEAD] = leaves_ahead(v1, p->class_a, o->flags),
        [K_FAST] = (uint32_t)o->fast};
    return sgfp4_vk_kernel_pipeline(ctx, SGFP4_VK_MATVEC, key, K_COUNT, out, diag);
}

/* Prepares a product op: checks, splits, binds, and zeroes the op's scratch. */
static sgfp4_status product_create(sgfp4_vk_context *ctx, product *p,
                                   const sgfp4_vk_matvec_options *given, sgfp4_vk_op **out,
                                   sgfp4_diag *diag)
{
    if (out)
        *out = NULL;
    if (!ctx || !p->vt || !out || p->x == VK_NULL_HANDLE || p->y == VK_NULL_HANDLE)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "matrix-vector product: NULL argument");
    sgfp4_vk_matvec_options options;
    sgfp4_status s = read_options(given, &options, diag);
    if (s == SGFP4_OK)
        s = check_product(ctx, p, diag);
    split sp = {0};
    if (s == SGFP4_OK)
        s = choose_split(ctx, p->vt, p->class_a, p->batch, &options, &sp, diag);
    product_bindings b;
    if (s == SGFP4_OK)
        s = bind_product(ctx, p, &sp, &b, diag);
    VkPipeline pipeline = VK_NULL_HANDLE;
    if (s == SGFP4_OK)
        s = product_pipeline(ctx, p, &sp, &b, &options, &pipeline, diag);
    sgfp4_vk_op *op = NULL;
    if (s == SGFP4_OK)
        s = sgfp4_vk_op_begin(ctx, SGFP4_VK_OP_PRODUCT, 6, &op, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_buffer_init(ctx, 4 * b.scratch_words, 0, &op->scratch, diag);
    if (s == SGFP4_OK)
        s = zero_scratch(ctx, &op->scratch, diag);
    uint64_t unused;
    if (s == SGFP4_OK)
        s = sgfp4_vk_range(ctx, op->scratch.buffer, 0, 4 * b.scratch_words, &b.infos[5],
                           &unused, diag);
    const sgfp4_vk_kernel *k = &ctx->kernels[SGFP4_VK_MATVEC];
    if (s == SGFP4_OK)
        s = sgfp4_vk_bind_buffers(ctx, op->pool, k->set_layout, b.infos, 6, 0,
                                  &op->dispatch.set, diag);
    if (s != SGFP4_OK) {
        sgfp4_vk_op_free(op);
        return s;
    }
    op->dispatch.pipeline = pipeline;
    op->dispatch.layout = k->pipeline_layout;
    memcpy(op->dispatch.push, &b.params, sizeof b.params);
    op->dispatch.push_bytes = sizeof b.params;
    op->dispatch.groups_x = sp.slices;
    op->dispatch.groups_y = (uint32_t)b.row_groups;
    *out = op;
    return SGFP4_OK;
}

sgfp4_status sgfp4_vk_matvec_q8_create(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                       VkBuffer q8, VkDeviceSize q8_offset, unsigned batch,
                                       VkBuffer y, VkDeviceSize y_offset, uint64_t y_stride,
                                       const sgfp4_vk_matvec_options *options, sgfp4_vk_op **out,
                                       sgfp4_diag *diag)
{
    product p = {tensor, 1, q8, q8_offset, SGFP4_DTYPE_F32, batch, 0, y, y_offset, y_stride};
    return product_create(ctx, &p, options, out, diag);
}

sgfp4_status sgfp4_vk_matvec_float_create(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                          VkBuffer x, VkDeviceSize x_offset, sgfp4_dtype dtype,
                                          unsigned batch, uint64_t x_stride, VkBuffer y,
                                          VkDeviceSize y_offset, uint64_t y_stride,
                                          const sgfp4_vk_matvec_options *options,
                                          sgfp4_vk_op **out, sgfp4_diag *diag)
{
    product p = {tensor, 0, x, x_offset, dtype, batch, x_stride, y, y_offset, y_stride};
    return product_create(ctx, &p, options, out, diag);
}

sgfp4_status sgfp4_vk_matvec_q8(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                VkBuffer q8, VkDeviceSize q8_offset, unsigned batch, VkBuffer y,
                                VkDeviceSize y_offset, uint64_t y_stride,
                                const sgfp4_vk_matvec_options *options, sgfp4_diag *diag)
{
    sgfp4_vk_op *op;
    sgfp4_status s = sgfp4_vk_matvec_q8_create(ctx, tensor, q8, q8_offset, batch, y, y_offset,
                                               y_stride, options, &op, diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_op_run(op, diag);
    sgfp4_vk_op_free(op);
    return s;
}

sgfp4_status sgfp4_vk_matvec_float(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                   VkBuffer x, VkDeviceSize x_offset, sgfp4_dtype dtype,
                                   unsigned batch, uint64_t x_stride, VkBuffer y,
                                   VkDeviceSize y_offset, uint64_t y_stride,
                                   const sgfp4_vk_matvec_options *options, sgfp4_diag *diag)
{
    sgfp4_vk_op *op;
    sgfp4_status s = sgfp4_vk_matvec_float_create(ctx, tensor, x, x_offset, dtype, batch,
                                                  x_stride, y, y_offset, y_stride, options, &op,
                                                  diag);
    if (s == SGFP4_OK)
        s = sgfp4_vk_op_run(op, diag);
    sgfp4_vk_op_free(op);
    return s;
}
