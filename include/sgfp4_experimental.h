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
 *  built on the CPU (no table upload; slower: docs/benchmarks.md). */
#define SGFP4_VK_V2_WALK (1u << 1)
/** v2: read the CPU-built leaf table (the default; wins if both flags are set). */
#define SGFP4_VK_V2_TABLE (1u << 2)

/* ---- Vulkan: timing and the bandwidth reference ---------------------------------------------- */

/** Times of the last GPU call of a context (decode or copy), for benchmarks (0 where
 *  unknown). */
typedef struct sgfp4_vk_timing {
    double gpu_seconds;    /**< the decode (or copy) dispatch, from timestamp queries */
    double submit_seconds; /**< wall clock from recording to the fence signalling */
    double copy_seconds;   /**< decode_to_host: the device-to-host copy, from timestamps */
} sgfp4_vk_timing;

/** Fills *timing with the times of the context's last decode or copy (all 0 before any). */
SGFP4_API void sgfp4_vk_context_last_timing(const sgfp4_vk_context *ctx, sgfp4_vk_timing *timing);

/**
 * Copies `size` bytes from src at src_offset to dst at dst_offset with a compute shader
 * (16-byte vectors). Offsets and size must be multiples of 16; the ranges must not overlap.
 * This is the bandwidth reference of the benchmark: the same kind of work as a decode
 * (storage-buffer loads and stores from a compute shader), with no arithmetic.
 */
SGFP4_API sgfp4_status sgfp4_vk_copy_buffer(sgfp4_vk_context *ctx, VkBuffer src,
                                            VkDeviceSize src_offset, VkBuffer dst,
                                            VkDeviceSize dst_offset, uint64_t size,
                                            sgfp4_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_EXPERIMENTAL_H */
