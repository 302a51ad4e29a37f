/* sgfp4 bench --backend vulkan [--json] [--size N] [--repeat R] [--no-check] [--integer]
 * GPU decode speed against a device-to-device copy of the same number of bytes, measured in
 * the same run, with synchronous calls; repetitions slower than 1.5x the case's best are
 * counted. The other operations (--op variants, matvec) are in bench_vulkan_*.c. Containers
 * are random (tools/datagen/generator.c): v1, v2 uniform-64, v2 MIXED-heavy (4x4/8x8 leaves)
 * and v2 with every layout; v2 runs both kernels (CPU-built
 * leaf table, record walk in the shader). Each decode is also checked
 * bit for bit against the scalar decoder unless --no-check.
 * Decode GB/s counts container bytes read + output bytes written; the copy moves half that
 * many bytes (read once, written once), so both count the same traffic.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_vulkan.h"
#include "cli.h"
#include "sgfp4_config.h"
#include "sgfp4_vulkan.h"
#include "datagen/generator.h"
#include "tool_clock.h"

#if SGFP4_HAVE_VULKAN

typedef struct decode_job {
    vkit *kit;
    sgfp4_vk_tensor *vt;
    sgfp4_dtype dtype;
    sgfp4_vk_buffer *out;
    double gpu_seconds, wall_seconds;
} decode_job;

static bool decode_step(void *arg)
{
    decode_job *j = arg;
    return bv_decode_sync(j->kit, j->vt, j->dtype, j->out, &j->gpu_seconds, &j->wall_seconds);
}

typedef struct bench_case {
    const char *name;
    sgfp4_profile profile;
    gen_layouts layouts;
    sgfp4_dtype dtype;
} bench_case;

static const char *const dtype_names[3] = {"f32", "f16", "bf16"};

/* Runs one case on one context; appends a JSON object to `results`. */
static bool run_case(const bench_case *bc, const char *kernel, sgfp4_vk_context *ctx,
                     const uint8_t *bytes, size_t size, uint64_t n, int repeat, bool check,
                     json_t *results, bool as_json)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(bytes, size, bc->profile, n, n, &t, NULL, &diag) != SGFP4_OK)
        return cli_error("bench", "%s: %s", bc->name, diag.message) == 0; /* false */
    const size_t elem = sgfp4_dtype_size(bc->dtype);
    const uint64_t out_bytes = n * n * elem;
    bool ok = false;
    sgfp4_vk_tensor *vt = NULL;
    sgfp4_vk_buffer *out = NULL;
    vkit *kit = NULL;
    uint8_t *want = NULL, *got = NULL;
    double decode[64], submit[64];
    const double t0 = tool_now();
    if (vkit_open(ctx, &kit, &diag) != SGFP4_OK ||
        sgfp4_vk_tensor_create(ctx, t, &vt, &diag) != SGFP4_OK ||
        sgfp4_vk_buffer_create(ctx, out_bytes, &out, &diag) != SGFP4_OK) {
        cli_error("bench", "%s: %s", bc->name, diag.message);
        goto done;
    }
    const double upload = tool_now() - t0;
    if (repeat > 62)
        repeat = 62;
    decode_job job = {kit, vt, bc->dtype, out, 0, 0};
    /* A second: the driver lowers the clock while the GPU waits for the CPU (the container's
     * generation and upload) and raises it again in steps of about 100 ms. */
    if (!bench_warm_up(decode_step, &job, 1.0)) {
        cli_error("bench", "%s: decode failed", bc->name);
        goto done;
    }
    for (int i = 0; i < repeat; i++) {
        if (!decode_step(&job)) {
            cli_error("bench", "%s: decode failed", bc->name);
            goto done;
        }
        decode[i] = job.gpu_seconds;
        submit[i] = job.wall_seconds;
    }
    bench_stats st, submit_st;
    bench_stats_of(decode, repeat, &st);
    bench_stats_of(submit, repeat, &submit_st);
    const double best = st.best, median = st.median, submit_median = submit_st.median;
    /* The copy moves traffic/2 bytes: read once and written once, the same traffic. */
    const uint64_t traffic = size + out_bytes;
    const uint64_t copy_bytes = (traffic / 2 + 15) & ~(uint64_t)15;
    double shader_copy_gbps = 0, dma_copy_gbps = 0;
    if (!bv_copy_ceiling(kit, copy_bytes, repeat, 0.2, &shader_copy_gbps, &dma_copy_gbps)) {
        cli_error("bench", "%s: the copy benchmark failed", bc->name);
        goto done;
    }
    const double gbps = (double)traffic / best * 1e-9;
    /* The ceiling: the faster of the two copies. */
    const double copy_gbps = shader_copy_gbps > dma_copy_gbps ? shader_copy_gbps : dma_copy_gbps;
    int identical = -1;
    if (check) {
        want = malloc(out_bytes);
        got = malloc(out_bytes);
        sgfp4_decode_options scalar;
        sgfp4_decode_options_init(&scalar);
        scalar.backend = SGFP4_BACKEND_SCALAR;
        if (!want || !got ||
            sgfp4_decode(t, bc->dtype, want, 0, out_bytes, &scalar) != SGFP4_OK ||
            sgfp4_vk_decode_to_host(ctx, vt, bc->dtype, got, 0, out_bytes, &diag) !=
                SGFP4_OK) {
            cli_error("bench", "%s: the bit-exactness check could not run", bc->name);
            goto done;
        }
        identical = memcmp(want, got, out_bytes) == 0;
    }
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    json_t *r = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "case", bc->name,
        "kernel", kernel, "dtype", dtype_names[bc->dtype], "profile",
        bc->profile == SGFP4_PROFILE_V1 ? "v1" : "v2", "container_bytes", (json_int_t)size,
        "output_bytes", (json_int_t)out_bytes, "bits_per_weight", info.bits_per_weight,
        "upload_seconds", upload, "decode_gpu_seconds_best", best, "decode_gpu_seconds_median",
        median, "submit_seconds_median", submit_median, "decode_GBps", gbps,
        "shader_copy_GBps", shader_copy_gbps, "copy_GBps", copy_gbps, "ratio_to_copy",
        gbps / copy_gbps, "leaves_per_block", (double)info.leaves / (double)info.blocks);
    json_object_set_new(r, "cmd_copy_buffer_GBps", json_real(dma_copy_gbps));
    json_object_set_new(r, "decode_GBps_median", json_real((double)traffic / median * 1e-9));
    json_object_set_new(r, "bit_identical", identical < 0 ? json_null() : json_boolean(identical));
    json_object_set_new(r, "slow_repetitions", json_integer(st.slow));
    json_object_set_new(r, "decode_gpu_seconds_max", json_real(st.max));
    json_array_append_new(results, r);
    if (!as_json)
        printf("%-15s %-5s %-4s %6.1f MB %6.3f ms %7.1f GB/s  copy %7.1f (dma %7.1f) GB/s  "
               "ratio %.3f  slow %d/%d  upload %6.1f ms  submit %6.3f ms  %s\n",
               bc->name, kernel, dtype_names[bc->dtype], (double)size / 1e6, best * 1e3, gbps,
               shader_copy_gbps, dma_copy_gbps, gbps / copy_gbps, st.slow, repeat,
               upload * 1e3, submit_median * 1e3,
               identical < 0 ? "" : identical ? "bit-identical" : "MISMATCH");
    ok = identical != 0;
done:
    free(want);
    free(got);
    sgfp4_vk_buffer_free(ctx, out);
    sgfp4_vk_tensor_free(ctx, vt);
    vkit_close(kit);
    sgfp4_tensor_close(t);
    return ok;
}

int cmd_bench_vulkan(const cli_args *a)
{
    if (a->op && strcmp(a->op, "variants") == 0)
        return bench_vulkan_variants(a);
    if (a->op && strcmp(a->op, "matvec") == 0)
        return bench_vulkan_matvec(a);
    static const int cpu_only[] = {KEY_SHAPE,  KEY_PROFILE, KEY_BPW,  KEY_CODES,
                                   KEY_SEED,   KEY_THREADS, KEY_OFFSET, KEY_STORE,
                                   KEY_DTYPE,  KEY_RUNS,    KEY_GATHER_ROWS, KEY_BATCH,
                                   KEY_VARIANT, KEY_FAST, 0};
    const char *cmd = a->command;
    const int rc = cli_reject(a, "--op decode", cpu_only);
    if (rc >= 0)
        return rc;
    if (a->in)
        return cli_usage_error(cmd, "--backend vulkan takes no input file");
    const bool as_json = a->given[KEY_JSON], check = !a->given[KEY_NO_CHECK];
    const unsigned extra_flags = a->given[KEY_INTEGER] ? SGFP4_VK_FORCE_INTEGER_PATH : 0;
    const unsigned size = a->size, repeat = a->repeat;
    sgfp4_vk_context *table = NULL, *walk = NULL;
    sgfp4_diag diag;
    sgfp4_vk_context_options table_options, walk_options;
    sgfp4_vk_context_options_init(&table_options);
    sgfp4_vk_context_options_init(&walk_options);
    table_options.flags = SGFP4_VK_V2_TABLE | extra_flags;
    walk_options.flags = SGFP4_VK_V2_WALK | extra_flags;
    if (sgfp4_vk_context_create(&table, &table_options, &diag) != SGFP4_OK ||
        sgfp4_vk_context_create(&walk, &walk_options, &diag) != SGFP4_OK) {
        sgfp4_vk_context_free(table);
        return cli_error(cmd, "--backend vulkan: %s", diag.message);
    }
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    sgfp4_vk_context_get_info(table, &info);
    if (!as_json)
        printf("device: %s, %s pipeline, %ux%u random containers, best of %u\n", info.name,
               info.exact_path ? "integer-exact" : "RTE float", size, size, repeat);

    static const bench_case cases[] = {
        {"v1", SGFP4_PROFILE_V1, GEN_LAYOUTS_ALL, SGFP4_DTYPE_F32},
        {"v1", SGFP4_PROFILE_V1, GEN_LAYOUTS_ALL, SGFP4_DTYPE_F16},
        {"v1", SGFP4_PROFILE_V1, GEN_LAYOUTS_ALL, SGFP4_DTYPE_BF16},
        {"v2-uniform64", SGFP4_PROFILE_V2, GEN_LAYOUTS_UNIFORM_64, SGFP4_DTYPE_F32},
        {"v2-mixed-heavy", SGFP4_PROFILE_V2, GEN_LAYOUTS_MIXED_DEEP, SGFP4_DTYPE_F32},
        {"v2-all-layouts", SGFP4_PROFILE_V2, GEN_LAYOUTS_ALL, SGFP4_DTYPE_F32},
        {"v2-mixed-heavy", SGFP4_PROFILE_V2, GEN_LAYOUTS_MIXED_DEEP, SGFP4_DTYPE_BF16},
    };
    json_t *results = json_array();
    bool ok = true;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0] && ok; c++) {
        gen_params p = gen_shape_params(cases[c].profile, size, size);
        p.layouts = cases[c].layouts;
        p.corners = 0; /* no gaps, no shared payloads: containers like an encoder's */
        size_t bytes_size = 0;
        uint8_t *bytes = gen_container_bytes(&p, 100 + c, &bytes_size);
        if (!bytes) {
            ok = false;
            cli_error(cmd, "out of memory");
            break;
        }
        if (cases[c].profile == SGFP4_PROFILE_V1) {
            ok = run_case(&cases[c], "v1", table, bytes, bytes_size, size, (int)repeat, check,
                          results, as_json);
        } else {
            ok = run_case(&cases[c], "table", table, bytes, bytes_size, size, (int)repeat,
                          check, results, as_json) &&
                 run_case(&cases[c], "walk", walk, bytes, bytes_size, size, (int)repeat, check,
                          results, as_json);
        }
        free(bytes);
    }
    if (as_json) {
        json_t *root = json_pack("{s:s,s:s,s:b,s:I,s:i,s:o}", "device", info.name, "pipeline",
                                 info.exact_path ? "integer" : "rte", "rte_float32",
                                 info.rte_float32, "size", (json_int_t)size, "repeat",
                                 (int)repeat, "results", results);
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
    } else {
        json_decref(results);
    }
    sgfp4_vk_context_free(walk);
    sgfp4_vk_context_free(table);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

#else /* !SGFP4_HAVE_VULKAN */

int cmd_bench_vulkan(const cli_args *a)
{
    return cli_error(a->command, "--backend vulkan: %s", sgfp4_status_str(SGFP4_ERR_UNAVAILABLE));
}

#endif
