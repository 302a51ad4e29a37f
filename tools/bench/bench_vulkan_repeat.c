/* sgfp4 bench --backend vulkan --op repeat [--size N] [--cases N] [--sync-cases N]
 * [--resident-cases N] [--repeat R] [--dtype D] [--json]: the same decode in many separate
 * cases, each with fresh device memory, reporting every slow case and every slow repetition.
 * This is how the erratic slow runs of large MIXED-heavy decodes were explained (the driver
 * lowers the GPU clock while it waits for the CPU, not memory placement) and how their
 * absence is shown (docs/benchmarks.md).
 * One random MIXED-heavy NxN v2 container (default N = 16384, f32 output) is decoded, by the
 * default path (the products' layout; the leaf table until f32 read the layout too), in
 * separate cases (default 100), each as a benchmark runs one: upload, a new output buffer and
 * new copy buffers, the measurement, everything freed. A case whose median decode is above
 * 1.5x the median of its arm's cases is an outlier; so is a repetition above 1.5x its case's
 * best. A burst whose own interleaved copy ran below BV_SETTLED_SHARE of the best copy rate
 * was measured while the device's clocks changed (decode and copy slow down together): it is
 * settled and measured again, up to MAX_REMEASURE times, and the count is reported per case
 * and per arm. Arms, interleaved:
 *   --cases           the burst method: bursts of decodes with a copy of the same traffic
 *                     interleaved (one submission each) until the copy rate reaches its best,
 *                     then one burst of R rounds (default 10): decode and ceiling at the same
 *                     clock;
 *   --sync-cases      the synchronous method of the first benchmarks: 0.05 s of decodes, then
 *                     R synchronous decodes, then the copy;
 *   --resident-cases  the burst method on one resident tensor and output (no new memory).
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_vulkan.h"
#include "cli.h"
#include "datagen/generator.h"
#include "sgfp4_config.h"
#include "tool_clock.h"

#if SGFP4_HAVE_VULKAN

enum { ARM_BURST, ARM_SYNC, ARM_RESIDENT, ARMS, MAX_REPEAT = 62, SETTLE_ROUNDS = 20,
       MAX_REMEASURE = 3 };
static const char *const arm_names[ARMS] = {"burst", "sync", "resident"};
static const char *const dtype_names[3] = {"f32", "f16", "bf16"};

typedef struct case_buffers {
    sgfp4_vk_context *ctx;
    vkit *kit;
    sgfp4_vk_tensor *vt;
    sgfp4_vk_buffer *out, *copy_a, *copy_b;
    sgfp4_dtype dtype;
    uint64_t copy_bytes;
    int rounds;
    double decode[MAX_REPEAT], copy[MAX_REPEAT];
} case_buffers;

static bool burst_step(void *arg, double *copy_gbps)
{
    case_buffers *c = arg;
    if (!bv_decode_burst(c->kit, c->vt, c->dtype, c->out, c->copy_a, c->copy_b, c->copy_bytes,
                         (unsigned)c->rounds, c->decode, c->copy))
        return false;
    bench_stats st;
    bench_stats_of(c->copy, c->rounds, &st);
    *copy_gbps = 2.0 * (double)c->copy_bytes / st.median * 1e-9;
    return true;
}

typedef struct sync_job {
    case_buffers *c;
    double seconds;
} sync_job;

static bool sync_step(void *arg)
{
    sync_job *j = arg;
    double wall;
    return bv_decode_sync(j->c->kit, j->c->vt, j->c->dtype, j->c->out, &j->seconds, &wall);
}

typedef struct case_result {
    int arm;
    double start;
    bench_stats decode;
    double copy_gbps; /* the burst's interleaved copies (median), or the synchronous copy */
    bv_settled settle;
    int remeasured; /* bursts measured again: their copy was below the settled share */
} case_result;

/* The measurement of one case on buffers c: burst (settle, then R rounds) or synchronous. */
static bool measure(case_buffers *c, int arm, int repeat, case_result *r)
{
    if (arm == ARM_SYNC) {
        sync_job j = {c, 0};
        if (!bench_warm_up(sync_step, &j, 0.05))
            return false;
        for (int i = 0; i < repeat; i++) {
            if (!sync_step(&j))
                return false;
            c->decode[i] = j.seconds;
        }
        bench_stats_of(c->decode, repeat, &r->decode);
        double shader, dma;
        if (!bv_copy_ceiling(c->kit, c->copy_bytes, 3, 0.02, &shader, &dma))
            return false;
        r->copy_gbps = shader;
        return true;
    }
    double gbps;
    for (;;) {
        c->rounds = SETTLE_ROUNDS;
        if (!bv_settle(burst_step, c, c->copy_bytes, 2.0, &r->settle))
            return false;
        c->rounds = repeat;
        if (!burst_step(c, &gbps))
            return false;
        if (gbps >= BV_SETTLED_SHARE * bv_best_copy_gbps(c->copy_bytes) ||
            r->remeasured == MAX_REMEASURE)
            break;
        r->remeasured++;
    }
    bench_stats_of(c->decode, repeat, &r->decode);
    r->copy_gbps = gbps;
    return true;
}

static bool buffers_create(case_buffers *c, const sgfp4_tensor *t, uint64_t out_bytes,
                           sgfp4_diag *diag)
{
    return sgfp4_vk_tensor_create(c->ctx, t, &c->vt, diag) == SGFP4_OK &&
           sgfp4_vk_buffer_create(c->ctx, out_bytes, &c->out, diag) == SGFP4_OK &&
           sgfp4_vk_buffer_create(c->ctx, c->copy_bytes, &c->copy_a, diag) == SGFP4_OK &&
           sgfp4_vk_buffer_create(c->ctx, c->copy_bytes, &c->copy_b, diag) == SGFP4_OK;
}

static void buffers_free(case_buffers *c)
{
    sgfp4_vk_buffer_free(c->ctx, c->copy_b);
    sgfp4_vk_buffer_free(c->ctx, c->copy_a);
    sgfp4_vk_buffer_free(c->ctx, c->out);
    sgfp4_vk_tensor_free(c->ctx, c->vt);
    c->vt = NULL;
    c->out = c->copy_a = c->copy_b = NULL;
}

/* The arm of step k of a schedule that spreads each arm's cases evenly. */
static int next_arm(const int *wanted, int *done)
{
    int best = -1;
    double best_left = -1;
    for (int a = 0; a < ARMS; a++) {
        if (done[a] >= wanted[a])
            continue;
        const double left = (double)(wanted[a] - done[a]) / (double)wanted[a];
        if (left > best_left) {
            best_left = left;
            best = a;
        }
    }
    if (best >= 0)
        done[best]++;
    return best;
}

int bench_vulkan_repeat(const cli_args *a)
{
    static const int not_here[] = {KEY_SHAPE,  KEY_PROFILE, KEY_BPW,      KEY_CODES,
                                   KEY_SEED,   KEY_THREADS, KEY_OFFSET,   KEY_STORE,
                                   KEY_RUNS,   KEY_GATHER_ROWS, KEY_NO_CHECK, KEY_INTEGER,
                                   KEY_BATCH,  KEY_VARIANT, KEY_FAST, 0};
    const char *cmd = a->command;
    const int rc = cli_reject(a, "--op repeat", not_here);
    if (rc >= 0)
        return rc;
    if (a->in)
        return cli_usage_error(cmd, "--op repeat takes no input file");
    const bool as_json = a->given[KEY_JSON];
    const unsigned size = a->given[KEY_SIZE] ? a->size : 16384;
    const unsigned repeat = a->given[KEY_REPEAT] ? a->repeat : 10;
    const int wanted[ARMS] = {(int)a->cases, (int)a->sync_cases, (int)a->resident_cases};
    const sgfp4_dtype dtype = a->dtype;
    if (size < 64 || repeat < 3)
        return cli_usage_error(cmd, "--op repeat wants --size 64 or more and --repeat 3 or more");
    const int total = wanted[0] + wanted[1] + wanted[2];
    if (total == 0)
        return cli_usage_error(cmd, "no cases to run");

    /* The decode benchmark's MIXED-heavy container (its case 4: seed 104). */
    gen_params p = gen_shape_params(2, size, size);
    p.layouts = GEN_LAYOUTS_MIXED_DEEP;
    p.corners = 0;
    size_t bytes_size = 0;
    uint8_t *bytes = gen_container_bytes(&p, 104, &bytes_size);
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (!bytes ||
        sgfp4_tensor_open(bytes, bytes_size, SGFP4_PROFILE_V2, size, size, &t, NULL, &diag) !=
            SGFP4_OK) {
        free(bytes);
        return cli_error(cmd, "the test container could not be built");
    }
    sgfp4_vk_context *ctx = NULL;
    sgfp4_vk_context_options options;
    sgfp4_vk_context_options_init(&options);
    vkit *kit = NULL;
    if (sgfp4_vk_context_create(&ctx, &options, &diag) != SGFP4_OK ||
        vkit_open(ctx, &kit, &diag) != SGFP4_OK) {
        sgfp4_vk_context_free(ctx);
        sgfp4_tensor_close(t);
        free(bytes);
        return cli_error(cmd, "--backend vulkan: %s", diag.message);
    }
    const uint64_t out_bytes = (uint64_t)size * size * sgfp4_dtype_size(dtype);
    const uint64_t copy_bytes = ((bytes_size + out_bytes) / 2 + 15) & ~(uint64_t)15;
    const double traffic = (double)bytes_size + (double)out_bytes;
    /* The resident arm's tensor and buffers, made once. */
    case_buffers resident = {.ctx = ctx, .kit = kit, .dtype = dtype, .copy_bytes = copy_bytes};
    bool ok = wanted[ARM_RESIDENT] == 0 || buffers_create(&resident, t, out_bytes, &diag);
    case_result *results = calloc((size_t)total, sizeof *results);
    ok = ok && results;
    if (!as_json && ok)
        printf("%ux%u MIXED-heavy v2 (%.1f MB) to %s, %d cases (%d burst, %d sync, %d "
               "resident), %u decodes each\n",
               size, size, (double)bytes_size / 1e6, dtype_names[dtype], total, wanted[0],
               wanted[1], wanted[2], repeat);
    int done[ARMS] = {0, 0, 0};
    const double t0 = tool_now();
    for (int k = 0; k < total && ok; k++) {
        case_result *r = &results[k];
        r->arm = next_arm(wanted, done);
        r->start = tool_now() - t0;
        if (r->arm == ARM_RESIDENT) {
            ok = measure(&resident, r->arm, (int)repeat, r);
        } else {
            case_buffers c = {.ctx = ctx, .kit = kit, .dtype = dtype, .copy_bytes = copy_bytes};
            ok = buffers_create(&c, t, out_bytes, &diag) && measure(&c, r->arm, (int)repeat, r);
            buffers_free(&c);
        }
        if (!ok)
            cli_error(cmd, "case %d (%s) failed", k, arm_names[r->arm]);
    }
    /* Outliers: against the median over each arm's cases of the case medians. */
    double reference[ARMS] = {0, 0, 0};
    for (int arm = 0; arm < ARMS && ok; arm++) {
        double *m = malloc(sizeof *m * (size_t)(wanted[arm] + 1));
        int n = 0;
        for (int k = 0; k < total && m; k++)
            if (results[k].arm == arm)
                m[n++] = results[k].decode.median;
        bench_stats of_arm;
        bench_stats_of(m, n, &of_arm); /* n 0: all zero */
        reference[arm] = of_arm.median;
        free(m);
    }
    json_t *cases = json_array(), *summary = json_object();
    int outliers[ARMS] = {0, 0, 0}, slow_reps[ARMS] = {0, 0, 0}, unsettled[ARMS] = {0, 0, 0};
    int remeasured[ARMS] = {0, 0, 0};
    double worst[ARMS] = {0, 0, 0}, ratio_min[ARMS] = {9, 9, 9}, ratio_max[ARMS] = {0, 0, 0};
    for (int k = 0; k < total && ok; k++) {
        const case_result *r = &results[k];
        const double factor = r->decode.median / reference[r->arm];
        const bool outlier = factor > BENCH_SLOW_FACTOR;
        const double copy_gbps = r->copy_gbps;
        const double ratio = traffic / r->decode.median * 1e-9 / copy_gbps;
        outliers[r->arm] += outlier;
        slow_reps[r->arm] += r->decode.slow;
        unsettled[r->arm] += r->arm != ARM_SYNC && !r->settle.settled;
        remeasured[r->arm] += r->remeasured > 0;
        worst[r->arm] = factor > worst[r->arm] ? factor : worst[r->arm];
        ratio_min[r->arm] = ratio < ratio_min[r->arm] ? ratio : ratio_min[r->arm];
        ratio_max[r->arm] = ratio > ratio_max[r->arm] ? ratio : ratio_max[r->arm];
        json_t *c = json_pack("{s:i,s:s,s:f,s:o,s:f,s:f,s:b,s:f,s:f}", "case", k, "arm",
                              arm_names[r->arm], "start_s", r->start, "decode",
                              bench_stats_json(&r->decode), "decode_GBps_median",
                              traffic / r->decode.median * 1e-9, "factor_to_arm_median", factor,
                              "outlier", outlier, "copy_GBps_median", copy_gbps,
                              "ratio_to_copy", ratio);
        if (r->arm != ARM_SYNC) {
            json_object_set_new(c, "settle", bv_settled_json(&r->settle));
            json_object_set_new(c, "remeasured", json_integer(r->remeasured));
        }
        json_array_append_new(cases, c);
        if (!as_json)
            printf("case %3d %-8s t=%6.1fs  decode best %7.1f median %7.1f max %7.1f us  slow "
                   "reps %d/%d  x%.2f of arm median%s  copy %6.0f GB/s  ratio %.3f%s\n",
                   k, arm_names[r->arm], r->start, r->decode.best * 1e6, r->decode.median * 1e6,
                   r->decode.max * 1e6, r->decode.slow, r->decode.n, factor,
                   outlier ? "  OUTLIER" : "", copy_gbps, ratio,
                   r->remeasured ? "  (measured again)" : "");
    }
    for (int arm = 0; arm < ARMS && ok; arm++) {
        if (!wanted[arm])
            continue;
        json_object_set_new(summary, arm_names[arm],
                            json_pack("{s:i,s:f,s:i,s:i,s:i,s:i,s:f,s:f,s:f}", "cases",
                                      wanted[arm], "median_of_medians_us", reference[arm] * 1e6,
                                      "outliers", outliers[arm], "slow_repetitions",
                                      slow_reps[arm], "unsettled", unsettled[arm],
                                      "remeasured_cases", remeasured[arm], "worst_factor", worst[arm],
                                      "ratio_min", ratio_min[arm], "ratio_max", ratio_max[arm]));
        if (!as_json)
            printf("%-8s %d cases: median %.1f us, OUTLIERS %d (case median > %.1fx), slow "
                   "repetitions %d of %d, worst case x%.2f, ratio to copy %.3f..%.3f, cases "
                   "measured again (their copy below %.2f of the best) %d\n",
                   arm_names[arm], wanted[arm], reference[arm] * 1e6, outliers[arm], BENCH_SLOW_FACTOR,
                   slow_reps[arm], wanted[arm] * (int)repeat, worst[arm], ratio_min[arm], ratio_max[arm],
                   BV_SETTLED_SHARE, remeasured[arm]);
    }
    if (as_json && ok) {
        json_t *root = json_pack("{s:s,s:o,s:i,s:s,s:I,s:i,s:o,s:o}", "op", "repeat", "device",
                                 bv_device_json(ctx), "size", (int)size, "dtype",
                                 dtype_names[dtype], "container_bytes", (json_int_t)bytes_size,
                                 "repeat", (int)repeat, "summary", summary, "cases", cases);
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
    } else {
        json_decref(cases);
        json_decref(summary);
    }
    free(results);
    buffers_free(&resident);
    vkit_close(kit);
    sgfp4_vk_context_free(ctx);
    sgfp4_tensor_close(t);
    free(bytes);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

#else /* !SGFP4_HAVE_VULKAN */

int bench_vulkan_repeat(const cli_args *a)
{
    return cli_error(a->command, "--backend vulkan: %s", sgfp4_status_str(SGFP4_ERR_UNAVAILABLE));
}

#endif
