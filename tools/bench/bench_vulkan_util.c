/* Helpers of the GPU benchmarks (bench_vulkan.h).
 * SPDX-License-Identifier: MIT */
#include "bench_vulkan.h"
#include "tool_clock.h"

#include <stdlib.h>
#include <string.h>

#include "sgfp4_config.h"

#if SGFP4_HAVE_VULKAN
#include <vulkan/vulkan.h>

/* The best copy rate seen in this process, per power-of-two copy size. */
static double best_copy_gbps[64];

static int size_class(uint64_t bytes)
{
    int c = 0;
    while (c < 63 && (bytes >> (c + 1)) != 0)
        c++;
    return c;
}

bool bv_settle(bv_burst_fn burst, void *arg, uint64_t copy_bytes, double limit_seconds,
               bv_settled *out)
{
    /* The driver raises a lowered clock in steps of about 100 ms once the GPU is busy, so a
     * rate that stays flat for a few bursts proves nothing; only the best rate does. The
     * first settle for a copy size runs a second of bursts to find it. */
    const int c = size_class(copy_bytes);
    const double t0 = tool_now();
    const double minimum = best_copy_gbps[c] > 0 ? 0 : 1.0;
    memset(out, 0, sizeof *out);
    for (;;) {
        double gbps;
        if (!burst(arg, &gbps))
            return false;
        out->bursts++;
        out->copy_gbps = gbps;
        if (gbps > best_copy_gbps[c])
            best_copy_gbps[c] = gbps;
        out->seconds = tool_now() - t0;
        if (out->bursts >= 2 && out->seconds >= minimum &&
            gbps >= BV_SETTLED_SHARE * best_copy_gbps[c]) {
            out->settled = true;
            return true;
        }
        if (out->seconds > limit_seconds)
            return true;
    }
}

double bv_best_copy_gbps(uint64_t copy_bytes)
{
    return best_copy_gbps[size_class(copy_bytes)];
}

json_t *bv_settled_json(const bv_settled *s)
{
    return json_pack("{s:i,s:f,s:f,s:b}", "bursts", s->bursts, "seconds", s->seconds,
                     "copy_GBps", s->copy_gbps, "settled", s->settled);
}

typedef struct copy_job {
    vkit *kit;
    vkit_dispatch d;
    double seconds;
} copy_job;

static bool copy_step(void *arg)
{
    copy_job *j = arg;
    return vkit_time(j->kit, (vkit_step){NULL, &j->d}, &j->seconds, NULL) == SGFP4_OK;
}

/* The best of `repeat` timed runs of the copy `d` (after a warm-up of `warm_seconds`). */
static bool copy_best(vkit *kit, vkit_dispatch d, int repeat, double warm_seconds, double *best)
{
    copy_job j = {kit, d, 0};
    bool ok = copy_step(&j) && bench_warm_up(copy_step, &j, warm_seconds); /* one at least */
    *best = 1e30;
    for (int i = 0; ok && i < repeat; i++) {
        ok = copy_step(&j);
        if (j.seconds < *best)
            *best = j.seconds;
    }
    return ok;
}

bool bv_copy_ceiling(vkit *kit, uint64_t bytes, int repeat, double warm_seconds,
                     double *shader_gbps, double *dma_gbps)
{
    sgfp4_vk_context *ctx = vkit_context(kit);
    bytes = (bytes + 15) & ~(uint64_t)15;
    sgfp4_vk_buffer *a = NULL, *b = NULL;
    vkit_dispatch shader = {0};
    double best = 0, dma = 0;
    bool ok = sgfp4_vk_buffer_create(ctx, bytes, &a, NULL) == SGFP4_OK &&
              sgfp4_vk_buffer_create(ctx, bytes, &b, NULL) == SGFP4_OK &&
              vkit_copy_prepare(kit, sgfp4_vk_buffer_handle(a), sgfp4_vk_buffer_handle(b), bytes,
                                &shader, NULL) == SGFP4_OK &&
              copy_best(kit, shader, repeat, warm_seconds, &best) &&
              copy_best(kit, vkit_dma(sgfp4_vk_buffer_handle(a), sgfp4_vk_buffer_handle(b), bytes),
                        repeat, 0, &dma);
    if (ok) {
        *shader_gbps = 2.0 * (double)bytes / best * 1e-9;
        *dma_gbps = 2.0 * (double)bytes / dma * 1e-9;
    }
    vkit_dispatch_free(kit, &shader);
    sgfp4_vk_buffer_free(ctx, a);
    sgfp4_vk_buffer_free(ctx, b);
    return ok;
}

bool bv_decode_burst(vkit *kit, const sgfp4_vk_tensor *vt, sgfp4_dtype dtype,
                     sgfp4_vk_buffer *dst, sgfp4_vk_buffer *copy_a, sgfp4_vk_buffer *copy_b,
                     uint64_t copy_bytes, unsigned rounds, double *decode_seconds,
                     double *copy_seconds)
{
    sgfp4_vk_op *op = NULL;
    vkit_dispatch copy = {0};
    bool ok = sgfp4_vk_decode_create(vkit_context(kit), vt, dtype, sgfp4_vk_buffer_handle(dst), 0,
                                     0, sgfp4_vk_buffer_size(dst), NULL, &op, NULL) == SGFP4_OK &&
              (copy_bytes == 0 ||
               vkit_copy_prepare(kit, sgfp4_vk_buffer_handle(copy_a),
                                 sgfp4_vk_buffer_handle(copy_b), copy_bytes, &copy,
                                 NULL) == SGFP4_OK);
    const vkit_step step = {op, NULL}, copy_step = {NULL, &copy};
    ok = ok && vkit_run(kit, &step, 1, copy_bytes ? &copy_step : NULL, rounds, 0, decode_seconds,
                        copy_seconds, NULL) == SGFP4_OK;
    vkit_dispatch_free(kit, &copy);
    sgfp4_vk_op_free(op);
    return ok;
}

bool bv_decode_sync(vkit *kit, const sgfp4_vk_tensor *vt, sgfp4_dtype dtype,
                    sgfp4_vk_buffer *dst, double *gpu_seconds, double *wall_seconds)
{
    const double t0 = tool_now();
    sgfp4_vk_op *op = NULL;
    const bool ok = sgfp4_vk_decode_create(vkit_context(kit), vt, dtype,
                                           sgfp4_vk_buffer_handle(dst), 0, 0,
                                           sgfp4_vk_buffer_size(dst), NULL, &op, NULL) ==
                        SGFP4_OK &&
                    vkit_time(kit, (vkit_step){op, NULL}, gpu_seconds, NULL) == SGFP4_OK;
    sgfp4_vk_op_free(op);
    *wall_seconds = tool_now() - t0;
    return ok;
}

json_t *bv_device_json(sgfp4_vk_context *ctx)
{
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    sgfp4_vk_context_get_info(ctx, &info);
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(ctx, &h);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(h.physical_device, &mp);
    json_t *heaps = json_array(), *types = json_array();
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        json_array_append_new(heaps, json_pack("{s:I,s:i}", "size",
                                               (json_int_t)mp.memoryHeaps[i].size, "flags",
                                               (int)mp.memoryHeaps[i].flags));
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        json_array_append_new(types, json_pack("{s:i,s:i}", "heap",
                                               (int)mp.memoryTypes[i].heapIndex, "flags",
                                               (int)mp.memoryTypes[i].propertyFlags));
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:o,s:o}", "name", info.name,
                     "api_version", (int)info.api_version, "driver_version",
                     (int)info.driver_version, "rte_float32", info.rte_float32, "rte_float16",
                     info.rte_float16, "signed_zero_preserve_float32",
                     info.signed_zero_preserve_float32, "signed_zero_preserve_float16",
                     info.signed_zero_preserve_float16, "denorm_preserve_float16",
                     info.denorm_preserve_float16, "shader_float16", info.shader_float16,
                     "integer_pipeline", info.exact_path, "f16_conversion",
                     info.f16_conversion, "memory_heaps", heaps, "memory_types", types);
}

#endif
