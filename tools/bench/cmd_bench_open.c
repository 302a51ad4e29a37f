/* sgfp4 bench --op open: how long sgfp4_tensor_open() (every acceptance rule of DECISIONS D2,
 * then close) takes against a decode of the same container, in alternating rounds of one run.
 * A runtime opens every tensor of a model once at load, so open must stay a small fraction of
 * the decode it enables. Each round opens once, after the previous round's decodes wrote a
 * ring of buffers 4x the last-level cache: the container's bytes come from memory, as they
 * do for a runtime's first look at a tensor.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_cpu.h"
#include "timing.h"

enum { MAX_RUNS = 1000 };

typedef struct open_ctx {
    const cli_args *a;
    const void *data;
    size_t size;
    sgfp4_profile profile;
    const sgfp4_tensor *t;
    bench_ring *out;
} open_ctx;

/* Seconds of one open + close; < 0 if the open fails. */
static double time_open(const open_ctx *c)
{
    sgfp4_tensor *t = NULL;
    const double t0 = tool_now();
    const sgfp4_status s =
        sgfp4_tensor_open(c->data, c->size, c->profile, c->a->rows, c->a->cols, &t, NULL, NULL);
    sgfp4_tensor_close(t);
    const double seconds = tool_now() - t0;
    return s == SGFP4_OK ? seconds : -1;
}

/* Seconds per tensor of a whole-tensor decode on `threads`, over the ring; < 0 on failure. */
static double time_decode(const open_ctx *c, unsigned threads)
{
    sgfp4_decode_options o = cli_decode_options(c->a);
    o.threads = threads;
    const double t0 = tool_now();
    for (size_t i = 0; i < c->out->count; i++)
        if (sgfp4_decode(c->t, c->a->dtype, c->out->buffers[i], 0, c->out->bytes, &o) !=
            SGFP4_OK)
            return -1;
    return (tool_now() - t0) / (double)c->out->count;
}

static void report(const open_ctx *c, const char *source, bench_stats open,
                   const unsigned *threads, const bench_stats *decode, int n)
{
    const cli_args *a = c->a;
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(c->t, &info);
    if (a->given[KEY_JSON]) {
        json_t *results = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                results, json_pack("{s:i, s:f, s:f, s:f, s:f}", "threads", (int)threads[i],
                                   "decode_ms", decode[i].median * 1e3, "decode_ms_min",
                                   decode[i].best * 1e3, "decode_ms_max", decode[i].max * 1e3,
                                   "open_vs_decode", open.median / decode[i].median));
        json_t *root = json_pack(
            "{s:s, s:s, s:s, s:[I,I], s:f, s:I, s:I, s:s, s:i, s:f, s:f, s:f, s:o}", "op",
            "open", "source", source, "profile", cli_profile_name(info.profile), "shape",
            (json_int_t)info.rows, (json_int_t)info.cols, "bits_per_weight",
            info.bits_per_weight, "container_bytes", (json_int_t)info.container_bytes,
            "leaves", (json_int_t)info.leaves, "dtype", cli_dtype_name(a->dtype), "runs",
            (int)a->runs, "open_ms", open.median * 1e3,
            "open_ms_min", open.best * 1e3, "open_ms_max", open.max * 1e3, "results", results);
        cli_print_json(root);
        return;
    }
    printf("sgfp4 bench --op open: %s %llux%llu, %.3f bits/weight, %llu leaves, %s\n",
           cli_profile_name(info.profile), (unsigned long long)info.rows,
           (unsigned long long)info.cols, info.bits_per_weight, (unsigned long long)info.leaves,
           source);
    printf("open + close (every acceptance rule) of bytes not in cache, alternating with %s "
           "decodes; median [min, max] of %u runs\n",
           cli_dtype_name(a->dtype), a->runs);
    printf("open: %.3f ms [%.3f, %.3f]\n", open.median * 1e3, open.best * 1e3, open.max * 1e3);
    printf("threads  decode ms                   open / decode\n");
    for (int i = 0; i < n; i++)
        printf("%7u  %8.3f [%7.3f, %7.3f]  %12.1f%%\n", threads[i], decode[i].median * 1e3,
               decode[i].best * 1e3, decode[i].max * 1e3,
               100.0 * open.median / decode[i].median);
}

int bench_open(const cli_args *a, const bench_input *in)
{
    const size_t bytes = (size_t)(a->rows * a->cols) * sgfp4_dtype_size(a->dtype);
    bench_ring out = {0};
    int rc = CLI_EXIT_FAIL;
    if (!bench_ring_make(&out, bytes, a->offset)) {
        cli_error(a->command, "out of memory");
        goto done;
    }
    const open_ctx c = {a, in->data, in->size, in->profile, in->c.tensor, &out};
    const unsigned threads[2] = {1, a->threads};
    const int n = a->threads > 1 ? 2 : 1;
    static double open_s[MAX_RUNS], decode_s[2][MAX_RUNS];
    bool failed = false;
    for (unsigned k = 0; k < a->runs + 2 && !failed; k++) { /* two warm-up rounds */
        const double o = time_open(&c);
        failed = o < 0;
        for (int i = 0; i < n && !failed; i++) {
            const double d = time_decode(&c, threads[i]);
            failed = d < 0;
            if (k >= 2)
                decode_s[i][k - 2] = d;
        }
        if (k >= 2)
            open_s[k - 2] = o;
    }
    if (failed) {
        cli_error(a->command, "open or decode failed");
        goto done;
    }
    bench_stats open, decode[2];
    bool stats = bench_stats_of(open_s, (int)a->runs, &open);
    for (int i = 0; i < n; i++)
        stats = stats && bench_stats_of(decode_s[i], (int)a->runs, &decode[i]);
    if (!stats) {
        cli_error(a->command, "out of memory");
        goto done;
    }
    report(&c, in->source, open, threads, decode, n);
    rc = CLI_EXIT_OK;
done:
    bench_ring_free(&out);
    return rc;
}
