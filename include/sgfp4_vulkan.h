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

/** What a Vulkan device reports about the features decode cares about. */
typedef struct sgfp4_vk_device_info {
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
} sgfp4_vk_device_info;

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

/** Lists the Vulkan devices of this machine into out[0..capacity); *count gets the total.
 *  SGFP4_ERR_VK_NO_DEVICE when there is no loader or no device. */
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
 *  runtime hands to sgfp4_vk_context_import() to share its device. */
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

/** Fills *info for the context's device (exact_path says which pipeline it uses). */
SGFP4_API void sgfp4_vk_context_get_info(const sgfp4_vk_context *ctx,
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
/** Releases a library buffer. Accepts NULL. The GPU must be done with it. */
SGFP4_API void sgfp4_vk_buffer_free(sgfp4_vk_context *ctx, sgfp4_vk_buffer *buffer);

/**
 * Makes an opened tensor resident: copies its container bytes into a device-local buffer
 * and, for v2, the leaf table built from the validated view. The sgfp4_tensor may be closed
 * afterwards. Validation happened in sgfp4_tensor_open(); the shaders trust what it checked.
 */
SGFP4_API sgfp4_status sgfp4_vk_tensor_create(sgfp4_vk_context *ctx, const sgfp4_tensor *tensor,
                                              sgfp4_vk_tensor **out, sgfp4_diag *diag);

/**
 * Like sgfp4_vk_tensor_create() for container bytes that already sit in the caller's
 * `buffer` at `offset` (a multiple of 4; the buffer was created with STORAGE_BUFFER usage).
 * The bytes there must equal the bytes `tensor` was opened on, and stay unchanged while the
 * returned object is used; only the leaf table is uploaded. The buffer must outlive the
 * object.
 */
SGFP4_API sgfp4_status sgfp4_vk_tensor_create_from_buffer(sgfp4_vk_context *ctx,
                                                          const sgfp4_tensor *tensor,
                                                          VkBuffer buffer, VkDeviceSize offset,
                                                          sgfp4_vk_tensor **out,
                                                          sgfp4_diag *diag);

/** Releases a resident tensor (not a caller's buffer). Accepts NULL. */
SGFP4_API void sgfp4_vk_tensor_free(sgfp4_vk_context *ctx, sgfp4_vk_tensor *tensor);

/**
 * Decodes the whole tensor into the caller's `dst` buffer (STORAGE_BUFFER usage): row r
 * starts at byte dst_offset + r * row_stride * sizeof(dtype); each row holds `cols`
 * elements; bytes between rows are left untouched. row_stride in elements, 0 = cols.
 * dst_offset must be a multiple of the element size; the caller guarantees the buffer is
 * large enough. F16 and BF16 are rounded to nearest even from the exact f32 weight.
 */
SGFP4_API sgfp4_status sgfp4_vk_decode_to_buffer(sgfp4_vk_context *ctx,
                                                 const sgfp4_vk_tensor *tensor,
                                                 sgfp4_dtype dtype, VkBuffer dst,
                                                 VkDeviceSize dst_offset, uint64_t row_stride,
                                                 sgfp4_diag *diag);

/** Decodes the whole tensor into host memory, laid out as sgfp4_decode() lays it out
 *  (row_stride in elements, 0 = cols; dst_capacity in bytes must cover the last element,
 *  else SGFP4_ERR_DST_TOO_SMALL). */
SGFP4_API sgfp4_status sgfp4_vk_decode_to_host(sgfp4_vk_context *ctx,
                                               const sgfp4_vk_tensor *tensor,
                                               sgfp4_dtype dtype, void *dst,
                                               size_t row_stride, size_t dst_capacity,
                                               sgfp4_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_VULKAN_H */
