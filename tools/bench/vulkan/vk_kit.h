/* The GPU benchmark kit: what `sgfp4 bench --backend vulkan` and the Vulkan tests time and
 * compare with, built on the library's public Vulkan API only (the context's handles and
 * recordable operations). It owns a command buffer, a fence, timestamp queries and the
 * reference kernels (a compute-shader copy and a plain read); it times library
 * operations and its own dispatches in bursts or streams within one submission, so that the
 * GPU stays busy and an operation and its copy ceiling see the same clock
 * (docs/benchmarks.md). Not thread-safe: one kit per context, used by one thread.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_VK_KIT_H
#define SGFP4_VK_KIT_H

#include <stdint.h>

#include "sgfp4_vulkan.h"

typedef struct vkit vkit;

/* A prepared dispatch of one of the kit's kernels (free it with vkit_dispatch_free), or
 * where pipeline is VK_NULL_HANDLE a transfer copy of `bytes` from src to dst. */
typedef struct vkit_dispatch {
    VkPipeline pipeline;
    VkDescriptorSet set;
    uint32_t push[8], push_bytes;
    uint32_t groups_x, groups_y;
    VkBuffer src, dst;
    uint64_t bytes;
} vkit_dispatch;

/* What one timed step records: a library operation, else the kit's dispatch. */
typedef struct vkit_step {
    const sgfp4_vk_op *op;
    const vkit_dispatch *dispatch;
} vkit_step;

/* The most steps of one run, and of dispatches (steps and copies) a submission times. */
#define VKIT_MAX_STEPS 64
#define VKIT_MAX_TIMED 2048
/* The word that makes a plain read write its sink (vkit_read_prepare): by chance only in
 * real data; the tests place it to see that every word was read. */
#define VKIT_READ_UNEXPECTED 0x9E3779B9u

sgfp4_status vkit_open(sgfp4_vk_context *ctx, vkit **out, sgfp4_diag *diag);
void vkit_close(vkit *kit);
sgfp4_vk_context *vkit_context(const vkit *kit);

/* Runs `rounds` rounds in one submission, each group of dispatches after a full barrier and
 * between two timestamps. Burst (stream 0): round r runs steps[r % n] alone, for operations
 * that each read all their bytes afresh. Stream (stream 1): round r runs the n steps back to
 * back with no barrier between them (they must write distinct outputs), as a runtime records
 * q, k, v; op_seconds[r] is the round's time divided by n. Then, if `copy` is not NULL, the
 * copy as a group of its own: copy_seconds[r]. n is 1..VKIT_MAX_STEPS, and the submission
 * times at most VKIT_MAX_TIMED dispatches. */
sgfp4_status vkit_run(vkit *kit, const vkit_step *steps, unsigned n, const vkit_step *copy,
                      unsigned rounds, int stream, double *op_seconds, double *copy_seconds,
                      sgfp4_diag *diag);
/* One step alone, synchronously: its GPU seconds. */
sgfp4_status vkit_time(vkit *kit, vkit_step step, double *seconds, sgfp4_diag *diag);

/* A copy of `bytes` (a multiple of 16) from src to dst, both at offset 0, in 16-byte vectors:
 * the bandwidth reference, the same kind of work as a decode with no arithmetic. */
sgfp4_status vkit_copy_prepare(vkit *kit, VkBuffer src, VkBuffer dst, uint64_t bytes,
                               vkit_dispatch *out, sgfp4_diag *diag);
/* The same copy by vkCmdCopyBuffer (the copy engine's rate; nothing to free). */
vkit_dispatch vkit_dma(VkBuffer src, VkBuffer dst, uint64_t bytes);
/* A dispatch that only reads `bytes` of `buffer` at `offset` (a multiple of 16; the range
 * rounded up to whole words, as the products bind theirs): 16-byte loads, eight in flight
 * per invocation, combined into a word written to the kit's sink only where it equals
 * VKIT_READ_UNEXPECTED, so that the loads stay and the writes are nil. The ceiling of a kernel
 * that reads the bytes of a product (sgfp4_vk_tensor_product_range). */
sgfp4_status vkit_read_prepare(vkit *kit, VkBuffer buffer, VkDeviceSize offset, uint64_t bytes,
                               vkit_dispatch *out, sgfp4_diag *diag);
/* The sink of the plain reads (16 bytes, device-local). */
VkBuffer vkit_read_sink(const vkit *kit);
void vkit_dispatch_free(vkit *kit, vkit_dispatch *d);

#endif
