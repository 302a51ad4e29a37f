/* Helpers of the GPU benchmarks (bench_vulkan.h).
 * SPDX-License-Identifier: MIT */
#include "bench_vulkan.h"
#include "tool_clock.h"

#include <stdlib.h>
#include <string.h>

#include "sgfp4_config.h"

#if SGFP4_HAVE_VULKAN
#include <vulkan/vulkan.h>

static int compare_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bv_stats_of(const double *samples, int n, bv_stats *out)
{
    double *v = malloc(sizeof *v * (size_t)n);
    memset(out, 0, sizeof *out);
    if (!v || n < 1) {
        free(v);
        return;
    }
    memcpy(v, samples, sizeof *v * (size_t)n);
    qsort(v, (size_t)n, sizeof *v, compare_double);
    out->n = n;
    out->best = v[0];
    out->median = v[n / 2];
    out->max = v[n - 1];
    for (int i = 0; i < n; i++)
        out->slow += v[i] > BV_SLOW_FACTOR * v[0];
    free(v);
}

json_t *bv_stats_json(const bv_stats *s)
{
    return json_pack("{s:i,s:f,s:f,s:f,s:i}", "n", s->n, "best_us", s->best * 1e6, "median_us",
                     s->median * 1e6, "max_us", s->max * 1e6, "slow", s->slow);
}

bool bv_warm_up(bool (*step)(void *), void *arg, double seconds)
{
    const double end = tool_now() + seconds;
    while (tool_now() < end)
        if (!step(arg))
            return false;
    return true;
}

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
    sgfp4_vk_context *ctx;
    sgfp4_vk_buffer *a, *b;
    uint64_t bytes;
    double seconds;
} copy_job;

static bool shader_copy_step(void *arg)
{
    copy_job *j = arg;
    sgfp4_vk_timing t;
    if (sgfp4_vk_copy_buffer(j->ctx, sgfp4_vk_buffer_handle(j->a), 0,
                             sgfp4_vk_buffer_handle(j->b), 0, j->bytes, NULL) != SGFP4_OK)
        return false;
    sgfp4_vk_context_last_timing(j->ctx, &t);
    j->seconds = t.gpu_seconds;
    return true;
}

/* vkCmdCopyBuffer a -> b between two timestamps, `repeat` times: the best seconds. */
static bool dma_copy_best(sgfp4_vk_context *ctx, VkBuffer a, VkBuffer b, uint64_t bytes,
                          int repeat, double *best)
{
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(ctx, &h);
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(h.physical_device, &p);
    VkCommandPool pool = VK_NULL_HANDLE;
    VkQueryPool queries = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkCommandBuffer cmd;
    bool ok = false;
    const VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                         .queueFamilyIndex = h.queue_family};
    const VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                       .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                       .queryCount = 2};
    const VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (vkCreateCommandPool(h.device, &pci, NULL, &pool) != VK_SUCCESS ||
        vkCreateQueryPool(h.device, &qci, NULL, &queries) != VK_SUCCESS ||
        vkCreateFence(h.device, &fci, NULL, &fence) != VK_SUCCESS)
        goto done;
    const VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                             .commandPool = pool,
                                             .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                             .commandBufferCount = 1};
    if (vkAllocateCommandBuffers(h.device, &cai, &cmd) != VK_SUCCESS)
        goto done;
    *best = 1e30;
    for (int i = 0; i < repeat + 1; i++) { /* one warm-up run */
        const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkResetCommandBuffer(cmd, 0);
        vkBeginCommandBuffer(cmd, &bi);
        vkCmdResetQueryPool(cmd, queries, 0, 2);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0);
        const VkBufferCopy c = {0, 0, bytes};
        vkCmdCopyBuffer(cmd, a, b, 1, &c);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1);
        vkEndCommandBuffer(cmd);
        const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                 .commandBufferCount = 1,
                                 .pCommandBuffers = &cmd};
        vkResetFences(h.device, 1, &fence);
        uint64_t t[2];
        if (vkQueueSubmit(h.queue, 1, &si, fence) != VK_SUCCESS ||
            vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS ||
            vkGetQueryPoolResults(h.device, queries, 0, 2, sizeof t, t, sizeof t[0],
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) !=
                VK_SUCCESS)
            goto done;
        const double s = (double)(t[1] - t[0]) * p.limits.timestampPeriod * 1e-9;
        if (i > 0 && s < *best)
            *best = s;
    }
    ok = true;
done:
    if (fence)
        vkDestroyFence(h.device, fence, NULL);
    if (queries)
        vkDestroyQueryPool(h.device, queries, NULL);
    if (pool)
        vkDestroyCommandPool(h.device, pool, NULL);
    return ok;
}

bool bv_copy_ceiling(sgfp4_vk_context *ctx, uint64_t bytes, int repeat, double warm_seconds,
                     double *shader_gbps, double *dma_gbps)
{
    copy_job j = {ctx, NULL, NULL, (bytes + 15) & ~(uint64_t)15, 0};
    double best = 1e30, dma = 0;
    bool ok = sgfp4_vk_buffer_create(ctx, j.bytes, &j.a, NULL) == SGFP4_OK &&
              sgfp4_vk_buffer_create(ctx, j.bytes, &j.b, NULL) == SGFP4_OK &&
              bv_warm_up(shader_copy_step, &j, warm_seconds);
    for (int i = 0; ok && i < repeat; i++) {
        ok = shader_copy_step(&j);
        if (j.seconds < best)
            best = j.seconds;
    }
    ok = ok && dma_copy_best(ctx, sgfp4_vk_buffer_handle(j.a), sgfp4_vk_buffer_handle(j.b),
                             j.bytes, repeat, &dma);
    if (ok) {
        *shader_gbps = 2.0 * (double)j.bytes / best * 1e-9;
        *dma_gbps = 2.0 * (double)j.bytes / dma * 1e-9;
    }
    sgfp4_vk_buffer_free(ctx, j.a);
    sgfp4_vk_buffer_free(ctx, j.b);
    return ok;
}

static bool has_device_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *list = calloc(n, sizeof *list);
    bool found = false;
    if (list && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, list) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(list[i].extensionName, name) == 0;
    free(list);
    return found;
}

bool bv_heap_usage(sgfp4_vk_context *ctx, uint64_t *usage, uint64_t *budget)
{
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(ctx, &h);
    if (!has_device_extension(h.physical_device, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME))
        return false;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 m = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &b};
    vkGetPhysicalDeviceMemoryProperties2(h.physical_device, &m);
    *usage = b.heapUsage[0];
    *budget = b.heapBudget[0];
    return true;
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
