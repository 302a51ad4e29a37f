/* sgfp4 bench --backend vulkan --op gemv [--shape OxI] [--batch B] [--repeat R] [--json]:
 * the dense f16 matrix-vector product (sgfp4_vk_gemv_f16: W f16 O x I, x and y f32) at the
 * shapes the SGFP4 product is measured at (4096x4096, 14336x4096, 4096x14336, 8192x8192;
 * batches 1 and 4), against the device-copy ceiling measured in the same burst. These frame
 * the SGFP4 matrix-vector numbers: the ceiling says how fast any stream can be read, the
 * dense product what an uncompressed f16 model gets.
 * Each measurement is a burst: R rounds (default 50) in one submission of a GEMV reading the
 * next of enough weight copies to total at least 512 MiB, then a device copy of 1 GiB (or half
 * of maxStorageBufferRange if less), after bursts that bring the copy rate to its best (the
 * weights come from device memory, not the cache, and the GEMV and its ceiling see the same
 * clock). GB/s counts weights + x read + y written; the ratio is over the copy's GB/s (read +
 * written), medians of the same burst. Each result is checked against a double precision
 * product on the CPU (relative L2 error).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_vulkan.h"
#include "cli.h"
#include "datagen/generator.h"
#include "sgfp4_config.h"

#if SGFP4_HAVE_VULKAN

enum { MAX_SHAPES = 4, MAX_BATCHES = 2, MAX_COPIES = 16, MAX_REPEAT = 62, SETTLE_ROUNDS = 20 };
#define ROTATION_BYTES ((uint64_t)512 << 20)
#define CEILING_BYTES ((uint64_t)1 << 30)

typedef struct gemv_case {
    uint64_t rows, cols;
    unsigned batch;
} gemv_case;

/* A weight in [-1, 1] as fp16 bits, never zero or subnormal. */
static uint16_t random_weight(gen_rng *rng)
{
    const uint32_t r = (uint32_t)gen_next(rng);
    return (uint16_t)((r & 0x8000u) | ((5u + r % 10u) << 10) | ((r >> 4) & 0x3FFu));
}

/* ||y - ref|| / ||ref|| with ref = W x in double precision. */
static double relative_error(const uint16_t *w, const float *x, const float *y, uint64_t rows,
                             uint64_t cols, unsigned batch)
{
    float *wf = malloc(sizeof *wf * (size_t)cols);
    double num = 0, den = 0;
    for (uint64_t r = 0; r < rows && wf; r++) {
        for (uint64_t c = 0; c < cols; c++)
            wf[c] = sgfp4_half_to_float(w[r * cols + c]);
        for (unsigned b = 0; b < batch; b++) {
            double ref = 0;
            for (uint64_t c = 0; c < cols; c++)
                ref += (double)wf[c] * (double)x[b * cols + c];
            const double d = (double)y[b * rows + r] - ref;
            num += d * d;
            den += ref * ref;
        }
    }
    free(wf);
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

typedef struct gemv_job {
    sgfp4_vk_context *ctx;
    VkBuffer w[MAX_COPIES];
    unsigned copies;
    sgfp4_vk_buffer *x, *y, *copy_a, *copy_b;
    uint64_t rows, cols, copy_bytes;
    unsigned batch, rounds;
    double gemv[MAX_REPEAT], copy[MAX_REPEAT];
} gemv_job;

static bool gemv_burst(void *arg, double *copy_gbps)
{
    gemv_job *j = arg;
    if (sgfp4_vk_bench_gemv_burst(j->ctx, j->w, j->copies, sgfp4_vk_buffer_handle(j->x),
                                  sgfp4_vk_buffer_handle(j->y), j->rows, j->cols, j->batch,
                                  sgfp4_vk_buffer_handle(j->copy_a),
                                  sgfp4_vk_buffer_handle(j->copy_b), j->copy_bytes, j->rounds,
                                  j->gemv, j->copy, NULL) != SGFP4_OK)
        return false;
    bv_stats st;
    bv_stats_of(j->copy, (int)j->rounds, &st);
    *copy_gbps = 2.0 * (double)j->copy_bytes / st.median * 1e-9;
    return true;
}

/* Runs every batch of one shape; appends a JSON object per batch. */
static bool run_shape(sgfp4_vk_context *ctx, uint64_t rows, uint64_t cols,
                      const unsigned *batches, int n_batches, int repeat, gemv_job *job,
                      json_t *results, bool as_json)
{
    const uint64_t w_bytes = rows * cols * 2;
    unsigned max_batch = 1;
    for (int i = 0; i < n_batches; i++)
        max_batch = batches[i] > max_batch ? batches[i] : max_batch;
    uint64_t copies = (ROTATION_BYTES + w_bytes - 1) / w_bytes;
    copies = copies < 1 ? 1 : copies > MAX_COPIES ? MAX_COPIES : copies;
    sgfp4_vk_buffer *w[MAX_COPIES] = {0};
    job->copies = (unsigned)copies;
    job->rows = rows;
    job->cols = cols;
    job->x = job->y = NULL;
    uint16_t *host_w = malloc((size_t)w_bytes);
    float *host_x = malloc(sizeof *host_x * (size_t)(max_batch * cols));
    float *host_y = malloc(sizeof *host_y * (size_t)(max_batch * rows));
    bool ok = host_w && host_x && host_y;
    gen_rng rng = {rows * 31 + cols};
    for (uint64_t i = 0; ok && i < rows * cols; i++)
        host_w[i] = random_weight(&rng);
    for (uint64_t i = 0; ok && i < max_batch * cols; i++)
        host_x[i] = (float)((int)gen_below(&rng, 2001) - 1000) / 1000.0f;
    sgfp4_diag diag = {0};
    for (unsigned c = 0; ok && c < copies; c++) {
        ok = sgfp4_vk_buffer_create(ctx, w_bytes, &w[c], &diag) == SGFP4_OK &&
             sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(w[c]), 0, host_w,
                                   (size_t)w_bytes, &diag) == SGFP4_OK;
        job->w[c] = sgfp4_vk_buffer_handle(w[c]);
    }
    ok = ok &&
         sgfp4_vk_buffer_create(ctx, 4 * max_batch * cols, &job->x, &diag) == SGFP4_OK &&
         sgfp4_vk_buffer_create(ctx, 4 * max_batch * rows, &job->y, &diag) == SGFP4_OK &&
         sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(job->x), 0, host_x,
                               (size_t)(4 * max_batch * cols), &diag) == SGFP4_OK;
    if (!ok)
        cli_error("bench", "gemv %llux%llu: %s", (unsigned long long)rows,
                  (unsigned long long)cols, diag.message[0] ? diag.message : "out of memory");
    for (int bi = 0; ok && bi < n_batches; bi++) {
        job->batch = batches[bi];
        bv_settled settled = {0};
        double copy_gbps = 0;
        job->rounds = SETTLE_ROUNDS;
        ok = sgfp4_vk_gemv_f16(ctx, job->w[0], 0, sgfp4_vk_buffer_handle(job->x), 0,
                               sgfp4_vk_buffer_handle(job->y), 0, rows, cols, job->batch,
                               &diag) == SGFP4_OK &&
             sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(job->y), 0, host_y,
                                  (size_t)(4 * job->batch * rows), &diag) == SGFP4_OK &&
             bv_settle(gemv_burst, job, job->copy_bytes, 2.0, &settled);
        job->rounds = (unsigned)repeat;
        ok = ok && gemv_burst(job, &copy_gbps);
        if (!ok) {
            cli_error("bench", "gemv %llux%llu batch %u failed: %s", (unsigned long long)rows,
                      (unsigned long long)cols, job->batch, diag.message);
            break;
        }
        const double err = relative_error(host_w, host_x, host_y, rows, cols, job->batch);
        bv_stats st;
        bv_stats_of(job->gemv, repeat, &st);
        const double bytes = (double)w_bytes + 4.0 * job->batch * (double)(cols + rows);
        const double gbps = bytes / st.median * 1e-9, gbps_best = bytes / st.best * 1e-9;
        json_t *r = json_pack("{s:I,s:I,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:o,s:o}", "rows",
                              (json_int_t)rows, "cols", (json_int_t)cols, "batch",
                              (int)job->batch, "weight_copies", (int)copies, "GBps", gbps,
                              "GBps_best", gbps_best, "copy_GBps", copy_gbps, "ratio_to_copy",
                              gbps / copy_gbps, "relative_l2_error", err, "weight_MB",
                              (double)w_bytes / 1e6, "time", bv_stats_json(&st), "settle",
                              bv_settled_json(&settled));
        json_array_append_new(results, r);
        if (!as_json)
            printf("gemv f16 %5llux%-5llu batch %2u  %7.1f us (best %7.1f, max %7.1f, slow "
                   "%d/%d)  %7.1f GB/s  copy %6.0f  ratio %.3f  rel-L2 %.1e  settle %d/%.2fs%s\n",
                   (unsigned long long)rows, (unsigned long long)cols, job->batch,
                   st.median * 1e6, st.best * 1e6, st.max * 1e6, st.slow, st.n, gbps, copy_gbps,
                   gbps / copy_gbps, err, settled.bursts, settled.seconds,
                   settled.settled ? "" : " UNSETTLED");
        ok = err < 1e-4;
        if (!ok)
            cli_error("bench", "gemv %llux%llu batch %u: relative error %.2e",
                      (unsigned long long)rows, (unsigned long long)cols, job->batch, err);
    }
    for (unsigned c = 0; c < copies; c++)
        sgfp4_vk_buffer_free(ctx, w[c]);
    sgfp4_vk_buffer_free(ctx, job->x);
    sgfp4_vk_buffer_free(ctx, job->y);
    job->x = job->y = NULL;
    free(host_w);
    free(host_x);
    free(host_y);
    return ok;
}

int bench_vulkan_gemv(const cli_args *a)
{
    static const int not_here[] = {KEY_PROFILE, KEY_BPW,    KEY_CODES,    KEY_SEED,
                                   KEY_THREADS, KEY_OFFSET, KEY_STORE,    KEY_DTYPE,
                                   KEY_RUNS,    KEY_GATHER_ROWS, KEY_SIZE, KEY_NO_CHECK,
                                   KEY_INTEGER, KEY_VARIANT, KEY_CASES, KEY_SYNC_CASES,
                                   KEY_RESIDENT_CASES, KEY_FAST, 0};
    const char *cmd = a->command;
    const int rc = cli_reject(a, "--op gemv", not_here);
    if (rc >= 0)
        return rc;
    if (a->in)
        return cli_usage_error(cmd, "--op gemv takes no input file");
    if (a->given[KEY_SHAPE] && a->cols % 8 != 0)
        return cli_usage_error(cmd, "--op gemv: --shape wants I (columns) a multiple of 8");
    const bool as_json = a->given[KEY_JSON];
    const unsigned repeat = a->given[KEY_REPEAT] ? a->repeat : 50;
    uint64_t shapes[MAX_SHAPES][2];
    int n_shapes = 0, n_batches = 0;
    unsigned batches[MAX_BATCHES];
    if (a->given[KEY_SHAPE]) {
        shapes[0][0] = a->rows;
        shapes[0][1] = a->cols;
        n_shapes = 1;
    }
    if (a->batch)
        batches[n_batches++] = a->batch;
    static const uint64_t default_shapes[4][2] = {
        {4096, 4096}, {14336, 4096}, {4096, 14336}, {8192, 8192}};
    if (n_shapes == 0)
        for (; n_shapes < 4; n_shapes++)
            memcpy(shapes[n_shapes], default_shapes[n_shapes], sizeof shapes[0]);
    if (n_batches == 0) {
        batches[n_batches++] = 1;
        batches[n_batches++] = 4;
    }
    sgfp4_vk_context *ctx = NULL;
    sgfp4_diag diag;
    if (sgfp4_vk_context_create(&ctx, NULL, &diag) != SGFP4_OK)
        return cli_error(cmd, "--backend vulkan: %s", diag.message);
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    sgfp4_vk_context_get_info(ctx, &info);
    /* 1 GiB, or what one storage-buffer binding reaches (lavapipe: 128 MiB). */
    uint64_t ceiling_bytes = CEILING_BYTES;
    if (ceiling_bytes > info.max_storage_buffer_range / 2)
        ceiling_bytes = (info.max_storage_buffer_range / 2) & ~(uint64_t)0xFFFF;
    gemv_job *job = calloc(1, sizeof *job);
    double shader = 0, dma = 0;
    bool ok = job && bv_copy_ceiling(ctx, ceiling_bytes, 10, 0.2, &shader, &dma);
    if (ok) {
        job->ctx = ctx;
        job->copy_bytes = ceiling_bytes;
        ok = sgfp4_vk_buffer_create(ctx, ceiling_bytes, &job->copy_a, &diag) == SGFP4_OK &&
             sgfp4_vk_buffer_create(ctx, ceiling_bytes, &job->copy_b, &diag) == SGFP4_OK;
    }
    if (!ok) {
        if (job) {
            sgfp4_vk_buffer_free(ctx, job->copy_a);
            sgfp4_vk_buffer_free(ctx, job->copy_b);
        }
        free(job);
        sgfp4_vk_context_free(ctx);
        return cli_error(cmd, "the copy ceiling could not be measured");
    }
    if (!as_json)
        printf("device: %s; synchronous copy (%.0f MiB, read + written): shader %.1f GB/s, "
               "vkCmdCopyBuffer %.1f GB/s; bursts of %u rounds, medians\n",
               info.name, (double)ceiling_bytes / (1 << 20), shader, dma, repeat);
    json_t *results = json_array();
    for (int s = 0; s < n_shapes && ok; s++)
        ok = run_shape(ctx, shapes[s][0], shapes[s][1], batches, n_batches, (int)repeat, job,
                       results, as_json);
    if (as_json) {
        json_t *root = json_pack("{s:s,s:o,s:I,s:f,s:f,s:o}", "op", "gemv", "device",
                                 bv_device_json(ctx), "copy_bytes", (json_int_t)ceiling_bytes,
                                 "sync_shader_copy_GBps", shader, "sync_cmd_copy_buffer_GBps",
                                 dma, "results", results);
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
    } else {
        json_decref(results);
    }
    sgfp4_vk_buffer_free(ctx, job->copy_a);
    sgfp4_vk_buffer_free(ctx, job->copy_b);
    free(job);
    sgfp4_vk_context_free(ctx);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

#else /* !SGFP4_HAVE_VULKAN */

int bench_vulkan_gemv(const cli_args *a)
{
    return cli_error(a->command, "--backend vulkan: %s", sgfp4_status_str(SGFP4_ERR_UNAVAILABLE));
}

#endif
