/*
 * libsgfp4 Vulkan backend: decode SGFP4 containers on a GPU, bit-identical to the scalar
 * decoder (DECISIONS D1), from GLSL compute shaders compiled into the library.
 *
 * SPDX-License-Identifier: MIT
 *
 * Availability: the functions always exist. In a build without Vulkan (sgfp4_config.h says
 * SGFP4_HAVE_VULKAN 0) every call returns SGFP4_ERR_UNAVAILABLE; in a build with it, a
 * machine without a Vulkan loader or device returns SGFP4_ERR_VK_NO_DEVICE.
 *
 * Requirements: Vulkan 1.1, storage buffers, nothing optional. Where the device reports
 * shaderRoundingModeRTEFloat32 the shaders declare RoundingModeRTE; elsewhere an
 * integer-only pipeline computes the same bits.
 *
 * Threads: a context is used by one thread at a time (like a VkCommandPool). Distinct
 * contexts, even on one adopted VkDevice, are independent.
 *
 * Synchronization contract: every call here that touches the GPU is synchronous. It submits
 * to the context's queue and returns after that work has completed (a fence wait), so its
 * results are visible to later submissions of the caller to any queue of the device. The
 * caller must make its own earlier writes to buffers it hands in (container bytes,
 * destination) complete before the call (e.g. vkQueueWaitIdle, or a fence it waited on),
 * and must not use the queue from another thread during the call (Vulkan requires external
 * synchronization of a VkQueue).
 *
 * Errors: calls return a status; with a non-NULL sgfp4_diag they also say what failed in
 * diag->message. Device loss is SGFP4_ERR_VK_DEVICE_LOST (the context must then be
 * destroyed with sgfp4_vk_context_free), allocation failure SGFP4_ERR_VK_OUT_OF_MEMORY.
 * Nothing aborts.
 */
#ifndef SGFP4_VULKAN_H
#define SGFP4_VULKAN_H

#include "sgfp4.h"
#include "sgfp4_config.h" /* SGFP4_HAVE_VULKAN */

#if defined(__has_include)
#if __has_include(<vulkan/vulkan_core.h>)
#include <vulkan/vulkan_core.h>
#endif
#endif
#ifndef VULKAN_CORE_H_
/* No Vulkan headers: the handle types, declared as vulkan_core.h declares them. */
typedef struct VkInstance_T *VkInstance;
typedef struct VkPhysicalDevice_T *VkPhysicalDevice;
typedef struct VkDevice_T *VkDevice;
typedef struct VkQueue_T *VkQueue;
typedef struct VkCommandBuffer_T *VkCommandBuffer;
#if defined(__LP64__) || defined(_WIN64) || defined(__x86_64__) || defined(__aarch64__)
typedef struct VkBuffer_T *VkBuffer;
#else
typedef uint64_t VkBuffer;
#endif
typedef uint64_t VkDeviceSize;
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque backend context: a device, its queue, the decode pipelines. */
typedef struct sgfp4_vk_context sgfp4_vk_context;
/** A container resident on the device (plus the leaf table the shaders read). */
typedef struct sgfp4_vk_tensor sgfp4_vk_tensor;
/** A device-local storage buffer that the library allocated. */
typedef struct sgfp4_vk_buffer sgfp4_vk_buffer;

/** What a Vulkan device reports about the features decode cares about. A result struct
 *  (sgfp4.h, "Result structs"). */
typedef struct sgfp4_vk_device_info {
    size_t struct_size;           /**< set by sgfp4_vk_device_info_init() */
    char name[256];
    uint32_t index;               /**< position in vkEnumeratePhysicalDevices */
    uint32_t vendor_id, device_id;
    uint32_t api_version;         /**< VK_MAKE_API_VERSION-encoded */
    uint32_t driver_version;
    int discrete;                 /**< 1 for a discrete GPU */
    int rte_float32;              /**< shaderRoundingModeRTEFloat32 */
    int denorm_preserve_float16;  /**< shaderDenormPreserveFloat16 */
    int exact_path;               /**< of a context: 0 = RTE float pipeline, 1 = integer */
    uint64_t max_storage_buffer_range;
    uint32_t max_shared_memory;   /**< maxComputeSharedMemorySize */
    uint32_t subgroup_size;
    int rte_float16;              /**< shaderRoundingModeRTEFloat16 */
    int signed_zero_preserve_float32; /**< shaderSignedZeroInfNanPreserveFloat32 */
    int signed_zero_preserve_float16; /**< shaderSignedZeroInfNanPreserveFloat16 */
    int shader_float16;           /**< the shaderFloat16 feature */
    /** Of a context: how f16 outputs are rounded from the f32 weight (all to nearest even,
     *  all the same bits): SGFP4_VK_F16_INTEGER_CODE, SGFP4_VK_F16_FLOAT_ADD or
     *  SGFP4_VK_F16_DEVICE_CONVERSION. */
    int f16_conversion;
    int integer_dot_product;      /**< the shaderIntegerDotProduct feature */
    /** Of a context: how matrix-vector products run (all the same bits, DECISIONS D8):
     *  SGFP4_VK_MATVEC_UNAVAILABLE, SGFP4_VK_MATVEC_SHADER (integer dot products written
     *  out) or SGFP4_VK_MATVEC_DOT_PRODUCT (the device's 4x8-bit dot product). */
    int matvec_path;
} sgfp4_vk_device_info;

/** Zeroes *info and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_vk_device_info_init(sgfp4_vk_device_info *info)
{
    sgfp4_result_init_(info, sizeof *info);
}

/** Values of sgfp4_vk_device_info.matvec_path. */
enum {
    /** No products: the device cannot declare RoundingModeRTE and SignedZeroInfNanPreserve
     *  for 32-bit floats (or an adopted device runs Vulkan below 1.2). The calls return
     *  SGFP4_ERR_UNSUPPORTED. */
    SGFP4_VK_MATVEC_UNAVAILABLE = 0,
    /** Products with the Class A integer dot products as plain integer code. */
    SGFP4_VK_MATVEC_SHADER = 1,
    /** Products with OpSDot (a context's own device with shaderIntegerDotProduct). */
    SGFP4_VK_MATVEC_DOT_PRODUCT = 2
};

/** Values of sgfp4_vk_device_info.f16_conversion. */
enum {
    /** Integer code only (the integer pipeline). */
    SGFP4_VK_F16_INTEGER_CODE = 0,
    /** One f32 add rounded to nearest even (RoundingModeRTE declared for 32-bit floats): an
     *  adopted device, or one without the features below. */
    SGFP4_VK_F16_FLOAT_ADD = 1,
    /** The device's f32 -> f16 conversion, with RoundingModeRTE and SignedZeroInfNanPreserve
     *  declared for 16-bit results: a context's own device with shaderFloat16,
     *  shaderRoundingModeRTEFloat16 and shaderSignedZeroInfNanPreserveFloat16. */
    SGFP4_VK_F16_DEVICE_CONVERSION = 2
};

/** Lists the Vulkan devices of this machine into out[0..capacity) (each element initialised
 *  by sgfp4_vk_device_info_init(); out may be NULL when capacity is 0); *count gets the
 *  total. SGFP4_ERR_ARGUMENT, nothing written, for a NULL count, or an element whose
 *  struct_size this library does not know or differs from out[0]'s; SGFP4_ERR_VK_NO_DEVICE
 *  when there is no loader or no device. */
SGFP4_API sgfp4_status sgfp4_vk_list_devices(sgfp4_vk_device_info *out, size_t capacity,
                                             size_t *count, sgfp4_diag *diag);

/** Options of sgfp4_vk_context_create() and sgfp4_vk_context_import(); NULL means the
 *  defaults. */
typedef struct sgfp4_vk_context_options {
    size_t struct_size; /**< set by sgfp4_vk_context_options_init() */
    /** Device index (as sgfp4_vk_list_devices numbers them), or -1 (the default): the
     *  environment variable SGFP4_VK_DEVICE if set, else the first discrete GPU, else
     *  device 0. Not used by sgfp4_vk_context_import(). */
    int device_index;
    /** Pipeline choices for benchmarks and tests (SGFP4_VK_* of sgfp4_experimental.h);
     *  default 0. */
    unsigned flags;
} sgfp4_vk_context_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_vk_context_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_vk_context_options_init_sized(sgfp4_vk_context_options *options,
                                                           size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_vk_context_options_init(sgfp4_vk_context_options *options)
{
    return sgfp4_vk_context_options_init_sized(options, sizeof *options);
}

/** Creates a context on its own VkInstance and VkDevice. */
SGFP4_API sgfp4_status sgfp4_vk_context_create(sgfp4_vk_context **out,
                                               const sgfp4_vk_context_options *options,
                                               sgfp4_diag *diag);

/** The Vulkan objects of a context: what sgfp4_vk_context_get_handles() reports, and what a
 *  runtime hands to sgfp4_vk_context_import() to share its device. Frozen: the objects a
 *  device is shared by, so it carries no struct_size and never grows. */
typedef struct sgfp4_vk_handles {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
} sgfp4_vk_handles;

/** Creates a context on a runtime's own instance, device and queue. The library destroys
 *  none of them; all must outlive the context. `queue` must belong to `queue_family`, which
 *  must support compute. The instance must have been created for Vulkan 1.1 or later,
 *  through the Vulkan loader this library links (libvulkan.so.1). */
SGFP4_API sgfp4_status sgfp4_vk_context_import(const sgfp4_vk_handles *handles,
                                               sgfp4_vk_context **out,
                                               const sgfp4_vk_context_options *options,
                                               sgfp4_diag *diag);

/** Waits for the context's work, then releases it. Accepts NULL. */
SGFP4_API void sgfp4_vk_context_free(sgfp4_vk_context *ctx);

/** Fills *info (initialised by sgfp4_vk_device_info_init()) for the context's device
 *  (exact_path says which pipeline it uses). SGFP4_ERR_ARGUMENT for NULL pointers or a
 *  struct_size this library does not know (nothing written). */
SGFP4_API sgfp4_status sgfp4_vk_context_get_info(const sgfp4_vk_context *ctx,
                                                 sgfp4_vk_device_info *info);

/** The instance, device, queue and queue family a context uses (for runtimes that record
 *  their own commands around a decode). */
SGFP4_API void sgfp4_vk_context_get_handles(const sgfp4_vk_context *ctx,
                                            sgfp4_vk_handles *handles);

/** Allocates a device-local storage buffer of `size` bytes (usable as a decode destination
 *  or as container storage; transfer source and destination too). */
SGFP4_API sgfp4_status sgfp4_vk_buffer_create(sgfp4_vk_context *ctx, uint64_t size,
                                              sgfp4_vk_buffer **out, sgfp4_diag *diag);
/** The VkBuffer of a library buffer (valid until sgfp4_vk_buffer_free). */
SGFP4_API VkBuffer sgfp4_vk_buffer_handle(const sgfp4_vk_buffer *buffer);
/** The size in bytes a library buffer was created with; 0 for NULL. */
SGFP4_API uint64_t sgfp4_vk_buffer_size(const sgfp4_vk_buffer *buffer);
/** Releases a library buffer. Accepts NULL. The GPU must be done with it. */
SGFP4_API void sgfp4_vk_buffer_free(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer);

/**
 * Makes an opened tensor resident in device-local memory. v1: its container bytes. v2: the
 * products' own layout of its weights, built from the validated view (docs/vulkan.md, "The
 * products"; about 1.2x the container's bytes), which every decode and product reads; the
 * container bytes and a leaf table too only where a decode may read them (a tensor whose
 * layout would exceed maxStorageBufferRange, or a context whose flags ask for the leaf
 * table or the record walk). sgfp4_vk_tensor_device_bytes() says what it holds. The
 * sgfp4_tensor may be closed afterwards. Validation happened in sgfp4_tensor_open(); the
 * shaders trust what it checked.
 */
SGFP4_API sgfp4_status sgfp4_vk_tensor_create(sgfp4_vk_context *ctx, const sgfp4_tensor *tensor,
                                              sgfp4_vk_tensor **out, sgfp4_diag *diag);

/**
 * Like sgfp4_vk_tensor_create() for container bytes that already sit in the caller's
 * `buffer` at `offset` (a multiple of 4; the buffer was created with STORAGE_BUFFER usage).
 * The bytes there must equal the bytes `tensor` was opened on, and stay unchanged while the
 * returned object is used; for v2 the products' layout (and, where a decode may read the
 * container, the leaf table) is uploaded. The buffer must outlive the object.
 */
SGFP4_API sgfp4_status sgfp4_vk_tensor_create_from_buffer(sgfp4_vk_context *ctx,
                                                          const sgfp4_tensor *tensor,
                                                          VkBuffer buffer, VkDeviceSize offset,
                                                          sgfp4_vk_tensor **out,
                                                          sgfp4_diag *diag);

/** Releases a resident tensor (not a caller's buffer). Accepts NULL. */
SGFP4_API void sgfp4_vk_tensor_free(sgfp4_vk_context *ctx, sgfp4_vk_tensor *tensor);

/** Options of the decode calls; NULL means the defaults. The struct is there so that fields
 *  can be appended without changing the calls. */
typedef struct sgfp4_vk_decode_options {
    size_t struct_size; /**< set by sgfp4_vk_decode_options_init() */
    /** No flag is defined yet: 0 (the default); any other value is SGFP4_ERR_ARGUMENT, so
     *  that a flag of a later release is refused here rather than ignored. */
    unsigned flags;
} sgfp4_vk_decode_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_vk_decode_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_vk_decode_options_init_sized(sgfp4_vk_decode_options *options,
                                                          size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_vk_decode_options_init(sgfp4_vk_decode_options *options)
{
    return sgfp4_vk_decode_options_init_sized(options, sizeof *options);
}

/** A prepared quantization, decode or product (opaque): what sgfp4_vk_op_record() records. */
typedef struct sgfp4_vk_op sgfp4_vk_op;

/**
 * Prepares the decode of the whole tensor into the caller's `dst` buffer (STORAGE_BUFFER
 * usage): row r starts at byte dst_offset + r * row_stride * sizeof(dtype); each row holds
 * `cols` elements; bytes between rows are left untouched. row_stride in elements, 0 = cols.
 * dst_offset must be a multiple of the element size. dst_capacity is the size of `dst` in
 * bytes: the 4-byte word holding the last element must end inside it (16-bit outputs bind
 * whole words; a shared word changes only in the decode's own half), else
 * SGFP4_ERR_DST_TOO_SMALL. F16 and BF16
 * are rounded to nearest even from the exact f32 weight. Record it with sgfp4_vk_op_record()
 * (one compute dispatch that reads the tensor and writes the destination: the
 * synchronization contract of the products below), run it with sgfp4_vk_op_run(), free it
 * with sgfp4_vk_op_free(); the tensor and `dst` must outlive it. Errors: SGFP4_ERR_ARGUMENT,
 * SGFP4_ERR_DST_TOO_SMALL, SGFP4_ERR_UNSUPPORTED (an output beyond the device's limits),
 * Vulkan errors.
 */
SGFP4_API sgfp4_status sgfp4_vk_decode_create(sgfp4_vk_context *ctx,
                                              const sgfp4_vk_tensor *tensor, sgfp4_dtype dtype,
                                              VkBuffer dst, VkDeviceSize dst_offset,
                                              uint64_t row_stride, uint64_t dst_capacity,
                                              const sgfp4_vk_decode_options *options,
                                              sgfp4_vk_op **out, sgfp4_diag *diag);

/** Synchronous sgfp4_vk_decode_create() + run + free (the contract at the top of this
 *  file). */
SGFP4_API sgfp4_status sgfp4_vk_decode_to_buffer(sgfp4_vk_context *ctx,
                                                 const sgfp4_vk_tensor *tensor,
                                                 sgfp4_dtype dtype, VkBuffer dst,
                                                 VkDeviceSize dst_offset, uint64_t row_stride,
                                                 uint64_t dst_capacity,
                                                 const sgfp4_vk_decode_options *options,
                                                 sgfp4_diag *diag);

/** Decodes the whole tensor into host memory, laid out as sgfp4_decode() lays it out
 *  (row_stride in elements, 0 = cols; dst_capacity in bytes must cover the last element,
 *  else SGFP4_ERR_DST_TOO_SMALL). */
SGFP4_API sgfp4_status sgfp4_vk_decode_to_host(sgfp4_vk_context *ctx,
                                               const sgfp4_vk_tensor *tensor,
                                               sgfp4_dtype dtype, void *dst,
                                               size_t row_stride, size_t dst_capacity,
                                               sgfp4_diag *diag);

/** Bytes of device memory a resident tensor holds beyond any copy of its container bytes,
 *  built at upload: for v2, the products' layout of the weights (about 1.2x the container)
 *  and, where a decode may read the container, the leaf table; none for v1. 0 for NULL. */
SGFP4_API uint64_t sgfp4_vk_tensor_table_bytes(const sgfp4_vk_tensor *tensor);

/** Bytes of device memory a resident tensor holds in all: its buffers (the copy of the
 *  container bytes where it keeps one, the leaf table, the products' layout), not the
 *  caller's buffer of sgfp4_vk_tensor_create_from_buffer(). A v2 tensor with the layout
 *  holds about 1.2x its container's bytes (no copy of them). 0 for NULL. */
SGFP4_API uint64_t sgfp4_vk_tensor_device_bytes(const sgfp4_vk_tensor *tensor);

/* ---- Matrix-vector products (DECISIONS D8) ------------------------------------------------
 *
 * y = W x on a resident tensor W (O x I) for 1..SGFP4_MATVEC_MAX_BATCH activation vectors in
 * the caller's device buffers, with the float32 bits of the CPU's sgfp4_matvec_q8() (Class A)
 * and sgfp4_matvec_float() (Class B) on every device (docs/matvec.md, docs/vulkan.md):
 *   Class A: sgfp4_vk_quantize() turns x (f32 or f16) into the q8 layout of
 *            sgfp4_matvec_quantize(), byte for byte; sgfp4_vk_matvec_q8() reads it. A q8
 *            buffer written by the CPU works as well.
 *   Class B: sgfp4_vk_matvec_float() reads x (f32 or f16) as it is.
 * Needs a device that declares RoundingModeRTE and SignedZeroInfNanPreserve for 32-bit
 * floats (sgfp4_vk_device_info.matvec_path); elsewhere SGFP4_ERR_UNSUPPORTED.
 *
 * Two ways to run them:
 *   Synchronous: sgfp4_vk_quantize(), sgfp4_vk_matvec_q8(), sgfp4_vk_matvec_float() submit
 *     to the context's queue and return when the GPU is done (the contract at the top of
 *     this file), like decode.
 *   Recorded: sgfp4_vk_quantize_create(), sgfp4_vk_matvec_q8_create() and
 *     sgfp4_vk_matvec_float_create() prepare an operation on given buffers once (a
 *     descriptor set, and for products on wide bands a scratch buffer); then
 *     sgfp4_vk_op_record() records it into the caller's command buffer any number of times,
 *     so that a runtime puts a whole layer (or token) of products into one submission.
 *
 * Synchronization contract of sgfp4_vk_op_record(). The operation is one compute dispatch
 * that reads its input buffer (x or q8) and writes its output buffer (q8 or y) with shader
 * accesses in VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT. The caller places:
 *   before it: a barrier that makes the writes to the input (and, for a tensor made with
 *     sgfp4_vk_tensor_create_from_buffer(), to its container bytes) available and visible
 *     to COMPUTE_SHADER / SHADER_READ, and orders any earlier access to the output range
 *     before COMPUTE_SHADER / SHADER_WRITE (e.g. one VkMemoryBarrier, srcStage = the
 *     producer's stage, srcAccess = its writes, dstStage = COMPUTE_SHADER, dstAccess =
 *     SHADER_READ | SHADER_WRITE);
 *   after it: before anything reads the output, a barrier from COMPUTE_SHADER /
 *     SHADER_WRITE to the consumer's stage and access (a product after a quantizer:
 *     COMPUTE_SHADER / SHADER_WRITE to COMPUTE_SHADER / SHADER_READ);
 *   between two recordings of the same operation: a COMPUTE_SHADER -> COMPUTE_SHADER
 *     barrier with SHADER_WRITE -> SHADER_READ | SHADER_WRITE (the operation's scratch;
 *     the barriers above already give it when the second reads what the first wrote).
 * Distinct operations on distinct output ranges need nothing between them (q, k and v from
 * one x may run concurrently). The command buffer must be recording, outside a render pass,
 * on a queue family with compute; the recording binds a compute pipeline, a descriptor set
 * and push constants, so the caller rebinds its own afterwards. The operation, its tensor
 * and the buffers it was created on must stay alive until every submission that contains it
 * has completed; none of them is changed by recording.
 *
 * Buffers are VkBuffers with STORAGE_BUFFER usage of the context's device; offsets are
 * multiples of 4 bytes (2 for f16 activations); the caller guarantees that the ranges lie
 * inside the buffers.
 */

/** Options of the matrix-vector calls; NULL means the defaults. */
typedef struct sgfp4_vk_matvec_options {
    size_t struct_size; /**< set by sgfp4_vk_matvec_options_init() */
    /** Workgroups per 64-row band (a power of two; 0, the default: the library's choice).
     *  A tuning knob for benchmarks; every value gives the same bits. */
    unsigned slices;
    /** Kernel choices for benchmarks and tests (SGFP4_VK_MATVEC_* of sgfp4_experimental.h);
     *  default 0. Every choice gives the same bits. */
    unsigned flags;
    /** 0 (the default): the D8 products, bit-exact. 1: the fast products of DECISIONS D9
     *  (docs/matvec.md, "Fast products"): the same activations and weights, the block
     *  partials summed in binary32 with fused multiply-adds, within a stated bound of the D8
     *  result, the same bits run to run and for any batch or split on one device. The
     *  quantizer ignores it. Any other value is SGFP4_ERR_ARGUMENT. */
    int fast;
} sgfp4_vk_matvec_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_vk_matvec_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_vk_matvec_options_init_sized(sgfp4_vk_matvec_options *options,
                                                           size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_vk_matvec_options_init(sgfp4_vk_matvec_options *options)
{
    return sgfp4_vk_matvec_options_init_sized(options, sizeof *options);
}

/**
 * Prepares the Class A quantizer: `batch` vectors of `cols` elements of `dtype`
 * (SGFP4_DTYPE_F32 or SGFP4_DTYPE_F16) in buffer x, vector n at element x_stride * n from
 * x_offset (x_stride in elements, 0 = cols), into the q8 layout at q8_offset of buffer q8
 * (sgfp4_matvec_q8_bytes(cols, batch) bytes, all written). A NaN or infinite activation is
 * reported by sgfp4_vk_op_status() after the submission (the q8 bytes are then
 * unspecified). Errors: SGFP4_ERR_ARGUMENT (NULL or bad arguments), SGFP4_ERR_UNSUPPORTED
 * (another dtype; sizes beyond the device's limits), Vulkan errors.
 */
SGFP4_API sgfp4_status sgfp4_vk_quantize_create(sgfp4_vk_context *ctx, VkBuffer x,
                                                VkDeviceSize x_offset, sgfp4_dtype dtype,
                                                uint64_t cols, unsigned batch,
                                                uint64_t x_stride, VkBuffer q8,
                                                VkDeviceSize q8_offset,
                                                const sgfp4_vk_matvec_options *options,
                                                sgfp4_vk_op **out, sgfp4_diag *diag);

/**
 * Prepares the Class A product of all rows of `tensor`: y[n * y_stride + r] (floats from
 * y_offset; y_stride 0 = rows) = row r of W times vector n of the q8 activations at
 * q8_offset of buffer q8 (the layout of sgfp4_matvec_quantize for the tensor's cols and
 * `batch` vectors, 1..SGFP4_MATVEC_MAX_BATCH). Only those floats are written. Errors:
 * SGFP4_ERR_ARGUMENT, SGFP4_ERR_UNSUPPORTED (no matvec path on this device, or sizes beyond
 * its limits), Vulkan errors.
 */
SGFP4_API sgfp4_status sgfp4_vk_matvec_q8_create(sgfp4_vk_context *ctx,
                                                 const sgfp4_vk_tensor *tensor, VkBuffer q8,
                                                 VkDeviceSize q8_offset, unsigned batch,
                                                 VkBuffer y, VkDeviceSize y_offset,
                                                 uint64_t y_stride,
                                                 const sgfp4_vk_matvec_options *options,
                                                 sgfp4_vk_op **out, sgfp4_diag *diag);

/**
 * Prepares the Class B product: as sgfp4_vk_matvec_q8_create() with float activations,
 * vector n at element x_stride * n from x_offset of buffer x (x_stride in elements, 0 =
 * cols) as SGFP4_DTYPE_F32 or SGFP4_DTYPE_F16; |x_j| < 2^-60 reads as +0, NaN and infinity
 * propagate as IEEE arithmetic does.
 */
SGFP4_API sgfp4_status sgfp4_vk_matvec_float_create(sgfp4_vk_context *ctx,
                                                    const sgfp4_vk_tensor *tensor, VkBuffer x,
                                                    VkDeviceSize x_offset, sgfp4_dtype dtype,
                                                    unsigned batch, uint64_t x_stride,
                                                    VkBuffer y, VkDeviceSize y_offset,
                                                    uint64_t y_stride,
                                                    const sgfp4_vk_matvec_options *options,
                                                    sgfp4_vk_op **out, sgfp4_diag *diag);

/** Records the operation into `cmd` (the synchronization contract above). Does nothing for
 *  NULL arguments. */
SGFP4_API void sgfp4_vk_op_record(const sgfp4_vk_op *op, VkCommandBuffer cmd);

/** Runs the operation once on the context's queue and waits for it (the synchronous
 *  contract at the top of this file); then returns sgfp4_vk_op_status(). */
SGFP4_API sgfp4_status sgfp4_vk_op_run(sgfp4_vk_op *op, sgfp4_diag *diag);

/** After the submissions that ran the operation have completed: SGFP4_OK, or for a quantizer
 *  that met a NaN or infinite activation SGFP4_ERR_ARGUMENT with diag naming the first
 *  (vector, column). Resets the report for the next submission. Not concurrent with a
 *  pending submission of the operation. */
SGFP4_API sgfp4_status sgfp4_vk_op_status(sgfp4_vk_op *op, sgfp4_diag *diag);

/** Bytes of device memory the operation holds (its scratch and status buffers). */
SGFP4_API uint64_t sgfp4_vk_op_bytes(const sgfp4_vk_op *op);

/** Releases an operation. Accepts NULL. The GPU must be done with it. */
SGFP4_API void sgfp4_vk_op_free(sgfp4_vk_op *op);

/** Synchronous sgfp4_vk_quantize_create() + sgfp4_vk_op_run() + sgfp4_vk_op_free(). */
SGFP4_API sgfp4_status sgfp4_vk_quantize(sgfp4_vk_context *ctx, VkBuffer x,
                                         VkDeviceSize x_offset, sgfp4_dtype dtype,
                                         uint64_t cols, unsigned batch, uint64_t x_stride,
                                         VkBuffer q8, VkDeviceSize q8_offset,
                                         const sgfp4_vk_matvec_options *options,
                                         sgfp4_diag *diag);

/** Synchronous sgfp4_vk_matvec_q8_create() + run + free. */
SGFP4_API sgfp4_status sgfp4_vk_matvec_q8(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                          VkBuffer q8, VkDeviceSize q8_offset, unsigned batch,
                                          VkBuffer y, VkDeviceSize y_offset, uint64_t y_stride,
                                          const sgfp4_vk_matvec_options *options,
                                          sgfp4_diag *diag);

/** Synchronous sgfp4_vk_matvec_float_create() + run + free. */
SGFP4_API sgfp4_status sgfp4_vk_matvec_float(sgfp4_vk_context *ctx,
                                             const sgfp4_vk_tensor *tensor, VkBuffer x,
                                             VkDeviceSize x_offset, sgfp4_dtype dtype,
                                             unsigned batch, uint64_t x_stride, VkBuffer y,
                                             VkDeviceSize y_offset, uint64_t y_stride,
                                             const sgfp4_vk_matvec_options *options,
                                             sgfp4_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_VULKAN_H */
