/* sgfp4 bench: CPU decode speed against the memory ceilings measured in the same run; with
 * --backend vulkan the GPU benchmark (cmd_bench_vulkan.c).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_cpu.h"
#include "cli.h"
#include "timing.h"

static const cli_accept options[] = {
    {KEY_SHAPE, "tensor shape (default 4096x4096; required with FILE)"},
    {KEY_PROFILE, "synthetic container profile (default v2), or FILE's profile"},
    {KEY_BPW, "v2 synthetic rate, 2..10 bits per weight (default 4.5)"},
    {KEY_CODES, NULL},
    {KEY_SEED, "synthetic container seed (default 1)"},
    {KEY_OP, NULL},
    {KEY_THREADS, "the multi-threaded run (default, and 0: every online CPU)"},
    {KEY_BACKEND, NULL},
    {KEY_OFFSET, NULL},
    {KEY_STORE, "decode stores: auto (default: streaming from sgfp4_decode_stream_bytes()), "
                "cached, streaming"},
    {KEY_DTYPE, "output type (default f32)"},
    {KEY_RUNS, NULL},
    {KEY_GATHER_ROWS, NULL},
    {KEY_JSON, "print one JSON object instead of the table"},
    {KEY_SIZE, NULL},
    {KEY_REPEAT, NULL},
    {KEY_NO_CHECK, NULL},
    {KEY_INTEGER, NULL},
    {KEY_BATCH, NULL},
    {KEY_VARIANT, NULL},
    {KEY_FAST, "--backend vulkan --op matvec: also time the fast products (DECISIONS D9) "
               "beside D8's, each result named by its products"},
    {0, NULL},
};

/* One thread count's results (seconds per tensor, medians). */
typedef struct bench_result {
    unsigned threads;
    double decode_s, memset_s, memcpy_s, gather_s, stream_s; /* stream_s 0: not measured */
    double best_decode_s, best_memset_s; /* fastest rounds: the figures least disturbed by
                                            other load on a shared machine */
} bench_result;

typedef struct bench_ctx {
    const cli_args *a;
    const sgfp4_tensor *t;
    bench_ring *out;
    const uint8_t *copy_src;
    uint8_t *gather_dst;
    const uint64_t *gather_rows;
    size_t gather_count;
} bench_ctx;

/* One round for `threads`: per-tensor seconds of decode, memset, memcpy, gather and the
 * non-temporal store fill (0 where there is none). */
static bool bench_round(const bench_ctx *c, unsigned threads, double seconds[5])
{
    sgfp4_decode_options o;
    sgfp4_decode_options_init(&o);
    o.backend = c->a->backend;
    o.threads = threads;
    o.store = c->a->store;
    const size_t n = c->out->count, bytes = c->out->bytes;
    double t0 = tool_now();
    for (size_t i = 0; i < n; i++)
        if (sgfp4_decode(c->t, c->a->dtype, c->out->buffers[i], 0, bytes, &o) != SGFP4_OK)
            return false;
    seconds[0] = (tool_now() - t0) / (double)n;
    t0 = tool_now();
    for (size_t i = 0; i < n; i++)
        bench_memset(c->out->buffers[i], bytes, threads);
    seconds[1] = (tool_now() - t0) / (double)n;
    t0 = tool_now();
    for (size_t i = 0; i < n; i++)
        bench_memcpy(c->out->buffers[i], c->copy_src, bytes, threads);
    seconds[2] = (tool_now() - t0) / (double)n;
    t0 = tool_now();
    const size_t gather_bytes = c->gather_count * c->a->cols * sgfp4_dtype_size(c->a->dtype);
    if (sgfp4_decode_gather(c->t, c->gather_rows, c->gather_count, c->a->dtype, c->gather_dst,
                            0, gather_bytes, &o) != SGFP4_OK)
        return false;
    seconds[3] = tool_now() - t0;
    t0 = tool_now();
    bool streamed = true;
    for (size_t i = 0; i < n && streamed; i++)
        streamed = bench_stream_fill(c->out->buffers[i], bytes, threads);
    seconds[4] = streamed ? (tool_now() - t0) / (double)n : 0;
    return true;
}

static bool bench_threads(const bench_ctx *c, unsigned threads, bench_result *r)
{
    double samples[5][1000], s[5];
    for (unsigned w = 0; w < 2; w++)
        if (!bench_round(c, threads, s))
            return false;
    for (unsigned k = 0; k < c->a->runs; k++) {
        if (!bench_round(c, threads, s))
            return false;
        for (int m = 0; m < 5; m++)
            samples[m][k] = s[m];
    }
    r->threads = threads;
    r->decode_s = bench_median(samples[0], c->a->runs); /* sorts: [0] is the fastest */
    r->best_decode_s = samples[0][0];
    r->memset_s = bench_median(samples[1], c->a->runs);
    r->best_memset_s = samples[1][0];
    r->memcpy_s = bench_median(samples[2], c->a->runs);
    r->gather_s = bench_median(samples[3], c->a->runs);
    r->stream_s = bench_median(samples[4], c->a->runs);
    return true;
}

/* The stores decode used for `bytes` on `threads` threads (the library's AUTO rule). */
static const char *stores_used(const cli_args *a, size_t bytes, unsigned threads)
{
    if (a->backend == SGFP4_BACKEND_SCALAR)
        return "cached";
    if (a->store != SGFP4_STORE_AUTO)
        return a->store == SGFP4_STORE_STREAMING ? "streaming" : "cached";
    return bytes >= sgfp4_decode_stream_bytes(threads) ? "streaming" : "cached";
}

static void report(const cli_args *a, const sgfp4_tensor *t, const char *source,
                   const bench_ring *out, size_t gather_count, const bench_result *res, int nres)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    const double gb = (double)out->bytes / 1e9;
    const char *kernels = sgfp4_decode_backend_name(a->backend);
    if (a->given[KEY_JSON]) {
        json_t *runs = json_array();
        for (int i = 0; i < nres; i++)
            json_array_append_new(
                runs, json_pack("{s:i, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                                "threads", (json_int_t)res[i].threads, "stores",
                                stores_used(a, out->bytes, res[i].threads), "decode_gbps",
                                gb / res[i].decode_s,
                                "memset_gbps", gb / res[i].memset_s, "memcpy_gbps",
                                gb / res[i].memcpy_s, "decode_vs_memset",
                                res[i].memset_s / res[i].decode_s, "decode_vs_memcpy",
                                res[i].memcpy_s / res[i].decode_s, "ntstore_gbps",
                                res[i].stream_s > 0 ? gb / res[i].stream_s : 0.0,
                                "best_decode_gbps", gb / res[i].best_decode_s,
                                "best_memset_gbps", gb / res[i].best_memset_s,
                                "gather_rows_per_s",
                                (double)gather_count / res[i].gather_s));
        json_t *root = json_pack(
            "{s:s, s:s, s:[I,I], s:f, s:s, s:s, s:I, s:I, s:i, s:I, s:i, s:I, s:o}", "source",
            source,
            "profile", info.profile == SGFP4_PROFILE_V1 ? "v1" : "v2", "shape",
            (json_int_t)info.rows, (json_int_t)info.cols, "bits_per_weight",
            info.bits_per_weight, "kernels", kernels ? kernels : "?", "dtype",
            cli_dtype_name(a->dtype), "output_bytes", (json_int_t)out->bytes, "output_buffers",
            (json_int_t)out->count, "output_offset", (int)a->offset, "llc_bytes", (json_int_t)bench_llc_bytes(), "runs",
            (int)a->runs, "gather_rows", (json_int_t)gather_count, "results", runs);
        cli_print_json(root);
        return;
    }
    printf("sgfp4 bench: %s %llux%llu, %.3f bits/weight, %s\n",
           info.profile == SGFP4_PROFILE_V1 ? "v1" : "v2", (unsigned long long)info.rows,
           (unsigned long long)info.cols, info.bits_per_weight, source);
    printf("kernels %s, output %s %.1f MiB x %zu buffers at 64-byte boundary + %u (LLC %.0f "
           "MiB), median of %u runs\n",
           kernels ? kernels : "?", cli_dtype_name(a->dtype), (double)out->bytes / 1048576.0,
           out->count, a->offset, (double)bench_llc_bytes() / 1048576.0, a->runs);
    printf("threads  stores     decode GB/s  memset GB/s  memcpy GB/s  vs memset  vs memcpy  "
           "ntstore GB/s  gather rows/s\n");
    for (int i = 0; i < nres; i++)
        printf("%7u  %-9s  %11.2f  %11.2f  %11.2f  %9.2f  %9.2f  %12.2f  %13.0f\n",
               res[i].threads, stores_used(a, out->bytes, res[i].threads),
               gb / res[i].decode_s, gb / res[i].memset_s, gb / res[i].memcpy_s,
               res[i].memset_s / res[i].decode_s, res[i].memcpy_s / res[i].decode_s,
               res[i].stream_s > 0 ? gb / res[i].stream_s : 0.0,
               (double)gather_count / res[i].gather_s);
    for (int i = 0; i < nres; i++)
        printf("fastest rounds, %u thread%s: decode %.2f GB/s, memset %.2f GB/s, ratio %.2f\n",
               res[i].threads, res[i].threads == 1 ? "" : "s", gb / res[i].best_decode_s,
               gb / res[i].best_memset_s, res[i].best_memset_s / res[i].best_decode_s);
    printf("(ntstore: a fill with 16-byte non-temporal stores, for reference; gather: %zu random "
           "rows per call)\n",
           gather_count);
}

/* sgfp4 bench (the CPU's decode, or --op open). */
static int bench_decode(const cli_args *args)
{
    static const int vulkan_only[] = {KEY_SIZE,       KEY_REPEAT,        KEY_NO_CHECK,
                                      KEY_INTEGER,    KEY_BATCH,         KEY_VARIANT,
                                      KEY_FAST,       0};
    static const int decode_only[] = {KEY_GATHER_ROWS, 0};
    int rc = cli_reject(args, "the CPU benchmark", vulkan_only);
    if (rc >= 0)
        return rc;
    const bool open_op = args->op && strcmp(args->op, "open") == 0;
    if (args->op && !open_op && strcmp(args->op, "decode") != 0)
        return cli_usage_error(args->command, "--op %s times the GPU: it needs --backend vulkan",
                               args->op);
    if (open_op && (rc = cli_reject(args, "--op open", decode_only)) >= 0)
        return rc;
    cli_args a = *args;
    bench_input in;
    if ((rc = bench_input_open(&a, &in)) >= 0)
        return rc;
    if (open_op) {
        rc = bench_open(&a, &in);
        bench_input_close(&in);
        return rc;
    }
    rc = CLI_EXIT_FAIL;
    bench_ring out = {0};
    uint8_t *copy_src = NULL, *gather_dst = NULL;
    uint64_t *gather_rows = NULL;
    const sgfp4_tensor *t = in.c.tensor;
    const size_t elem = sgfp4_dtype_size(a.dtype);
    const size_t bytes = (size_t)(a.rows * a.cols) * elem;
    const size_t gather_count = a.gather_rows;
    copy_src = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    gather_dst = malloc(gather_count * (size_t)a.cols * elem);
    gather_rows = malloc(gather_count * sizeof *gather_rows);
    if (!copy_src || !gather_dst || !gather_rows || !bench_ring_make(&out, bytes, a.offset)) {
        cli_error(a.command, "out of memory");
        goto done;
    }
    memset(copy_src, 0x3c, bytes);
    uint64_t state = a.seed;
    for (size_t i = 0; i < gather_count; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        gather_rows[i] = (state >> 33) % a.rows;
    }
    const bench_ctx ctx = {&a, t, &out, copy_src, gather_dst, gather_rows, gather_count};
    bench_result res[2];
    int nres = 0;
    const unsigned counts[2] = {1, a.threads};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && a.threads == 1)
            break;
        if (!bench_threads(&ctx, counts[i], &res[nres++])) {
            cli_error(a.command, "decode failed");
            goto done;
        }
    }
    report(&a, t, in.source, &out, gather_count, res, nres);
    rc = CLI_EXIT_OK;
done:
    bench_ring_free(&out);
    free(copy_src);
    free(gather_dst);
    free(gather_rows);
    bench_input_close(&in);
    return rc;
}

static int run(const cli_args *a)
{
    if (a->given[KEY_BATCH] && a->batch > SGFP4_MATVEC_MAX_BATCH)
        return cli_usage_error(a->command, "--batch: the benchmarks time one call, 1..%d vectors",
                               SGFP4_MATVEC_MAX_BATCH);
    if (a->vulkan && a->op && strcmp(a->op, "open") == 0)
        return cli_usage_error(a->command, "--op open times the CPU open, which every backend "
                                           "shares: it takes no --backend vulkan");
    if (!a->vulkan && a->op && strcmp(a->op, "matvec") == 0)
        return bench_matvec(a);
    return a->vulkan ? cmd_bench_vulkan(a) : bench_decode(a);
}

const cli_command cli_bench = {
    "bench", "measure decode (or open) speed against memset/memcpy",
    "usage: sgfp4 bench [FILE] [options]\n"
    "       sgfp4 bench [FILE] --op open [options]\n"
    "       sgfp4 bench [FILE] --op matvec [--batch B] [--json] [--no-check] [options]\n"
    "       sgfp4 bench --backend vulkan [--op decode|variants|matvec] [--json] [--size N]\n"
    "                   [--repeat R] [--no-check] [--integer] [--batch B] [--variant NAME]\n"
    "\n"
    "Times CPU decode of one tensor and, in the same run and for the same output bytes, the\n"
    "two memory ceilings: memset (write-only, what decode really competes with) and memcpy,\n"
    "and for reference a fill with non-temporal vector stores (x86-64).\n"
    "Without FILE it encodes a synthetic LLM-like tensor (heavy-tailed values, per-row\n"
    "scales, outlier columns; deterministic for --seed) with sgfp4_encode, or with\n"
    "--codes random builds a container of random codes directly (no encoder). Each timing is\n"
    "the median of --runs rounds after two warm-up rounds; a round writes a ring of output\n"
    "buffers at least 4x the last-level cache. Runs with 1 thread and with --threads.\n"
    "--op matvec times the matrix-vector products instead (Class A batch 1 and --batch, Class\n"
    "B batch 1) against a plain read of the same container bytes, cold (after evicting the\n"
    "cache) and warm, after checking them bit for bit against the scalar reference.\n"
    "--backend vulkan decodes random NxN containers on the Vulkan device instead and measures\n"
    "a device-to-device copy of the same traffic as the ceiling (--op decode, counting\n"
    "repetitions slower than 1.5x the case's best). Its other operations: variants times\n"
    "every exact decode path on the same containers; matvec the D8 products against the copy\n"
    "and a plain read of their bytes. Both time bursts: the operation and a copy interleaved\n"
    "in one submission until the copy rate settles (benchmarks.md says why).\n"
    "--op open (the CPU) times sgfp4_tensor_open() (every acceptance rule) of the container\n"
    "against its decode, in alternating rounds: one open per round, its bytes not in cache.\n",
    options, run};
