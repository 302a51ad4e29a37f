/* The cancel hooks: sgfp4_encode_options.cancel stops a tensor encode (at its start, or
 * while it runs, on 1, 2, 3 and 7 threads) with SGFP4_ERR_CANCELLED and no output; a hook
 * that never stops is asked and changes no byte; sgfp4_model_write_options.cancel stops a
 * whole-model encode (before anything is written, or while the output is written) and a
 * model decode.
 * SPDX-License-Identifier: MIT */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "sgfp4_model.h"
#include "support/buffer_sink.h"

static float *make_matrix(uint64_t rows, uint64_t cols, uint32_t seed)
{
    float *m = malloc(rows * cols * sizeof *m);
    assert_non_null(m);
    uint32_t x = seed * 2654435761u + 1u;
    for (uint64_t i = 0; i < rows * cols; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        m[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.05f;
    }
    return m;
}

/* Says stop from its `stop_at`-th call on, and counts the calls. */
typedef struct canceller {
    unsigned calls, stop_at;
} canceller;

static int cancel_hook(void *user)
{
    canceller *c = user;
    c->calls++;
    return c->calls >= c->stop_at;
}

static sgfp4_encode_options options(int kind, unsigned threads, canceller *c)
{
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.profile = kind == 2 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
    o.policy = kind == 1 ? SGFP4_POLICY_THRESHOLD : SGFP4_POLICY_RATE;
    o.threads = threads;
    if (c) {
        o.cancel = cancel_hook;
        o.cancel_user = c;
    }
    return o;
}

static const unsigned thread_counts[] = {1, 2, 3, 7};

/* A hook that says stop when it is first asked, as the encode starts: nothing is encoded,
 * into a buffer of the library's or the caller's. */
static void stop_at_the_start(void **state)
{
    (void)state;
    const uint64_t rows = 300, cols = 200;
    float *m = make_matrix(rows, cols, 1);
    const size_t cap = sgfp4_encode_bound(SGFP4_PROFILE_V1, rows, cols);
    uint8_t *dst = malloc(cap);
    assert_non_null(dst);
    for (int kind = 0; kind < 3; kind++)
        for (unsigned t = 0; t < 4; t++) {
            canceller c = {0, 1};
            const sgfp4_encode_options o = options(kind, thread_counts[t], &c);
            void *bytes = dst;
            size_t size = 7;
            assert_int_equal(sgfp4_encode_alloc(m, rows, cols, 0, &bytes, &size, &o, NULL),
                             SGFP4_ERR_CANCELLED);
            assert_null(bytes);
            assert_int_equal(size, 0);
            assert_int_equal(c.calls, 1);
            c = (canceller){0, 1};
            size = 7;
            assert_int_equal(sgfp4_encode(m, rows, cols, 0, dst, cap, &size, &o, NULL),
                             SGFP4_ERR_CANCELLED);
            assert_int_equal(size, 0);
            assert_int_equal(c.calls, 1);
        }
    free(dst);
    free(m);
}

/* A hook that says stop the second time it is asked, about 10 ms into an encode that takes
 * longer (4M weights): the encode stops there, on any thread count. */
static void stop_while_running(void **state)
{
    (void)state;
    const uint64_t rows = 2048, cols = 2048;
    float *m = make_matrix(rows, cols, 2);
    for (int kind = 0; kind < 3; kind++)
        for (unsigned t = 0; t < 4; t++) {
            canceller c = {0, 2};
            const sgfp4_encode_options o = options(kind, thread_counts[t], &c);
            void *bytes = NULL;
            size_t size = 0;
            assert_int_equal(sgfp4_encode_alloc(m, rows, cols, 0, &bytes, &size, &o, NULL),
                             SGFP4_ERR_CANCELLED);
            assert_null(bytes);
            assert_int_equal(c.calls, 2);
        }
    free(m);
}

/* A hook that never says stop is asked, and the bytes are those of an encode without one. */
static void a_hook_changes_no_byte(void **state)
{
    (void)state;
    const uint64_t rows = 700, cols = 900;
    float *m = make_matrix(rows, cols, 3);
    for (int kind = 0; kind < 3; kind++) {
        const sgfp4_encode_options plain = options(kind, 1, NULL);
        void *want = NULL;
        size_t want_size = 0;
        assert_int_equal(sgfp4_encode_alloc(m, rows, cols, 0, &want, &want_size, &plain, NULL),
                         SGFP4_OK);
        for (unsigned t = 0; t < 4; t++) {
            canceller c = {0, UINT_MAX};
            const sgfp4_encode_options o = options(kind, thread_counts[t], &c);
            void *bytes = NULL;
            size_t size = 0;
            assert_int_equal(sgfp4_encode_alloc(m, rows, cols, 0, &bytes, &size, &o, NULL),
                             SGFP4_OK);
            assert_true(c.calls >= 1);
            assert_int_equal(size, want_size);
            assert_memory_equal(bytes, want, size);
            sgfp4_free(bytes);
        }
        sgfp4_free(want);
    }
    free(m);
}

/* ---- whole models ------------------------------------------------------------------------ */

/* A float32 model of three 512x512 matrices (each quantized by the default policy) and a
 * norm vector (passed through). */
static buffer plain_model(void)
{
    static const uint64_t matrix[2] = {512, 512}, vector[1] = {512};
    const sgfp4_st_entry entries[] = {{"layers.0.attn.weight", SGFP4_ST_F32, 2, matrix},
                                      {"layers.0.mlp.weight", SGFP4_ST_F32, 2, matrix},
                                      {"layers.1.attn.weight", SGFP4_ST_F32, 2, matrix},
                                      {"layers.0.norm.weight", SGFP4_ST_F32, 1, vector}};
    buffer b = {0};
    const sgfp4_sink sink = {buffer_write, &b};
    sgfp4_st_writer *w = NULL;
    assert_int_equal(sgfp4_st_writer_begin(entries, 4, NULL, NULL, 0, &sink, &w, NULL),
                     SGFP4_OK);
    for (uint32_t k = 0; k < 3; k++) {
        float *m = make_matrix(512, 512, 10 + k);
        assert_int_equal(sgfp4_st_writer_write(w, m, 512 * 512 * sizeof *m), SGFP4_OK);
        free(m);
    }
    float norm[512];
    for (unsigned i = 0; i < 512; i++)
        norm[i] = 1.0f;
    assert_int_equal(sgfp4_st_writer_write(w, norm, sizeof norm), SGFP4_OK);
    assert_int_equal(sgfp4_st_writer_finish(w, NULL), SGFP4_OK);
    sgfp4_st_writer_free(w);
    return b;
}

/* Says stop from its `stop_at`-th call on, or once the output has `stop_after_bytes` bytes
 * (0: never). */
typedef struct job_canceller {
    unsigned calls, stop_at;
    const buffer *out;
    size_t stop_after_bytes;
} job_canceller;

static int job_hook(void *user)
{
    job_canceller *c = user;
    c->calls++;
    return c->calls >= c->stop_at || (c->stop_after_bytes && c->out->size >= c->stop_after_bytes);
}

static sgfp4_status encode_model(const sgfp4_model *m, unsigned threads, job_canceller *c,
                                 buffer *out, sgfp4_diag *diag)
{
    sgfp4_model_policy *policy = NULL;
    assert_int_equal(sgfp4_model_policy_create(&policy), SGFP4_OK);
    sgfp4_model_policy_defaults(policy)->threads = threads;
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.cancel = job_hook;
    o.cancel_user = c;
    const sgfp4_sink sink = {buffer_write, out};
    const sgfp4_status s = sgfp4_model_encode(m, policy, &sink, &o, diag);
    sgfp4_model_policy_free(policy);
    return s;
}

static void model_jobs_stop(void **state)
{
    (void)state;
    buffer plain = plain_model();
    sgfp4_model *m = NULL;
    assert_int_equal(sgfp4_model_open_memory(plain.data, plain.size, &m, NULL, NULL), SGFP4_OK);
    sgfp4_diag diag;
    for (unsigned t = 0; t < 4; t++) {
        /* asked first before the first tensor: nothing encoded, nothing written */
        buffer out = {0};
        job_canceller c = {0, 1, &out, 0};
        assert_int_equal(encode_model(m, thread_counts[t], &c, &out, &diag),
                         SGFP4_ERR_CANCELLED);
        assert_int_equal(diag.status, SGFP4_ERR_CANCELLED);
        assert_non_null(strstr(diag.message, "cancelled"));
        assert_int_equal(c.calls, 1);
        assert_int_equal(out.size, 0);
        /* asked a fourth time: the job asks before each tensor, the encoder as each
         * tensor's encode starts and while it runs, so this is within the tensors, before
         * anything is written */
        c = (job_canceller){0, 4, &out, 0};
        assert_int_equal(encode_model(m, thread_counts[t], &c, &out, &diag),
                         SGFP4_ERR_CANCELLED);
        assert_int_equal(out.size, 0);
        /* once the header is out: the job stops while it writes the data */
        c = (job_canceller){0, UINT_MAX, &out, 1};
        assert_int_equal(encode_model(m, thread_counts[t], &c, &out, &diag),
                         SGFP4_ERR_CANCELLED);
        assert_true(out.size > 0 && out.size < plain.size / 4);
        free(out.data);
    }
    /* a hook that never says stop: the whole model, then its decode stopped at once */
    buffer out = {0};
    job_canceller never = {0, UINT_MAX, &out, 0};
    assert_int_equal(encode_model(m, 2, &never, &out, &diag), SGFP4_OK);
    assert_true(never.calls >= 8); /* 4 tensors, 3 encodes, the data written */
    sgfp4_model *q = NULL;
    assert_int_equal(sgfp4_model_open_memory(out.data, out.size, &q, NULL, NULL), SGFP4_OK);
    buffer restored = {0};
    job_canceller c = {0, 1, &restored, 0};
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.cancel = job_hook;
    o.cancel_user = &c;
    const sgfp4_sink sink = {buffer_write, &restored};
    assert_int_equal(sgfp4_model_decode(q, &sink, &o, &diag), SGFP4_ERR_CANCELLED);
    assert_int_equal(c.calls, 1);
    sgfp4_model_close(q);
    free(restored.data);
    free(out.data);
    sgfp4_model_close(m);
    free(plain.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stop_at_the_start),
        cmocka_unit_test(stop_while_running),
        cmocka_unit_test(a_hook_changes_no_byte),
        cmocka_unit_test(model_jobs_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
