/* Internals of the Vulkan backend, shared by its files (src/vulkan/).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_VK_INTERNAL_H
#define SGFP4_VK_INTERNAL_H

#include <vulkan/vulkan.h>

#include "sgfp4_experimental.h"
#include "sgfp4_vulkan.h"
#include "container/tensor.h"
#include "vulkan/vk_error.h"

/* Shader variants: the container profile and how v2 leaves are found (the leaf table, the
 * record walk, or the products' layout). */
enum { SGFP4_VK_KERNEL_V1 = 0, SGFP4_VK_KERNEL_V2_TABLE = 1, SGFP4_VK_KERNEL_V2_WALK = 2,
       SGFP4_VK_KERNEL_V2_LAYOUT = 3, SGFP4_VK_KERNEL_V2_LAYOUT_PAIRS = 4 };
/* How f16 outputs are rounded (specialization constant F16_CONVERSION of
 * shaders/decode_body.glsl): integer code, one f32 add under RoundingModeRTE, or the
 * device's own f32 -> f16 conversion (module decode_rte16). */
enum { SGFP4_VK_F16_BY_INTEGER = 0, SGFP4_VK_F16_BY_ADD = 1, SGFP4_VK_F16_BY_DEVICE = 2 };
/* The decode shaders' specialization constants after PROFILE and DTYPE (constant_id 2, 3):
 * F16_CONVERSION, F16_GUARD. */
#define SGFP4_VK_VARIANT_CONSTANTS 2
/* Storage buffers of the decode shader: container, leaf table, destination as words, as
 * 16-byte vectors and as 8-byte vectors, container again as 8-byte pairs. */
#define SGFP4_VK_BINDINGS 6
/* The most storage buffers of any of the backend's shaders (the matrix-vector product). */
#define SGFP4_VK_MAX_BINDINGS 6

struct sgfp4_vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    uint64_t size;
    void *mapped; /* host-visible buffers only */
};

/* The compute kernels, one record each (vk_kernel.c): the decode (decode_rte or decode_int,
 * by the context's pipeline), the decode of f16 outputs by the device's conversion
 * (decode_rte16), the products and the quantizer. */
enum { SGFP4_VK_DECODE, SGFP4_VK_DECODE_F16, SGFP4_VK_MATVEC, SGFP4_VK_QUANTIZE,
       SGFP4_VK_KERNEL_COUNT };
/* The most specialization constants of any kernel (the products'). */
#define SGFP4_VK_MAX_CONSTANTS 13

/* One pipeline of a kernel and the specialization constants it was made with (the words
 * past `count` are 0). */
typedef struct sgfp4_vk_pipeline_entry {
    uint32_t key[SGFP4_VK_MAX_CONSTANTS];
    uint32_t count;
    VkPipeline pipeline;
} sgfp4_vk_pipeline_entry;

/* One kernel: its shader module, descriptor-set and pipeline layouts, a descriptor pool for
 * its synchronous calls (none where only operations, with pools of their own, bind it), and
 * its pipelines by specialization. */
typedef struct sgfp4_vk_kernel {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkDescriptorPool pool;
    sgfp4_vk_pipeline_entry *pipelines;
    unsigned count, capacity;
} sgfp4_vk_kernel;

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

    uint32_t variant[SGFP4_VK_VARIANT_CONSTANTS]; /* the context's choice, fixed at creation */
    int float16_enabled;       /* our device was created with shaderFloat16 */
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
    VkFence fence;

    int dot_enabled;           /* our device was created with shaderIntegerDotProduct */
    sgfp4_vk_kernel kernels[SGFP4_VK_KERNEL_COUNT]; /* sgfp4_vk_kernel_pipeline() */
};

/* Where the sections of a v2 tensor's products' layout start (vk_matvec_layout.c), in words
 * (the codes start at 0). */
typedef struct sgfp4_vk_product_layout {
    uint64_t maps, desc, sb; /* first word of each section (the codes start at 0) */
} sgfp4_vk_product_layout;

struct sgfp4_vk_tensor {
    sgfp4_vk_buffer container; /* owned copy (sgfp4_vk_tensor_create); empty when the bytes
                                  are the caller's (sgfp4_vk_tensor_create_from_buffer) and
                                  for a v2 tensor whose decodes and products all read the
                                  products' layout (sgfp4_vk_layout_decodes) */
    VkBuffer src;              /* where the container bytes are (VK_NULL_HANDLE: not held) */
    VkDeviceSize src_offset;
    sgfp4_vk_buffer table;     /* v2 leaf table in the caller's-buffer case (or a 16-byte
                                  dummy) */
    VkBuffer table_src;        /* where the leaf table is: after the container in an upload */
    VkDeviceSize table_offset;
    sgfp4_profile profile;
    uint64_t rows, cols, tiles_x, tiles_y, blocks, record_base, container_bytes;
    uint64_t leaves;           /* v2: leaves in the table */
    uint64_t mixed_records;    /* v2: records in the MIXED layout (the decode's kernel choice) */
    uint64_t table_bytes;      /* the leaf table's size (0 for v1) */
    sgfp4_vk_buffer product;   /* v2: the products' layout (empty where it would exceed
                                  maxStorageBufferRange: the products then refuse) */
    sgfp4_vk_product_layout product_at;
    uint64_t product_bytes;
    int walk;                  /* v2 kernel: walk the record (1) or read the table (0) */
};

/* The push constants of shaders/decode_body.glsl (Params), in order. */
typedef struct sgfp4_vk_params {
    uint32_t tiles_x, rows, cols, blocks, src_base, table_base, dst_base, row_stride,
        record_base, map_base, desc_base, sb_base;
} sgfp4_vk_params;

/* Memory and buffers (vk_memory.c). host = host-visible + mapped (staging, readback). */
sgfp4_status sgfp4_vk_buffer_init(sgfp4_vk_context *ctx, uint64_t size, int host,
                                  sgfp4_vk_buffer *buffer, sgfp4_diag *diag);
void sgfp4_vk_buffer_release(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer);

/* Command submission (vk_submit.c): begin recording into ctx->cmd; end, submit, wait. */
sgfp4_status sgfp4_vk_begin(sgfp4_vk_context *ctx, sgfp4_diag *diag);
sgfp4_status sgfp4_vk_submit_wait(sgfp4_vk_context *ctx, sgfp4_diag *diag);
/* A full memory barrier: earlier writes of any stage visible to later commands. */
void sgfp4_vk_barrier_all(sgfp4_vk_context *ctx);
/* Allocates a set of `layout` from `pool` (reset first if `reset`: the sets allocated from it
 * before become invalid) and points bindings 0..count-1 at `infos` (storage buffers; count
 * <= SGFP4_VK_BINDINGS). */
sgfp4_status sgfp4_vk_bind_buffers(sgfp4_vk_context *ctx, VkDescriptorPool pool,
                                   VkDescriptorSetLayout layout,
                                   const VkDescriptorBufferInfo *infos, uint32_t count,
                                   int reset, VkDescriptorSet *set, sgfp4_diag *diag);

/* One compute dispatch, ready to record: everything it binds. */
typedef struct sgfp4_vk_dispatch {
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSet set;
    uint32_t push[16]; /* push constants */
    uint32_t push_bytes;
    uint32_t groups_x, groups_y;
} sgfp4_vk_dispatch;

/* Records the dispatch into ctx->cmd (bind, push, dispatch). */
void sgfp4_vk_record_dispatch(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d);
/* The same into any command buffer. */
void sgfp4_vk_record_dispatch_into(VkCommandBuffer cmd, const sgfp4_vk_dispatch *d);

/* A prepared quantization or product (vk_op.c): one dispatch with its own descriptor set,
 * and a scratch buffer (products on several workgroups per band: counters and partial sums,
 * zeroed at creation) or a status word (the quantizer: host-visible, UINT32_MAX = none). */
enum { SGFP4_VK_OP_QUANTIZE = 1, SGFP4_VK_OP_PRODUCT = 2, SGFP4_VK_OP_DECODE = 4 };
struct sgfp4_vk_op {
    sgfp4_vk_context *ctx;
    int kind;
    sgfp4_vk_dispatch dispatch;
    VkDescriptorPool pool;
    sgfp4_vk_buffer scratch;
    uint64_t cols; /* the quantizer: columns per vector, to name a bad activation */
};
/* Allocates an op of `kind` with a descriptor pool for one set of `bindings` buffers. */
sgfp4_status sgfp4_vk_op_begin(sgfp4_vk_context *ctx, int kind, uint32_t bindings,
                               sgfp4_vk_op **out, sgfp4_diag *diag);
/* The pipeline of kernel `id` (SGFP4_VK_DECODE, ...) with the specialization constants
 * key[0..count) at constant_id 0..count-1 (count <= SGFP4_VK_MAX_CONSTANTS), creating on
 * first use the kernel's module, layouts and pool (ctx->kernels[id]), then the pipeline
 * (vk_kernel.c). */
sgfp4_status sgfp4_vk_kernel_pipeline(sgfp4_vk_context *ctx, unsigned id, const uint32_t *key,
                                      uint32_t count, VkPipeline *out, sgfp4_diag *diag);
void sgfp4_vk_kernels_release(sgfp4_vk_context *ctx);
/* Descriptor info of [offset, offset + bytes) of `buffer` bound at the offset rounded down to
 * minStorageBufferOffsetAlignment; *skip = the bytes from there to `offset`. SGFP4_ERR_UNSUPPORTED
 * where the range exceeds maxStorageBufferRange. */
sgfp4_status sgfp4_vk_range(const sgfp4_vk_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                            uint64_t bytes, VkDescriptorBufferInfo *info, uint64_t *skip,
                            sgfp4_diag *diag);
/* Records, submits and waits for one dispatch (with barriers before and after). */
sgfp4_status sgfp4_vk_run_dispatch(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *d,
                                   sgfp4_diag *diag);
/* Whether the context's v2 decodes read the products' layout of a tensor that has one (else
 * the container: the leaf table or the record walk), by its flags (vk_decode.c). */
int sgfp4_vk_layout_decodes(const sgfp4_vk_context *ctx);

/* The dispatches of the operations (their pipelines created on first use; the descriptor
 * set comes from the operation's pool and stays valid until the pool's next reset). */
/* The decode's set comes from `pool` (an op's), or where that is VK_NULL_HANDLE from the
 * kernel's own pool of one set, reset first (the synchronous calls). */
sgfp4_status sgfp4_vk_prepare_decode(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                                     sgfp4_dtype dtype, VkBuffer dst, VkDeviceSize dst_offset,
                                     uint64_t row_stride, VkDescriptorPool pool,
                                     sgfp4_vk_dispatch *d, sgfp4_diag *diag);


/* The embedded SPIR-V (vk_shaders.c). */
extern const uint32_t *const sgfp4_vk_spv_rte;
extern const size_t sgfp4_vk_spv_rte_size;
extern const uint32_t *const sgfp4_vk_spv_int;
extern const size_t sgfp4_vk_spv_int_size;
extern const uint32_t *const sgfp4_vk_spv_rte16;
extern const size_t sgfp4_vk_spv_rte16_size;
extern const uint32_t *const sgfp4_vk_spv_matvec;
extern const size_t sgfp4_vk_spv_matvec_size;
extern const uint32_t *const sgfp4_vk_spv_matvec_dot;
extern const size_t sgfp4_vk_spv_matvec_dot_size;
extern const uint32_t *const sgfp4_vk_spv_quantize;
extern const size_t sgfp4_vk_spv_quantize_size;

/* A malloc'ed copy of the SPIR-V module `words` (count words) with the capabilities and the
 * execution modes (mode, operand) of its entry point added; NULL if the module cannot be
 * parsed or memory runs out (vk_spirv.c). */
uint32_t *sgfp4_vk_spirv_add_modes(const uint32_t *words, size_t count,
                                   const uint32_t *capabilities, unsigned n_capabilities,
                                   const uint32_t (*modes)[2], unsigned n_modes,
                                   size_t *out_count);


/* The CPU-built v2 leaf table (vk_leaf_table.c): (blocks + 1) first-leaf indices, blocks
 * record locations, one packed word per leaf (see shaders/decode_body.glsl, s_leaf). Returns
 * the word count, or 0 when out of memory; *words is released with sgfp4_free_with(&t->allocator, ...). */
size_t sgfp4_vk_build_leaf_table(const sgfp4_tensor *t, uint32_t **words);

/* The products' layout of a v2 tensor (vk_matvec_layout.c: four-bit codes in v1's row
 * order, each leaf's S and Bias as binary32, a cell-to-leaf map per MIXED record): its size
 * in words with *where its sections, and the layout built into w (that many words). */
uint64_t sgfp4_vk_product_layout_words(const sgfp4_tensor *t, sgfp4_vk_product_layout *where);
void sgfp4_vk_build_product_layout(const sgfp4_tensor *t, const sgfp4_vk_product_layout *where,
                                   uint32_t *w);

#endif
