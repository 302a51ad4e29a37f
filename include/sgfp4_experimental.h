/*
 * libsgfp4 — the experimental tier: hooks for benchmarks and tests.
 *
 * SPDX-License-Identifier: MIT
 *
 * What is declared here is exported by the library like the stable API, but it may change or
 * go away in any release, including patch releases: it describes how this build decodes
 * (its kernel sets, its cache model, its GPU pipelines) rather than what a caller needs to
 * load weights. docs/api.md ("Stability tiers") says why each item is here. Include it only
 * from benchmarks, tests and tools that are rebuilt with the library.
 */
#ifndef SGFP4_EXPERIMENTAL_H
#define SGFP4_EXPERIMENTAL_H

#include "sgfp4.h"
#include "sgfp4_vulkan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPU decode: forced kernel sets ------------------------------------------------------ */

/* Values of sgfp4_decode_options.backend that force one kernel set (to compare the sets, or
 * to keep one off a given CPU). A set this build or this CPU cannot run makes the decode
 * calls return SGFP4_ERR_UNAVAILABLE. Every set gives the bits of the scalar decoder. */
#define SGFP4_BACKEND_GENERIC SGFP4_BACKEND_EXPERIMENTAL_3 /**< portable C (every machine) */
#define SGFP4_BACKEND_AVX2 SGFP4_BACKEND_EXPERIMENTAL_4    /**< x86-64 AVX2 + FMA + F16C */
#define SGFP4_BACKEND_AVX512 SGFP4_BACKEND_EXPERIMENTAL_5  /**< x86-64 AVX-512 F/BW/DQ/VL */
#define SGFP4_BACKEND_NEON SGFP4_BACKEND_EXPERIMENTAL_6    /**< AArch64 Advanced SIMD */

/* ---- CPU decode: the cache model ---------------------------------------------------------- */

/** The output size in bytes from which SGFP4_STORE_AUTO streams when decoding on `threads`
 *  threads (0 counts as 1): twice the L2 cache of the cores writing it (docs/decode.md has
 *  the measurements). */
SGFP4_API uint64_t sgfp4_decode_stream_bytes(unsigned threads);

/** The last-level cache size in bytes (sysfs, else sysconf); 0 if the system does not say.
 *  `sgfp4 bench` sizes its output buffers from it. */
SGFP4_API uint64_t sgfp4_llc_bytes(void);

/* ---- Vulkan: pipeline choices ------------------------------------------------------------- */

/* Flags of sgfp4_vk_context_options.flags. */
/** Use the integer-exact pipeline even where RoundingModeRTE can be declared (to test the
 *  pipeline that devices without RTE run). */
#define SGFP4_VK_FORCE_INTEGER_PATH (1u << 0)
/** v2: let each workgroup walk its record's split map instead of reading the leaf table
 *  built on the CPU (no table upload; slower: docs/benchmarks.md); 16-bit outputs too. */
#define SGFP4_VK_V2_WALK (1u << 1)
/** v2: read the CPU-built leaf table for every output type (the default for f32 outputs;
 *  wins over the other two v2 flags). */
#define SGFP4_VK_V2_TABLE (1u << 2)
/** f16 outputs by the f32 add (SGFP4_VK_F16_FLOAT_ADD) even where the device's conversion
 *  could be used (to test the path of adopted devices). */
#define SGFP4_VK_F16_NO_DEVICE_CONVERSION (1u << 3)
/** With the device's f16 conversion: check every chunk for f16-subnormal results even where
 *  the device preserves f16 denormals (to test the path of devices that do not). */
#define SGFP4_VK_F16_GUARD (1u << 4)
/** Matrix-vector products with the integer dot products written out even where the device's
 *  own (OpSDot) could be used (to test the path of adopted devices). */
#define SGFP4_VK_NO_INTEGER_DOT (1u << 5)
/** v2: decode from the products' layout of the tensor (built at upload for the products:
 *  four-bit codes in v1's row order, S and Bias as binary32) instead of the leaf table and
 *  the records, where the tensor has one, for every output type; the same bits. Without a
 *  v2 flag, every output already does (faster on the H200: docs/benchmarks.md).
 *  SGFP4_VK_V2_TABLE wins over it, it over SGFP4_VK_V2_WALK. */
#define SGFP4_VK_V2_LAYOUT (1u << 6)

/** Whether a decode of `tensor` as `dtype` on `ctx` reads the products' layout (1) or the
 *  container and leaf table (0), by the context's flags above; 0 for v1, NULL or a tensor
 *  without the layout. For benchmarks that count the bytes a decode reads. */
SGFP4_API int sgfp4_vk_decode_reads_layout(const sgfp4_vk_context *ctx,
                                           const sgfp4_vk_tensor *tensor, sgfp4_dtype dtype);

/** Where the bytes that a matrix-vector product of `tensor` reads lie on the device: for v1
 *  its container bytes (the library's copy, or the caller's buffer of
 *  sgfp4_vk_tensor_create_from_buffer), for v2 its products' layout (about 1.2x the
 *  container for encoder output). SGFP4_ERR_UNSUPPORTED for a v2 tensor without the layout
 *  (its products refuse it too), SGFP4_ERR_ARGUMENT for a NULL argument. For benchmarks
 *  that read the same bytes (the plain read of `sgfp4 bench --backend vulkan`). */
SGFP4_API sgfp4_status sgfp4_vk_tensor_product_range(const sgfp4_vk_tensor *tensor,
                                                     VkBuffer *buffer, VkDeviceSize *offset,
                                                     uint64_t *bytes, sgfp4_diag *diag);

/* Flags of sgfp4_vk_matvec_options.flags: how a v1 product's workgroup is shaped (rows of
 * the 64-row band it takes; v2 products always take 64), and not loading the next blocks'
 * data a step ahead. */
#define SGFP4_VK_MATVEC_ROWS_16 (1u << 0)
#define SGFP4_VK_MATVEC_ROWS_32 (1u << 1)
#define SGFP4_VK_MATVEC_ROWS_64 (1u << 2)
#define SGFP4_VK_MATVEC_NO_PREFETCH (1u << 3)
/** v2: load the next step's S and Bias pairs a step ahead, with its code words (its cell map
 *  two steps ahead, its description three), in Class B too (by default Class A only; measured
 *  slower for Class B at batch 4: docs/vulkan.md). No effect with SGFP4_VK_MATVEC_NO_PREFETCH. */
#define SGFP4_VK_MATVEC_LEAVES_AHEAD (1u << 4)
/** v2: load a step's S and Bias pairs when the step computes, in Class A too (the Class B
 *  default); wins over SGFP4_VK_MATVEC_LEAVES_AHEAD. */
#define SGFP4_VK_MATVEC_LEAVES_AT_USE (1u << 5)

/* ---- Vulkan: host transfers ------------------------------------------------------------------ */

/** Copies `size` bytes from host memory into `buffer` at `offset` (a buffer with
 *  TRANSFER_DST usage, as the library's are) through a staging buffer; synchronous. */
SGFP4_API sgfp4_status sgfp4_vk_buffer_write(sgfp4_vk_context *ctx, VkBuffer buffer,
                                             VkDeviceSize offset, const void *data,
                                             size_t size, sgfp4_diag *diag);
/** The reverse copy: `size` bytes of `buffer` at `offset` into `data`. */
SGFP4_API sgfp4_status sgfp4_vk_buffer_read(sgfp4_vk_context *ctx, VkBuffer buffer,
                                            VkDeviceSize offset, void *data, size_t size,
                                            sgfp4_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_EXPERIMENTAL_H */
