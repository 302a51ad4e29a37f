/* The caller-owned thread pool (sgfp4_thread_pool): its API, every item of a run done exactly
 * once for any count and thread number, a run stopped by its caller's check (no item begun
 * after it, every begun one finished before the run returns), and products on a pool
 * bit-identical to the scalar oracle: pools of 1 to 5 threads, thread counts above and
 * below them, row ranges, hundreds of calls on one pool with changing thread counts
 * (workers found spinning and found asleep), and several threads sharing one pool at once.
 * SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/pool.h"
#include "sgfp4.h"
#include "datagen/generator.h"

static void api(void **state)
{
    (void)state;
    sgfp4_thread_pool *p = (sgfp4_thread_pool *)&p;
    assert_int_equal(sgfp4_thread_pool_create(2, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_thread_pool_create(SGFP4_MAX_THREADS + 1, &p), SGFP4_ERR_ARGUMENT);
    assert_null(p);
    assert_int_equal(sgfp4_thread_pool_threads(NULL), 0);
    sgfp4_thread_pool_free(NULL);
    static const unsigned sizes[] = {0, 1, 2, 5};
    static const unsigned expect[] = {1, 1, 2, 5};
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(sgfp4_thread_pool_create(sizes[i], &p), SGFP4_OK);
        assert_non_null(p);
        assert_int_equal(sgfp4_thread_pool_threads(p), expect[i]);
        sgfp4_thread_pool_free(p);
    }
}

typedef struct item_log {
    _Atomic unsigned *runs; /* times each item ran */
    _Atomic unsigned bad_worker;
    unsigned threads;
} item_log;

static void log_item(void *context, uint64_t item, unsigned worker)
{
    item_log *l = context;
    atomic_fetch_add(&l->runs[item], 1u);
    if (worker >= l->threads)
        atomic_store(&l->bad_worker, 1u);
}

/* sgfp4_pool_run: every item once, worker indices below the threads used, for counts
 * below, at and above the pool's threads and thread numbers above the pool's. */
static void every_item_once(void **state)
{
    (void)state;
    sgfp4_thread_pool *p;
    assert_int_equal(sgfp4_thread_pool_create(4, &p), SGFP4_OK);
    static const uint64_t counts[] = {0, 1, 3, 4, 7, 1000, 20000};
    static const unsigned threads[] = {1, 2, 4, 9};
    for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (unsigned t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            item_log l = {calloc(counts[c] + 1, sizeof(unsigned)), 0, threads[t] < 4 ? threads[t] : 4};
            assert_non_null(l.runs);
            sgfp4_pool_run(p, threads[t], counts[c], log_item, &l);
            for (uint64_t i = 0; i < counts[c]; i++)
                if (l.runs[i] != 1)
                    fail_msg("count %llu, %u threads: item %llu ran %u times",
                             (unsigned long long)counts[c], threads[t], (unsigned long long)i,
                             (unsigned)l.runs[i]);
            assert_int_equal(l.bad_worker, 0);
            free((void *)l.runs);
        }
    sgfp4_thread_pool_free(p);
}

/* A v2 tensor of every layout with its plan, activations and the scalar oracle's results. */
typedef struct fixture {
    uint8_t *bytes;
    sgfp4_tensor *tensor;
    sgfp4_matvec_plan *plan;
    uint64_t rows, cols;
    float *x;
    void *q8;
    size_t q8_size;
    float *want_a, *want_b; /* [batch][rows] */
} fixture;

enum { BATCH = 3 };

static void fixture_make(fixture *f, uint64_t rows, uint64_t cols)
{
    memset(f, 0, sizeof *f);
    f->rows = rows;
    f->cols = cols;
    const gen_params params = gen_shape_params(2, rows, cols);
    size_t size;
    f->bytes = gen_container_bytes(&params, 77, &size);
    assert_non_null(f->bytes);
    assert_int_equal(sgfp4_tensor_open(f->bytes, size, SGFP4_PROFILE_V2, rows, cols, &f->tensor,
                                       NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_matvec_plan_create(f->tensor, &f->plan), SGFP4_OK);
    f->x = malloc(BATCH * cols * sizeof *f->x);
    assert_non_null(f->x);
    gen_rng r = {5};
    for (uint64_t i = 0; i < BATCH * cols; i++)
        f->x[i] = (float)((int)gen_below(&r, 2001) - 1000) / 256.0f;
    f->q8_size = sgfp4_matvec_q8_bytes(cols, BATCH);
    f->q8 = malloc(f->q8_size);
    assert_non_null(f->q8);
    assert_int_equal(sgfp4_matvec_quantize(f->x, SGFP4_DTYPE_F32, cols, BATCH, 0, f->q8,
                                           f->q8_size, NULL, NULL),
                     SGFP4_OK);
    sgfp4_matvec_options scalar;
    sgfp4_matvec_options_init(&scalar);
    scalar.backend = SGFP4_BACKEND_SCALAR;
    const size_t cap = BATCH * rows * sizeof(float);
    f->want_a = malloc(cap);
    f->want_b = malloc(cap);
    assert_non_null(f->want_a);
    assert_non_null(f->want_b);
    assert_int_equal(sgfp4_matvec_q8(f->plan, f->q8, f->q8_size, BATCH, 0, rows, f->want_a, 0,
                                     cap, &scalar),
                     SGFP4_OK);
    assert_int_equal(sgfp4_matvec_float(f->plan, f->x, SGFP4_DTYPE_F32, BATCH, 0, 0, rows,
                                        f->want_b, 0, cap, &scalar),
                     SGFP4_OK);
}

static void fixture_free(fixture *f)
{
    free(f->want_a);
    free(f->want_b);
    free(f->q8);
    free(f->x);
    sgfp4_matvec_plan_free(f->plan);
    sgfp4_tensor_close(f->tensor);
    free(f->bytes);
}

/* Products of rows [r0, r1), both classes, on `threads` threads of `pool`, against the
 * oracle; returns 0 or the first differing output index + 1. */
static uint64_t check_products(const fixture *f, sgfp4_thread_pool *pool, unsigned threads,
                               uint64_t r0, uint64_t r1)
{
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.threads = threads;
    o.pool = pool;
    const uint64_t n = r1 - r0;
    float *y = malloc(BATCH * n * sizeof *y);
    if (!y)
        return UINT64_MAX;
    uint64_t bad = 0;
    for (int b = 0; b < 2 && !bad; b++) {
        const sgfp4_status s = b ? sgfp4_matvec_float(f->plan, f->x, SGFP4_DTYPE_F32, BATCH, 0, r0,
                                                      r1, y, 0, BATCH * n * sizeof *y, &o)
                                 : sgfp4_matvec_q8(f->plan, f->q8, f->q8_size, BATCH, r0, r1, y, 0,
                                                   BATCH * n * sizeof *y, &o);
        if (s != SGFP4_OK)
            bad = UINT64_MAX;
        const float *want = b ? f->want_b : f->want_a;
        for (unsigned v = 0; v < BATCH && !bad; v++)
            for (uint64_t r = r0; r < r1 && !bad; r++)
                if (memcmp(&y[v * n + (r - r0)], &want[v * f->rows + r], sizeof(float)) != 0)
                    bad = v * n + (r - r0) + 1;
    }
    free(y);
    return bad;
}

/* ---- stopping a run ---- */

typedef struct stop_log {
    _Atomic unsigned *runs; /* times each item ran */
    _Atomic unsigned running, begun;
    _Atomic unsigned by_caller;
    unsigned stop_after; /* the caller's check says stop once it ran this many items */
    unsigned checks;
} stop_log;

static void stop_item(void *context, uint64_t item, unsigned worker)
{
    stop_log *l = context;
    atomic_fetch_add(&l->running, 1u);
    atomic_fetch_add(&l->begun, 1u);
    atomic_fetch_add(&l->runs[item], 1u);
    if (worker == 0)
        atomic_fetch_add(&l->by_caller, 1u);
    nanosleep(&(struct timespec){0, 20 * 1000}, NULL); /* long enough for others to start */
    atomic_fetch_sub(&l->running, 1u);
}

static bool stop_check(void *user)
{
    stop_log *l = user;
    l->checks++;
    return atomic_load(&l->by_caller) >= l->stop_after;
}

/* sgfp4_pool_run_until: the check runs on the caller, before each of its items; once it
 * says stop, no item begins, those begun finish before the run returns, none ran twice. */
static void a_run_stops_when_its_caller_says(void **state)
{
    (void)state;
    sgfp4_thread_pool *p;
    assert_int_equal(sgfp4_thread_pool_create(4, &p), SGFP4_OK);
    enum { COUNT = 400 };
    for (unsigned threads = 1; threads <= 4; threads++)
        for (unsigned stop_after = 0; stop_after < 4; stop_after++) {
            stop_log l = {calloc(COUNT, sizeof(unsigned)), 0, 0, 0, stop_after, 0};
            assert_non_null(l.runs);
            const sgfp4_pool_stop stop = {stop_check, &l};
            assert_true(sgfp4_pool_run_until(p, threads, COUNT, stop_item, &l, &stop));
            assert_int_equal(atomic_load(&l.running), 0);
            assert_int_equal(l.by_caller, stop_after);
            assert_true(l.checks == stop_after + 1);
            unsigned begun = 0;
            for (unsigned i = 0; i < COUNT; i++) {
                assert_true(l.runs[i] <= 1);
                begun += l.runs[i];
            }
            assert_int_equal(begun, l.begun);
            assert_true(begun < COUNT);
            if (threads == 1)
                assert_int_equal(begun, stop_after);
            /* a check that never says stop: every item, once */
            stop_log all = {calloc(COUNT, sizeof(unsigned)), 0, 0, 0, COUNT + 1, 0};
            assert_non_null(all.runs);
            const sgfp4_pool_stop never = {stop_check, &all};
            assert_false(sgfp4_pool_run_until(p, threads, COUNT, stop_item, &all, &never));
            for (unsigned i = 0; i < COUNT; i++)
                assert_int_equal(all.runs[i], 1);
            free((void *)l.runs);
            free((void *)all.runs);
        }
    sgfp4_thread_pool_free(p);
}

static void products_on_pools(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, 640, 200); /* 10 macroblock rows, a padded last block column */
    static const unsigned sizes[] = {1, 2, 3, 4, 5};
    for (unsigned s = 0; s < 5; s++) {
        sgfp4_thread_pool *p;
        assert_int_equal(sgfp4_thread_pool_create(sizes[s], &p), SGFP4_OK);
        for (unsigned t = 0; t <= 8; t++) {
            static const uint64_t ranges[][2] = {{0, 640}, {0, 1}, {63, 65}, {100, 630}};
            for (unsigned r = 0; r < 4; r++)
                if (check_products(&f, p, t, ranges[r][0], ranges[r][1]))
                    fail_msg("pool of %u, %u threads, rows [%llu, %llu): differs from the "
                             "oracle",
                             sizes[s], t, (unsigned long long)ranges[r][0],
                             (unsigned long long)ranges[r][1]);
        }
        sgfp4_thread_pool_free(p);
    }
    fixture_free(&f);
}

/* Many calls on one pool, with 1 to 4 threads in turn (workers left out of one run join
 * the next), some after a pause long enough for its workers to sleep. */
static void many_calls_on_one_pool(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, 256, 130);
    sgfp4_thread_pool *p;
    assert_int_equal(sgfp4_thread_pool_create(4, &p), SGFP4_OK);
    for (unsigned i = 0; i < 300; i++) {
        if (i % 50 == 49)
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        if (check_products(&f, p, 1 + i % 4, 0, 256))
            fail_msg("call %u (%u threads) differs from the oracle", i, 1 + i % 4);
    }
    sgfp4_thread_pool_free(p);
    fixture_free(&f);
}

typedef struct sharer {
    const fixture *f;
    sgfp4_thread_pool *pool;
    unsigned index;
    unsigned failures;
} sharer;

static void *share_pool(void *arg)
{
    sharer *s = arg;
    for (unsigned i = 0; i < 40; i++) {
        const uint64_t r0 = (s->index * 37 + i * 11) % 200, r1 = r0 + 1 + (i * 53) % 56;
        if (check_products(s->f, s->pool, 1 + (i + s->index) % 4, r0, r1))
            s->failures++;
    }
    return NULL;
}

/* Four threads calling products on one pool at once take turns and all get the oracle's
 * bits. */
static void threads_sharing_a_pool(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, 256, 130);
    sgfp4_thread_pool *p;
    assert_int_equal(sgfp4_thread_pool_create(3, &p), SGFP4_OK);
    pthread_t ids[4];
    sharer sh[4];
    for (unsigned k = 0; k < 4; k++) {
        sh[k] = (sharer){&f, p, k, 0};
        assert_int_equal(pthread_create(&ids[k], NULL, share_pool, &sh[k]), 0);
    }
    for (unsigned k = 0; k < 4; k++) {
        pthread_join(ids[k], NULL);
        assert_int_equal(sh[k].failures, 0);
    }
    sgfp4_thread_pool_free(p);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(api),
        cmocka_unit_test(every_item_once),
        cmocka_unit_test(a_run_stops_when_its_caller_says),
        cmocka_unit_test(products_on_pools),
        cmocka_unit_test(many_calls_on_one_pool),
        cmocka_unit_test(threads_sharing_a_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
