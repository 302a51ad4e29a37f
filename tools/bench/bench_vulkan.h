/* Helpers shared by the GPU benchmarks (`sgfp4 bench --backend vulkan`, bench_vulkan_*.c) on
 * the benchmark kit (vk_kit.h) and the timing module (timing.h): the device-copy ceiling,
 * timed decodes, bringing the GPU to its working clock, the device as JSON.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_BENCH_VULKAN_H
#define SGFP4_BENCH_VULKAN_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sgfp4_config.h"
#include "sgfp4_experimental.h"
#include "timing.h"
#if SGFP4_HAVE_VULKAN
#include "vk_kit.h"
#else
typedef struct vkit vkit;
#endif

/* The copy ceiling for `bytes` copied (2 * bytes of traffic): the kit's compute-shader copy
 * and vkCmdCopyBuffer between two fresh device buffers, `repeat` timed runs after
 * `warm_seconds` of shader copies; best GB/s of each (read + written). */
bool bv_copy_ceiling(vkit *kit, uint64_t bytes, int repeat, double warm_seconds,
                     double *shader_gbps, double *dma_gbps);

/* The device, its exactness properties, the context's pipeline choices and its memory heaps
 * and types, as JSON. */
json_t *bv_device_json(sgfp4_vk_context *ctx);
/* `rounds` rounds in one submission of a decode of vt as dtype into dst (packed rows) and,
 * where copy_bytes is not 0, a copy of copy_bytes from copy_a to copy_b: their GPU seconds
 * (vkit_run, a burst). */
bool bv_decode_burst(vkit *kit, const sgfp4_vk_tensor *vt, sgfp4_dtype dtype,
                     sgfp4_vk_buffer *dst, sgfp4_vk_buffer *copy_a, sgfp4_vk_buffer *copy_b,
                     uint64_t copy_bytes, unsigned rounds, double *decode_seconds,
                     double *copy_seconds);
/* One synchronous decode of vt as dtype into dst (packed rows), prepared, run and freed as
 * sgfp4_vk_decode_to_buffer does: its GPU seconds (timestamps) and the call's wall clock. */
bool bv_decode_sync(vkit *kit, const sgfp4_vk_tensor *vt, sgfp4_dtype dtype,
                    sgfp4_vk_buffer *dst, double *gpu_seconds, double *wall_seconds);


/* Bringing the GPU to its working clock before a measurement: `burst` runs one burst of
 * the operation with a copy of copy_bytes interleaved (vkit_run) and reports
 * the copy's median GB/s. Bursts are repeated until that rate is within 3% of the best this
 * process has seen for copies of that size (the first time: after a second of bursts), or
 * `limit_seconds` pass (then settled is false, and the result says so). */
typedef bool (*bv_burst_fn)(void *arg, double *copy_gbps);
typedef struct bv_settled {
    int bursts;        /* bursts run */
    double seconds;    /* time they took */
    double copy_gbps;  /* the last burst's copy rate */
    bool settled;      /* false: the limit was reached */
} bv_settled;
bool bv_settle(bv_burst_fn burst, void *arg, uint64_t copy_bytes, double limit_seconds,
               bv_settled *out);
json_t *bv_settled_json(const bv_settled *s);
/* A burst is at the settled clock when its copy runs at BV_SETTLED_SHARE of the best copy
 * rate this process has seen for that copy size (bv_best_copy_gbps; 0 before any). */
#define BV_SETTLED_SHARE 0.97
double bv_best_copy_gbps(uint64_t copy_bytes);

#endif
