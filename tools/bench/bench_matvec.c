/* sgfp4 bench --op matvec: the matrix-vector products (DECISIONS D8) on one tensor against
 * the ceiling measured in the same run, a plain read of the same container bytes.
 *
 * Each round times, in this order, the read and the products (Class A batch 1, Class A
 * batch 4 or --batch, Class B batch 1) twice: "cold", each after reading a buffer of twice
 * the last-level cache (the weights come from memory, as in token generation with a model
 * larger than the cache), and "warm", each right after the same call (the weights in the
 * cache where they fit). Medians of --runs rounds after two warm-up rounds, with the
 * fastest and slowest; every round runs 1 thread, then --threads (the products on a thread
 * pool created once, sgfp4_thread_pool, as a runtime calling many products runs them; the
 * read on threads of its own), so that a change of the machine's load touches both alike.
 * Before timing, every product is checked bit for bit against the scalar reference (skip
 * with --no-check).
 *
 * On a machine shared with other work the scheduler takes the core away for whole time
 * slices, several milliseconds each: a call that loses it measures the other programs. So
 * a cold call starts on a fresh slice (it yields the core after the eviction), and a call
 * during which the process was switched out involuntarily is timed again (up to TRIES
 * timings per sample); the report counts those calls.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jansson.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "bench_cpu.h"
#include "timing.h"

/* ---- the plain read: every byte loaded once, wide loads, split over threads ---- */

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static uint64_t read_avx512(const uint8_t *p, size_t n)
{
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
        b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 64));
        c = _mm512_add_epi64(c, _mm512_loadu_si512(p + i + 128));
        d = _mm512_add_epi64(d, _mm512_loadu_si512(p + i + 192));
    }
    uint64_t sum = (uint64_t)_mm512_reduce_add_epi64(
        _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
    for (; i < n; i++)
        sum += p[i];
    return sum;
}

__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, size_t n)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_add_epi64(b, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
        c = _mm256_add_epi64(c, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
        d = _mm256_add_epi64(d, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
    }
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes,
                        _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
    uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; i < n; i++)
        sum += p[i];
    return sum;
}
#endif

static uint64_t read_bytes(const uint8_t *p, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f"))
        return read_avx512(p, n);
    if (__builtin_cpu_supports("avx2"))
        return read_avx2(p, n);
#endif
    uint64_t s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (unsigned k = 0; k < 4; k++) {
            uint64_t v;
            memcpy(&v, p + i + 8 * k, 8);
            s[k] += v;
        }
    for (; i < n; i++)
        s[0] += p[i];
    return s[0] + s[1] + s[2] + s[3];
}

typedef struct read_part {
    const uint8_t *p;
    size_t n;
    uint64_t sum;
} read_part;

static void *read_thread(void *arg)
{
    read_part *r = arg;
    r->sum = read_bytes(r->p, r->n);
    return NULL;
}

static volatile uint64_t read_sink;

/* Reads bytes [0, n) once, in `threads` contiguous parts (the caller takes the first). */
static void plain_read(const uint8_t *p, size_t n, unsigned threads)
{
    enum { MOST = 64 };
    if (threads > MOST)
        threads = MOST;
    read_part parts[MOST];
    pthread_t ids[MOST];
    bool started[MOST] = {false};
    for (unsigned t = 0; t < threads; t++) {
        const size_t a = n * t / threads, b = n * (t + 1) / threads;
        parts[t] = (read_part){p + a, b - a, 0};
        if (t > 0)
            started[t] = pthread_create(&ids[t], NULL, read_thread, &parts[t]) == 0;
    }
    read_thread(&parts[0]);
    uint64_t sum = parts[0].sum;
    for (unsigned t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(ids[t], NULL);
        else
            read_thread(&parts[t]);
        sum += parts[t].sum;
    }
    read_sink = read_sink + sum;
}

/* ---- the arms ---- */

enum { ARM_READ, ARM_A1, ARM_AN, ARM_B1, ARMS };
static const char *const arm_names[ARMS] = {"plain read", "class A, batch 1", "class A, batch N",
                                           "class B, batch 1"};

typedef struct bench {
    const cli_args *a;
    const sgfp4_tensor *t;
    uint64_t rows, cols;
    const uint8_t *bytes;
    size_t size;
    sgfp4_matvec_plan *plan;
    const float *x;
    void *q8;
    size_t q8_bytes;
    float *y;
    size_t y_bytes;
    unsigned batch; /* of ARM_AN */
    uint8_t *evict;
    size_t evict_bytes;
    sgfp4_thread_pool *pool; /* --threads of them, for the products */
} bench;

static bool arm_run(const bench *b, int arm, unsigned threads, sgfp4_backend backend)
{
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.backend = backend;
    o.threads = threads;
    o.pool = b->pool;
    const uint64_t rows = b->rows;
    switch (arm) {
    case ARM_READ: plain_read(b->bytes, b->size, threads); return true;
    case ARM_A1:
        return sgfp4_matvec_q8(b->plan, b->q8, b->q8_bytes, 1, 0, rows, b->y, 0, b->y_bytes, &o) ==
               SGFP4_OK;
    case ARM_AN:
        return sgfp4_matvec_q8(b->plan, b->q8, b->q8_bytes, b->batch, 0, rows, b->y, 0,
                               b->y_bytes, &o) == SGFP4_OK;
    default:
        return sgfp4_matvec_float(b->plan, b->x, SGFP4_DTYPE_F32, 1, 0, 0, rows, b->y, 0,
                                  b->y_bytes, &o) == SGFP4_OK;
    }
}

/* Every product with the backend against the scalar reference, bit for bit (NaN = NaN). */
static bool check_exact(const bench *b, char *why, size_t why_size)
{
    const uint64_t rows = b->rows;
    float *want = malloc(b->y_bytes);
    if (!want)
        return snprintf(why, why_size, "out of memory"), false;
    bool ok = true;
    for (int arm = ARM_A1; arm < ARMS && ok; arm++) {
        const unsigned n = arm == ARM_AN ? b->batch : 1;
        if (!arm_run(b, arm, 1, SGFP4_BACKEND_SCALAR)) {
            ok = false;
            break;
        }
        memcpy(want, b->y, (size_t)(n * rows) * sizeof *want);
        if (!arm_run(b, arm, b->a->threads, b->a->backend)) {
            ok = false;
            break;
        }
        for (uint64_t i = 0; i < n * rows && ok; i++)
            if (memcmp(&want[i], &b->y[i], 4) != 0 && !(isnan(want[i]) && isnan(b->y[i]))) {
                snprintf(why, why_size, "%s: result %llu is %a, the reference's %a",
                         arm_names[arm], (unsigned long long)i, (double)b->y[i], (double)want[i]);
                ok = false;
            }
    }
    if (!ok && !why[0])
        snprintf(why, why_size, "a product call failed");
    free(want);
    return ok;
}

typedef struct arm_stats {
    bench_stats time;
    unsigned interrupted;       /* timed calls the scheduler interrupted, timed again */
    unsigned kept_interrupted;  /* samples interrupted on every one of their TRIES timings */
} arm_stats;

/* Involuntary context switches of the process so far, all its threads (the pool's too). */
static long involuntary_switches(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_nivcsw : 0;
}

enum { TRIES = 5 }; /* timings of one sample before an interrupted one is kept */

/* One sample of `arm`, in seconds: cold (after the eviction, on a fresh time slice) or warm
 * (right after the previous call). A call during which the process was switched out is
 * timed again, cold ones after a new eviction; counted in *s. */
static bool timed_call(const bench *b, int arm, unsigned threads, bool warm, double *seconds,
                       arm_stats *s)
{
    for (unsigned k = 1;; k++) {
        if (!warm) {
            plain_read(b->evict, b->evict_bytes, threads);
            sched_yield(); /* returns at once where nothing else waits for this core */
        }
        const long before = involuntary_switches();
        const double t0 = tool_now();
        if (!arm_run(b, arm, threads, b->a->backend))
            return false;
        *seconds = tool_now() - t0;
        if (involuntary_switches() == before)
            return true;
        if (k == TRIES) {
            s->kept_interrupted++;
            return true;
        }
        s->interrupted++;
    }
}

/* --runs rounds (after two warm-up rounds), each with every thread count in turn (so that a
 * change of the machine's load between them touches them alike): out[count][cold / warm][arm]. */
static bool measure(const bench *b, const unsigned *threads, int counts,
                    arm_stats out[2][2][ARMS])
{
    const unsigned runs = b->a->runs;
    const size_t per_count = (size_t)2 * ARMS * runs;
    double *samples = malloc(sizeof(double) * per_count * (size_t)counts);
    if (!samples)
        return false;
    memset(out, 0, sizeof(arm_stats) * 2 * 2 * ARMS);
    for (unsigned r = 0; r < runs + 2; r++)
        for (int i = 0; i < counts; i++)
            for (int arm = 0; arm < ARMS; arm++)
                for (int warm = 0; warm < 2; warm++) {
                    arm_stats warm_up = {0}; /* the warm-up rounds' counts are not reported */
                    double t;
                    if (!timed_call(b, arm, threads[i], warm, &t,
                                    r >= 2 ? &out[i][warm][arm] : &warm_up)) {
                        free(samples);
                        return false;
                    }
                    if (r >= 2)
                        samples[(size_t)i * per_count + (size_t)(warm * ARMS + arm) * runs +
                                (r - 2)] = t;
                }
    bool ok = true;
    for (int i = 0; i < counts; i++)
        for (int warm = 0; warm < 2; warm++)
            for (int arm = 0; arm < ARMS; arm++)
                ok = ok && bench_stats_of(samples + (size_t)i * per_count +
                                              (size_t)(warm * ARMS + arm) * runs,
                                          (int)runs, &out[i][warm][arm].time);
    free(samples);
    return ok;
}

static void report(const bench *b, const char *source, const unsigned *threads, int counts,
                   arm_stats res[2][2][ARMS], double quantize_s)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(b->t, &info);
    const double weights = (double)b->rows * (double)b->cols;
    const char *kernels = sgfp4_matvec_backend_name(b->a->backend);
    char an[32];
    snprintf(an, sizeof an, "class A, batch %u", b->batch);
    if (b->a->given[KEY_JSON]) {
        json_t *rows = json_array();
        for (int i = 0; i < counts; i++)
            for (int warm = 0; warm < 2; warm++)
                for (int arm = 0; arm < ARMS; arm++) {
                    const arm_stats *s = &res[i][warm][arm];
                    const bench_stats *t = &s->time, *read = &res[i][warm][ARM_READ].time;
                    json_array_append_new(
                        rows, json_pack("{s:i, s:s, s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:i}",
                                        "threads", (int)threads[i], "cache",
                                        warm ? "warm" : "cold", "op",
                                        arm == ARM_AN ? an : arm_names[arm], "batch",
                                        arm == ARM_AN ? (int)b->batch : 1, "gweights_per_s",
                                        arm == ARM_READ ? 0.0 : weights / t->median * 1e-9,
                                        "gbytes_per_s", (double)b->size / t->median * 1e-9,
                                        "vs_read", read->median / t->median, "best_s", t->best,
                                        "worst_s", t->max, "interrupted",
                                        (int)s->interrupted, "kept_interrupted",
                                        (int)s->kept_interrupted));
                }
        json_t *root = json_pack(
            "{s:s, s:s, s:[I,I], s:f, s:I, s:I, s:s, s:i, s:b, s:f, s:o}", "source", source,
            "profile", info.profile == SGFP4_PROFILE_V1 ? "v1" : "v2", "shape",
            (json_int_t)info.rows, (json_int_t)info.cols, "bits_per_weight", info.bits_per_weight,
            "container_bytes", (json_int_t)b->size, "plan_bytes",
            (json_int_t)sgfp4_matvec_plan_bytes(b->plan), "kernels", kernels ? kernels : "?",
            "runs", (int)b->a->runs, "checked", !b->a->given[KEY_NO_CHECK], "quantize_s",
            quantize_s, "results", rows);
        cli_print_json(root);
        return;
    }
    printf("sgfp4 bench --op matvec: %s %llux%llu, %.3f bits/weight, %s\n",
           info.profile == SGFP4_PROFILE_V1 ? "v1" : "v2", (unsigned long long)info.rows,
           (unsigned long long)info.cols, info.bits_per_weight, source);
    printf("kernels %s, container %zu bytes, plan %zu bytes, %s, median of %u runs [fastest, "
           "slowest]\n",
           kernels ? kernels : "?", b->size, sgfp4_matvec_plan_bytes(b->plan),
           b->a->given[KEY_NO_CHECK] ? "not checked" : "bit-exact against the scalar reference",
           b->a->runs);
    printf("threads  cache  operation          G weights/s                GB/s   vs read\n");
    for (int i = 0; i < counts; i++)
        for (int warm = 0; warm < 2; warm++)
            for (int arm = 0; arm < ARMS; arm++) {
                const arm_stats *s = &res[i][warm][arm];
                printf("%7u  %-5s  %-17s  %7.2f [%7.2f, %7.2f]  %7.2f  %8.2f\n", threads[i],
                       warm ? "warm" : "cold", arm == ARM_AN ? an : arm_names[arm],
                       weights / s->time.median * 1e-9, weights / s->time.max * 1e-9,
                       weights / s->time.best * 1e-9, (double)b->size / s->time.median * 1e-9,
                       res[i][warm][ARM_READ].time.median / s->time.median);
            }
    for (int i = 0; i < counts; i++) {
        unsigned again = 0, kept = 0;
        for (int warm = 0; warm < 2; warm++)
            for (int arm = 0; arm < ARMS; arm++) {
                again += res[i][warm][arm].interrupted;
                kept += res[i][warm][arm].kept_interrupted;
            }
        printf("%u thread%s: %u timed calls interrupted by the scheduler and timed again, %u "
               "samples kept interrupted (after %d timings)\n",
               threads[i], threads[i] == 1 ? "" : "s", again, kept, TRIES);
    }
    printf("(G weights/s of the read: the container's weights per second at the read's speed; "
           "class A quantizer: %.1f us per vector)\n",
           quantize_s * 1e6);
}

int bench_matvec(const cli_args *args)
{
    static const int not_here[] = {KEY_STORE,   KEY_DTYPE,  KEY_GATHER_ROWS, KEY_OFFSET,
                                   KEY_SIZE,    KEY_REPEAT, KEY_INTEGER,     KEY_VARIANT, 0};
    if (args->given[KEY_FAST])
        return cli_usage_error(args->command, "--fast: the fast products (DECISIONS D9) are "
                               "not offered on the CPU backends; --backend vulkan offers them");
    int rc = cli_reject(args, "--op matvec", not_here);
    if (rc >= 0)
        return rc;
    cli_args a = *args;
    if (!sgfp4_matvec_backend_name(a.backend))
        return cli_error(a.command, "the kernel set of --backend cannot run on this machine");
    bench_input in;
    if ((rc = bench_input_open(&a, &in)) >= 0)
        return rc;
    bench b = {0};
    b.a = &a;
    b.batch = a.given[KEY_BATCH] ? a.batch : 4;
    b.bytes = in.data;
    b.size = in.size;
    float *x = NULL;
    rc = CLI_EXIT_FAIL;
    b.t = in.c.tensor;
    b.rows = a.rows;
    b.cols = a.cols;
    const uint64_t cols = a.cols;
    b.evict_bytes = 2 * bench_llc_bytes();
    b.q8_bytes = sgfp4_matvec_q8_bytes(cols, b.batch);
    b.y_bytes = (size_t)(a.rows * b.batch) * sizeof *b.y;
    x = malloc((size_t)(cols * b.batch) * sizeof *x);
    b.q8 = malloc(b.q8_bytes);
    b.y = malloc(b.y_bytes);
    b.evict = malloc(b.evict_bytes);
    if (!x || !b.q8 || !b.y || !b.evict ||
        sgfp4_matvec_plan_create(b.t, &b.plan) != SGFP4_OK) {
        cli_error(a.command, "out of memory");
        goto done;
    }
    memset(b.evict, 1, b.evict_bytes);
    memset(b.y, 0, b.y_bytes);
    uint64_t state = a.seed;
    for (uint64_t i = 0; i < cols * b.batch; i++) { /* uniform in [-1, 1), deterministic */
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(state >> 40) / (double)(1u << 24) * 2.0 - 1.0);
    }
    b.x = x;
    sgfp4_matvec_options qo;
    sgfp4_matvec_options_init(&qo);
    qo.backend = a.backend;
    double q[16];
    for (unsigned r = 0; r < 16; r++) {
        const double t0 = tool_now();
        if (sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, b.batch, 0, b.q8, b.q8_bytes, &qo,
                                  NULL) != SGFP4_OK) {
            cli_error(a.command, "quantize failed");
            goto done;
        }
        q[r] = (tool_now() - t0) / b.batch;
    }
    const double quantize_s = bench_median(q, 16);
    if (a.threads > 1 && sgfp4_thread_pool_create(a.threads, &b.pool) != SGFP4_OK) {
        cli_error(a.command, "could not start %u threads", a.threads);
        goto done;
    }
    char why[300] = "";
    if (!a.given[KEY_NO_CHECK] && !check_exact(&b, why, sizeof why)) {
        cli_error(a.command, "not bit-exact: %s", why);
        goto done;
    }
    unsigned threads[2] = {1, a.threads};
    const int counts = a.threads > 1 ? 2 : 1;
    arm_stats res[2][2][ARMS];
    if (!measure(&b, threads, counts, res)) {
        cli_error(a.command, "a product call failed");
        goto done;
    }
    report(&b, in.source, threads, counts, res, quantize_s);
    rc = CLI_EXIT_OK;
done:
    sgfp4_thread_pool_free(b.pool);
    sgfp4_matvec_plan_free(b.plan);
    free(x);
    free(b.q8);
    free(b.y);
    free(b.evict);
    bench_input_close(&in);
    return rc;
}
