/* sgfp4 bench --backend vulkan --op variants [--size N] [--repeat R] [--no-check]
 * [--variant NAME] [--json]: every exact code path of the decode shaders timed on the same
 * containers, each checked bit for bit against the CPU decoder, with a device copy of the
 * same traffic as the ceiling: docs/benchmarks.md.
 * Containers (default 8192x8192, random, like an encoder's: no gaps, no shared payloads): v1,
 * v1 with LLM-like scales and biases (2^-9..2^-3), v2 uniform-64, v2 MIXED-heavy, v2 every
 * layout; outputs f32, f16, bf16. Variants: default (f16 by the device's conversion where it
 * can be declared exact; v2 from the leaf table for f32, from the products' layout for 16-bit
 * outputs), f16-guard (the same with the subnormal check of devices without DenormPreserve
 * 16), f16-add (f16 by one f32 add, as on adopted devices), v2-layout (v2 from the products'
 * layout for every output), v2-table (v2 from the leaf table and the records for every
 * output), integer-pipeline.
 * Each measurement is a burst: decodes with a device copy of the same traffic interleaved in
 * one submission, repeated until the copy rate reaches its best, then R rounds (default 20);
 * the ratio is decode GB/s (container + output bytes) over copy GB/s (read + written),
 * medians of the same burst; "moved" the same over the bytes actually read and written (v2
 * from the products' layout reads the layout, not the container). Each output is compared with the CPU decoder's unless
 * --no-check.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_vulkan.h"
#include "cli.h"
#include "datagen/generator.h"
#include "sgfp4_config.h"

#if SGFP4_HAVE_VULKAN

static const char *const dtype_names[3] = {"f32", "f16", "bf16"};

typedef struct variant {
    const char *name;
    unsigned flags;
    unsigned dtypes; /* bit d: dtype d is timed */
} variant;

enum { F32 = 1, F16 = 2, BF16 = 4, ALL = 7, MAX_REPEAT = 62, SETTLE_ROUNDS = 20 };

static const variant variants[] = {
    {"default", 0, ALL},
    {"f16-guard", SGFP4_VK_F16_GUARD, F16},
    {"f16-add", SGFP4_VK_F16_NO_DEVICE_CONVERSION, F16},
    {"v2-layout", SGFP4_VK_V2_LAYOUT, ALL},
    {"v2-table", SGFP4_VK_V2_TABLE, ALL},
    {"integer-pipeline", SGFP4_VK_FORCE_INTEGER_PATH, ALL},
};
enum { VARIANTS = sizeof variants / sizeof variants[0] };

/* The bytes a v2 decode from the products' layout reads besides writing its output: the
 * layout's codes (2048 per block), cell maps (256 per MIXED record), block descriptions (8)
 * and S and Bias (8 per leaf), sections at 16-byte boundaries (src/vulkan/vk_matvec_layout.c);
 * 0 where the decode reads the container (v1; v2 from the leaf table or the walk). */
static uint64_t layout_read_bytes(const sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt,
                                  const sgfp4_tensor *t, sgfp4_dtype dtype)
{
    if (!sgfp4_vk_decode_reads_layout(ctx, vt, dtype))
        return 0;
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    const uint64_t desc = 512 * info.blocks + 64 * info.records_by_layout[SGFP4_LAYOUT_MIXED];
    const uint64_t sb = (desc + 2 * info.blocks + 3) & ~(uint64_t)3;
    return 4 * ((sb + 2 * info.leaves + 3) & ~(uint64_t)3);
}

static int variant_index(const char *name)
{
    for (int v = 0; v < VARIANTS; v++)
        if (strcmp(variants[v].name, name) == 0)
            return v;
    return -1;
}

typedef struct tensor_case {
    const char *name;
    sgfp4_profile profile;
    gen_layouts layouts;
    gen_halves halves;
    uint8_t *bytes;
    size_t size;
    sgfp4_tensor *t;
    uint8_t *want[3]; /* the CPU decoder's output per dtype (NULL with --no-check) */
} tensor_case;

typedef struct burst_job {
    vkit *kit;
    sgfp4_vk_tensor *vt;
    sgfp4_vk_buffer *out, *copy_a, *copy_b;
    sgfp4_dtype dtype;
    uint64_t copy_bytes;
    unsigned rounds;
    double decode[MAX_REPEAT], copy[MAX_REPEAT];
} burst_job;

static bool burst_step(void *arg, double *copy_gbps)
{
    burst_job *j = arg;
    if (!bv_decode_burst(j->kit, j->vt, j->dtype, j->out, j->copy_a, j->copy_b, j->copy_bytes,
                         j->rounds, j->decode, j->copy))
        return false;
    bench_stats st;
    bench_stats_of(j->copy, (int)j->rounds, &st);
    *copy_gbps = 2.0 * (double)j->copy_bytes / st.median * 1e-9;
    return true;
}

/* Decodes tc as dtype on the GPU into host memory: 1 if identical to the CPU's, 0 if not,
 * -1 on error. */
static int same_as_cpu(sgfp4_vk_context *ctx, sgfp4_vk_tensor *vt, const tensor_case *tc,
                       sgfp4_dtype dtype, uint64_t out_bytes)
{
    uint8_t *got = malloc((size_t)out_bytes);
    int same = -1;
    if (got && sgfp4_vk_decode_to_host(ctx, vt, dtype, got, 0, (size_t)out_bytes, NULL) ==
                   SGFP4_OK)
        same = memcmp(got, tc->want[dtype], (size_t)out_bytes) == 0;
    free(got);
    return same;
}

/* Builds the containers and, unless --no-check, the CPU decoder's outputs. */
static bool prepare(const cli_args *a, tensor_case *tc, int n, unsigned size, bool check)
{
    for (int i = 0; i < n; i++) {
        gen_params p = gen_shape_params(tc[i].profile, size, size);
        p.layouts = tc[i].layouts;
        p.halves = tc[i].halves;
        p.corners = 0;
        tc[i].bytes = gen_container_bytes(&p, 200 + (uint64_t)i, &tc[i].size);
        if (!tc[i].bytes || sgfp4_tensor_open(tc[i].bytes, tc[i].size, tc[i].profile, size, size,
                                              &tc[i].t, NULL, NULL) != SGFP4_OK)
            return false;
        for (int d = 0; d < 3 && check; d++) {
            const uint64_t out_bytes = (uint64_t)size * size * sgfp4_dtype_size((sgfp4_dtype)d);
            sgfp4_decode_options cpu;
            sgfp4_decode_options_init(&cpu);
            cpu.threads = a->threads;
            tc[i].want[d] = malloc((size_t)out_bytes);
            if (!tc[i].want[d] || sgfp4_decode(tc[i].t, (sgfp4_dtype)d, tc[i].want[d], 0,
                                               (size_t)out_bytes, &cpu) != SGFP4_OK)
                return false;
        }
    }
    return true;
}

int bench_vulkan_variants(const cli_args *a)
{
    static const int not_here[] = {KEY_SHAPE,  KEY_PROFILE, KEY_BPW,     KEY_CODES,
                                   KEY_SEED,   KEY_OFFSET,  KEY_STORE,   KEY_DTYPE,
                                   KEY_RUNS,   KEY_GATHER_ROWS, KEY_INTEGER, KEY_BATCH, KEY_FAST, 0};
    const char *cmd = a->command;
    const int rc = cli_reject(a, "--op variants", not_here);
    if (rc >= 0)
        return rc;
    if (a->in)
        return cli_usage_error(cmd, "--op variants takes no input file");
    if (a->variant && variant_index(a->variant) < 0)
        return cli_usage_error(cmd, "--op variants: --variant wants default, f16-guard, "
                                    "f16-add or integer-pipeline");
    const bool as_json = a->given[KEY_JSON], check = !a->given[KEY_NO_CHECK];
    const unsigned size = a->size, repeat = a->repeat;
    tensor_case tc[] = {
        {"v1", SGFP4_PROFILE_V1, GEN_LAYOUTS_ALL, GEN_HALVES_EDGES, NULL, 0, NULL, {NULL}},
        {"v1-llm-scales", SGFP4_PROFILE_V1, GEN_LAYOUTS_ALL, GEN_HALVES_LLM, NULL, 0, NULL,
         {NULL}},
        {"v2-uniform64", SGFP4_PROFILE_V2, GEN_LAYOUTS_UNIFORM_64, GEN_HALVES_EDGES, NULL, 0,
         NULL, {NULL}},
        {"v2-mixed-heavy", SGFP4_PROFILE_V2, GEN_LAYOUTS_MIXED_DEEP, GEN_HALVES_EDGES, NULL, 0,
         NULL, {NULL}},
        {"v2-all-layouts", SGFP4_PROFILE_V2, GEN_LAYOUTS_ALL, GEN_HALVES_EDGES, NULL, 0, NULL,
         {NULL}},
    };
    enum { TENSORS = sizeof tc / sizeof tc[0] };
    sgfp4_vk_context *base = NULL;
    sgfp4_diag diag;
    if (sgfp4_vk_context_create(&base, NULL, &diag) != SGFP4_OK)
        return cli_error(cmd, "--backend vulkan: %s", diag.message);
    bool ok = prepare(a, tc, TENSORS, size, check);
    if (!ok)
        cli_error(cmd, "the containers or their references could not be built");
    json_t *results = json_array();
    json_t *device = bv_device_json(base);
    sgfp4_vk_context_free(base);
    if (!as_json && ok)
        printf("%ux%u, bursts of %u rounds; ratio = decode GB/s / copy GB/s of the same traffic "
               "in the same burst (medians)\n",
               size, size, repeat);
    for (int v = 0; v < VARIANTS && ok; v++) {
        if (a->variant && variant_index(a->variant) != v)
            continue;
        sgfp4_vk_context *ctx = NULL;
        vkit *kit = NULL;
        sgfp4_vk_context_options o;
        sgfp4_vk_context_options_init(&o);
        o.flags = variants[v].flags; /* 0: the default choice of every path */
        if (sgfp4_vk_context_create(&ctx, &o, &diag) != SGFP4_OK ||
            vkit_open(ctx, &kit, &diag) != SGFP4_OK) {
            sgfp4_vk_context_free(ctx);
            ok = cli_error(cmd, "%s: %s", variants[v].name, diag.message) == 0;
            break;
        }
        sgfp4_vk_device_info info;
        sgfp4_vk_device_info_init(&info);
        sgfp4_vk_context_get_info(ctx, &info);
        for (int i = 0; i < TENSORS && ok; i++) {
            if (tc[i].halves == GEN_HALVES_LLM && v == VARIANTS - 1)
                continue; /* LLM-like scales matter to the f16 conversions */
            sgfp4_vk_tensor *vt = NULL;
            if (sgfp4_vk_tensor_create(ctx, tc[i].t, &vt, &diag) != SGFP4_OK) {
                ok = cli_error(cmd, "%s: %s", tc[i].name, diag.message) == 0;
                break;
            }
            for (int d = 0; d < 3 && ok; d++) {
                if (!(variants[v].dtypes & (1u << d)))
                    continue;
                const uint64_t out_bytes = (uint64_t)size * size * sgfp4_dtype_size((sgfp4_dtype)d);
                burst_job job = {.kit = kit, .vt = vt, .dtype = (sgfp4_dtype)d,
                                 .copy_bytes = ((tc[i].size + out_bytes) / 2 + 15) & ~(uint64_t)15,
                                 .rounds = SETTLE_ROUNDS};
                bv_settled settled = {0};
                double gbps_copy = 0;
                ok = sgfp4_vk_buffer_create(ctx, out_bytes, &job.out, &diag) == SGFP4_OK &&
                     sgfp4_vk_buffer_create(ctx, job.copy_bytes, &job.copy_a, &diag) == SGFP4_OK &&
                     sgfp4_vk_buffer_create(ctx, job.copy_bytes, &job.copy_b, &diag) == SGFP4_OK &&
                     bv_settle(burst_step, &job, job.copy_bytes, 2.0, &settled);
                job.rounds = repeat;
                ok = ok && burst_step(&job, &gbps_copy);
                sgfp4_vk_buffer_free(ctx, job.out);
                sgfp4_vk_buffer_free(ctx, job.copy_a);
                sgfp4_vk_buffer_free(ctx, job.copy_b);
                const int same = ok && check ? same_as_cpu(ctx, vt, &tc[i], (sgfp4_dtype)d,
                                                           out_bytes)
                                             : -1;
                if (!ok || (check && same != 1)) {
                    cli_error(cmd, "%s %s %s: %s", variants[v].name, tc[i].name, dtype_names[d],
                              ok ? "output differs from the CPU decoder" : "decode failed");
                    ok = false;
                    break;
                }
                bench_stats st;
                bench_stats_of(job.decode, (int)repeat, &st);
                const double traffic = (double)tc[i].size + (double)out_bytes;
                const double gbps = traffic / st.median * 1e-9;
                /* Over the bytes actually moved: the layout read (v2) and the output. */
                const uint64_t layout = layout_read_bytes(ctx, vt, tc[i].t, (sgfp4_dtype)d);
                const double moved = (layout ? (double)layout : (double)tc[i].size) +
                                     (double)out_bytes;
                json_array_append_new(
                    results,
                    json_pack("{s:s,s:s,s:s,s:i,s:f,s:f,s:f,s:I,s:f,s:o,s:o,s:o}", "variant",
                              variants[v].name, "tensor", tc[i].name, "dtype", dtype_names[d],
                              "f16_conversion", info.f16_conversion, "decode_GBps", gbps,
                              "copy_GBps", gbps_copy, "ratio_to_copy", gbps / gbps_copy,
                              "layout_bytes", (json_int_t)layout, "ratio_moved_to_copy",
                              moved / st.median * 1e-9 / gbps_copy, "time",
                              bench_stats_json(&st), "settle", bv_settled_json(&settled),
                              "bit_identical", same < 0 ? json_null() : json_boolean(same)));
                if (!as_json)
                    printf("%-16s %-15s %-4s %8.1f us (best %8.1f, slow %d/%d) %7.1f GB/s  copy "
                           "%6.0f  ratio %.3f (moved %.3f)  settle %d/%.2fs%s%s\n",
                           variants[v].name, tc[i].name, dtype_names[d], st.median * 1e6,
                           st.best * 1e6, st.slow, st.n, gbps, gbps_copy, gbps / gbps_copy,
                           moved / st.median * 1e-9 / gbps_copy,
                           settled.bursts, settled.seconds, settled.settled ? "" : " UNSETTLED",
                           same == 1 ? "  bit-identical" : "");
            }
            sgfp4_vk_tensor_free(ctx, vt);
        }
        vkit_close(kit);
        sgfp4_vk_context_free(ctx);
    }
    if (as_json) {
        json_t *root = json_pack("{s:s,s:o,s:i,s:i,s:o}", "op", "variants", "device", device,
                                 "size", (int)size, "repeat", (int)repeat, "results", results);
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
    } else {
        json_decref(results);
        json_decref(device);
    }
    for (int i = 0; i < TENSORS; i++) {
        sgfp4_tensor_close(tc[i].t);
        free(tc[i].bytes);
        for (int d = 0; d < 3; d++)
            free(tc[i].want[d]);
    }
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

#else /* !SGFP4_HAVE_VULKAN */

int bench_vulkan_variants(const cli_args *a)
{
    return cli_error(a->command, "--backend vulkan: %s", sgfp4_status_str(SGFP4_ERR_UNAVAILABLE));
}

#endif
