/* Internals of the Vulkan backend, shared by its files (src/vulkan/).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_VK_INTERNAL_H
#define SGFP4_VK_INTERNAL_H

#include <vulkan/vulkan.h>

#include "sgfp4_experimental.h"
#include "sgfp4_vulkan.h"
#include "container/tensor.h"

/* Shader variants: the container profile and how v2 leaves are found. */
enum { SGFP4_VK_KERNEL_V1 = 0, SGFP4_VK_KERNEL_V2_TABLE = 1, SGFP4_VK_KERNEL_V2_WALK = 2,
       SGFP4_VK_KERNELS = 3 };
#define SGFP4_VK_DTYPES 3
/* Storage buffers of the decode shader: container, leaf table, destination as words, as
 * 16-byte vectors and as 8-byte vectors. */
#define SGFP4_VK_BINDINGS 5

struct sgfp4_vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    uint64_t size;
    void *mapped; /* host-visible buffers only */
};

struct sgfp4_vk_context {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    int owns_device;           /* created here (destroy instance and device) or imported */
    unsigned flags;            /* SGFP4_VK_* */
    sgfp4_vk_device_info info;
    VkPhysicalDeviceMemoryProperties memory;
    VkPhysicalDeviceLimits limits;
    int timestamps;            /* the queue family has timestamp bits */
    double timestamp_ns;       /* nanoseconds per timestamp tick */

    VkShaderModule module;     /* decode_rte or decode_int */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkDescriptorPool descriptor_pool;
    VkPipeline pipelines[SGFP4_VK_KERNELS][SGFP4_VK_DTYPES]; /* created on first use */
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;       /* 4 timestamps, or VK_NULL_HANDLE */
    /* What the last GPU call was, for sgfp4_vk_context_last_timing(): the timestamps stay
     * in `queries` until the next call resets them. */
    enum { SGFP4_VK_LAST_NONE, SGFP4_VK_LAST_DECODE, SGFP4_VK_LAST_DECODE_TO_HOST,
           SGFP4_VK_LAST_COPY } last_call;
    double last_submit_seconds;

    /* The copy pipeline (vk_copy.c), created on first use. */
    VkShaderModule copy_module;
    VkDescriptorSetLayout copy_set_layout;
    VkPipelineLayout copy_pipeline_layout;
    VkDescriptorPool copy_descriptor_pool;
    VkPipeline copy_pipeline;
};

struct sgfp4_vk_tensor {
    sgfp4_vk_buffer container; /* owned copy (sgfp4_vk_tensor_create); empty when the bytes
                                  are the caller's (sgfp4_vk_tensor_create_from_buffer) */
    VkBuffer src;              /* where the container bytes are */
    VkDeviceSize src_offset;
    sgfp4_vk_buffer table;     /* v2 leaf table in the caller's-buffer case (or a 16-byte
                                  dummy) */
    VkBuffer table_src;        /* where the leaf table is: after the container in an upload */
    VkDeviceSize table_offset;
    sgfp4_profile profile;
    uint64_t rows, cols, tiles_x, tiles_y, blocks, record_base, container_bytes;
    int walk;                  /* v2 kernel: walk the record (1) or read the table (0) */
};

/* The push constants of shaders/decode_body.glsl (Params), in order. */
typedef struct sgfp4_vk_params {
    uint32_t tiles_x, rows, cols, blocks, src_base, table_base, dst_base, row_stride,
        record_base;
} sgfp4_vk_params;

/* Records a failed Vulkan call `what` in diag and returns the matching status. */
sgfp4_status sgfp4_vk_fail(sgfp4_diag *diag, VkResult result, const char *what);

/* Memory and buffers (vk_memory.c). host = host-visible + mapped (staging, readback). */
sgfp4_status sgfp4_vk_buffer_init(sgfp4_vk_context *ctx, uint64_t size, int host,
                                  sgfp4_vk_buffer *buffer, sgfp4_diag *diag);
void sgfp4_vk_buffer_release(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer);

/* Command submission (vk_submit.c): begin recording into ctx->cmd; end, submit, wait. */
sgfp4_status sgfp4_vk_begin(sgfp4_vk_context *ctx, sgfp4_diag *diag);
sgfp4_status sgfp4_vk_submit_wait(sgfp4_vk_context *ctx, sgfp4_diag *diag);
/* A full memory barrier: earlier writes of any stage visible to later commands. */
void sgfp4_vk_barrier_all(sgfp4_vk_context *ctx);

/* Pipelines (vk_pipeline.c). */
sgfp4_status sgfp4_vk_pipelines_init(sgfp4_vk_context *ctx, sgfp4_diag *diag);
/* Creates the descriptor-set layout (`buffers` storage buffers, bindings 0..buffers-1,
 * buffers <= SGFP4_VK_BINDINGS), the pipeline layout with `push_bytes` of push constants,
 * and a one-set descriptor pool. Handles already created stay set on failure, for the
 * caller's release function. */
sgfp4_status sgfp4_vk_layouts_create(VkDevice device, uint32_t buffers, uint32_t push_bytes,
                                     VkDescriptorSetLayout *set_layout,
                                     VkPipelineLayout *pipeline_layout, VkDescriptorPool *pool,
                                     sgfp4_diag *diag);
void sgfp4_vk_pipelines_release(sgfp4_vk_context *ctx);
sgfp4_status sgfp4_vk_pipeline(sgfp4_vk_context *ctx, unsigned kernel, sgfp4_dtype dtype,
                               VkPipeline *out, sgfp4_diag *diag);

/* The embedded SPIR-V (vk_shaders.c). */
extern const uint32_t *const sgfp4_vk_spv_rte;
extern const size_t sgfp4_vk_spv_rte_size;
extern const uint32_t *const sgfp4_vk_spv_int;
extern const size_t sgfp4_vk_spv_int_size;
extern const uint32_t *const sgfp4_vk_spv_copy;
extern const size_t sgfp4_vk_spv_copy_size;

/* Releases the copy pipeline's objects (vk_copy.c). */
void sgfp4_vk_copy_release(sgfp4_vk_context *ctx);
/* Timestamps [first, first + 1] as seconds; 0 if timestamps are unavailable (vk_decode.c). */
double sgfp4_vk_timestamp_seconds(const sgfp4_vk_context *ctx, uint32_t first);

/* The CPU-built v2 leaf table (vk_leaf_table.c): (blocks + 1) first-leaf indices, blocks
 * record locations, then one packed word per leaf (see shaders/decode_body.glsl, s_leaf). Returns the word count, or
 * 0 when out of memory; *words is released with sgfp4_free_with(&t->allocator, ...). */
size_t sgfp4_vk_build_leaf_table(const sgfp4_tensor *t, uint32_t **words);

#endif
