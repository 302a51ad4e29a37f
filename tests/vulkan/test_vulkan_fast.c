/* The Vulkan fast products (DECISIONS D9, sgfp4_vk_matvec_options.fast) against the D8
 * products of the CPU's scalar oracle and a float64 product:
 * - the bound: |y_fast - y_D8| <= c * 2^-24 * sum_j |w_j x_j| for every output, with c the
 *   constant docs/matvec.md derives for the Vulkan backend (Class A: 22 + 2L, Class B:
 *   16 + 2L, L = ceil(log2 ceil(I / 64))), w the D1 weights and x the activations as the
 *   products read them (Class A: dequantized q_j * d_b; Class B: |x| < 2^-60 read as +0);
 *   and the fast result's own distance to the float64 product within its part of c;
 * - on the random corpus, odd shapes of every layout mix, encoder output, real tensors
 *   (../shared/weights) and hostile activations (huge, tiny, mixed signs, cancellation),
 *   both classes, both profiles, f32 and f16 activations, both product modules;
 * - determinism: the same bits run to run, for every split of a band into workgroups and
 *   kernel flag, and for a vector alone or inside a batch;
 * - opt-in: fast outputs differ from D8 somewhere (the fast kernels do run), a fast value
 *   other than 0 or 1 is refused, and the CPU backends refuse fast = 1.
 * Exits 77 (skip) where no Vulkan device exists.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "sgfp4_config.h"
#include "sgfp4_model.h"
#include "sgfp4_vulkan.h"
#include "sgfp4_experimental.h"
#include "datagen/generator.h"
#include "datagen/reference_numbers.h"
#include "support/options.h"
#include "support/real_matrices.h"

enum { CTX_DEFAULT, CTX_PLAIN_DOT, CTX_COUNT };
static sgfp4_vk_context *contexts[CTX_COUNT];
static const char *const context_names[CTX_COUNT] = {"default", "written-out dot"};

static gen_rng rng = {909};
static uint32_t below(uint32_t n) { return gen_below(&rng, n); }

/* How many outputs the fast products gave other bits than D8 (the fast kernels ran). */
static uint64_t differing, compared;

/* ---- activations ---- */

typedef enum x_kind { X_GAUSS, X_HUGE, X_TINY, X_MIXED_SIGN, X_CANCEL, X_ZEROS, X_KINDS } x_kind;
static const char *const kind_names[X_KINDS] = {"gauss", "huge", "tiny", "mixed-sign",
                                                "cancellation", "zeros"};

static float gauss(int scale)
{
    double s = 0;
    for (int i = 0; i < 4; i++)
        s += (double)below(1u << 20) / (1u << 20);
    return (float)ldexp(s - 2.0, scale);
}

/* One activation of `kind` at column j (w0: row 0's weights, for the cancellation). */
static float value_of(x_kind kind, uint64_t j, uint64_t cols, const float *w0, int scale)
{
    const float sign = below(2) ? -1.0f : 1.0f;
    switch (kind) {
    case X_GAUSS: return gauss(scale);
    case X_HUGE: { /* large and of very different sizes: products stay finite */
        static const float v[] = {1e25f, 0x1p80f, 1.5f, 3e-3f, 1e20f, 0x1p-30f};
        return sign * v[below(6)];
    }
    case X_TINY: { /* at and around the floors of both classes */
        static const float v[] = {0x1p-41f, 0x1p-40f, 0x1p-59f, 0x1p-60f, 0x1p-61f,
                                  0x1.8p-50f, 0x1p-30f, 0.0f};
        return sign * v[below(8)];
    }
    case X_MIXED_SIGN: return ldexpf(sign, (int)below(60) - 30);
    case X_CANCEL: { /* row 0's terms: the first half positive, the second half negative,
                      * the same sizes: its sum cancels to far below the sum of its sizes */
        const float w = w0[j] == 0.0f ? 1.0f : w0[j];
        const float m = ldexpf(1.0f + (float)below(8) / 8.0f, scale);
        return (2 * j < cols) == (w > 0) ? m : -m;
    }
    case X_ZEROS: return below(2) ? 0.0f : -0.0f;
    default: return 0.0f;
    }
}

/* x[batch][cols] of `kind`; F16: the values are those of the halves in h. */
static void fill_x(x_kind kind, uint64_t cols, unsigned batch, sgfp4_dtype dtype,
                   const float *w0, float *x, uint16_t *h)
{
    const int f16 = dtype == SGFP4_DTYPE_F16;
    for (unsigned n = 0; n < batch; n++) {
        const int scale = f16 ? (int)below(8) - 6 : (int)below(41) - 20;
        for (uint64_t j = 0; j < cols; j++)
            x[n * cols + j] = value_of(kind, j, cols, w0, scale);
    }
    if (f16)
        for (size_t i = 0; i < batch * cols; i++) {
            if (fabsf(x[i]) > 65504.0f)
                x[i] = copysignf(65504.0f, x[i]);
            h[i] = ref_float_to_half(x[i]);
            x[i] = (float)ref_half_value(h[i]);
        }
}

/* ---- the bound ---- */

/* L = ceil(log2 n) for the row's n = ceil(cols / 64) blocks. */
static unsigned tree_levels(uint64_t cols)
{
    const uint64_t n = (cols + 63) / 64;
    unsigned l = 0;
    while ((UINT64_C(1) << l) < n)
        l++;
    return l;
}

/* D9's constant c of the Vulkan backend (docs/matvec.md, "Fast products"). */
static double bound_c(int class_a, uint64_t cols)
{
    return (class_a ? 22.0 : 16.0) + 2.0 * tree_levels(cols);
}

/* The fast product's own distance to the float64 product: its roundings (Class A 16 + L,
 * Class B 8 + L), with a unit for the D1 rounding of w_j and the gamma factors, and one to
 * spare. */
static double fast_alone_c(int class_a, uint64_t cols)
{
    return (class_a ? 18.0 : 10.0) + tree_levels(cols);
}

/* The activation value the products read: Class A the dequantized q_j * d_b of vector n,
 * Class B x with |x| < 2^-60 read as +0. */
static double x_read(int class_a, const uint8_t *q8, size_t vector_bytes, uint64_t tiles_x,
                     const float *x, uint64_t cols, unsigned n, uint64_t j)
{
    if (class_a) {
        const uint8_t *v = q8 + n * vector_bytes;
        float d;
        memcpy(&d, v + tiles_x * 64 + 4 * (j / 64), 4);
        return (double)(int8_t)v[j] * (double)d;
    }
    const float xv = x[n * cols + j];
    return fabsf(xv) < 0x1p-60f ? 0.0 : (double)xv;
}

/* Checks every output of the fast product `got` against D8's `want` and the float64 product
 * of the decoded weights w. */
static void check_bound(const char *what, int class_a, const float *w, uint64_t rows,
                        uint64_t cols, unsigned batch, const uint8_t *q8, const float *x,
                        const float *want, const float *got)
{
    const uint64_t tiles_x = (cols + 63) / 64;
    const size_t vector_bytes = class_a ? sgfp4_matvec_q8_bytes(cols, 1) : 0;
    const double u = 0x1p-24;
    const double c = bound_c(class_a, cols), own = fast_alone_c(class_a, cols);
    double *xd = malloc(sizeof *xd * cols);
    assert_non_null(xd);
    for (unsigned n = 0; n < batch; n++) {
        for (uint64_t j = 0; j < cols; j++)
            xd[j] = x_read(class_a, q8, vector_bytes, tiles_x, x, cols, n, j);
        for (uint64_t r = 0; r < rows; r++) {
            double sum = 0, size = 0;
            for (uint64_t j = 0; j < cols; j++) {
                sum += (double)w[r * cols + j] * xd[j];
                size += fabs((double)w[r * cols + j] * xd[j]);
            }
            const float g = got[n * rows + r], d8 = want[n * rows + r];
            if (!isfinite(g) || !isfinite(d8))
                fail_msg("%s: vector %u row %llu: fast %a, D8 %a: not finite", what, n,
                         (unsigned long long)r, (double)g, (double)d8);
            const double diff = fabs((double)g - (double)d8);
            if (diff > c * u * size)
                fail_msg("%s [class %c]: vector %u row %llu: |fast - D8| = %a > %.0f * 2^-24 * "
                         "%a (fast %a, D8 %a)",
                         what, class_a ? 'A' : 'B', n, (unsigned long long)r, diff, c, size,
                         (double)g, (double)d8);
            if (fabs((double)g - sum) > own * u * size + 0x1p-1022)
                fail_msg("%s [class %c]: vector %u row %llu: |fast - float64| = %a > %.0f * "
                         "2^-24 * %a",
                         what, class_a ? 'A' : 'B', n, (unsigned long long)r,
                         fabs((double)g - sum), own, size);
            compared++;
            differing += memcmp(&g, &d8, 4) != 0;
        }
    }
    free(xd);
}

/* ---- one product ---- */

typedef struct fast_case {
    const char *what;
    int ctx;
    int class_a;
    sgfp4_dtype dtype;
    unsigned batch;
    x_kind kind;
} fast_case;

static sgfp4_vk_buffer *device_buffer(sgfp4_vk_context *ctx, uint64_t size)
{
    sgfp4_vk_buffer *b = NULL;
    sgfp4_diag diag;
    if (sgfp4_vk_buffer_create(ctx, size, &b, &diag) != SGFP4_OK)
        fail_msg("buffer of %llu bytes: %s", (unsigned long long)size, diag.message);
    return b;
}

/* The fast product of vectors [first, first + batch) of the staged activations, with these
 * kernel options, into y (batch * rows floats). */
static void run_fast(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *vt, int class_a,
                     sgfp4_dtype dtype, uint64_t rows, uint64_t cols, sgfp4_vk_buffer *xb,
                     sgfp4_vk_buffer *qb, unsigned first, unsigned batch, unsigned slices,
                     unsigned flags, float *y)
{
    sgfp4_vk_matvec_options o;
    sgfp4_vk_matvec_options_init(&o);
    o.fast = 1;
    o.slices = slices;
    o.flags = flags;
    sgfp4_vk_buffer *yb = device_buffer(ctx, sizeof *y * batch * rows);
    sgfp4_diag diag;
    sgfp4_status s;
    if (class_a) {
        const size_t vector_bytes = sgfp4_matvec_q8_bytes(cols, 1);
        s = sgfp4_vk_matvec_q8(ctx, vt, sgfp4_vk_buffer_handle(qb), first * vector_bytes, batch,
                               sgfp4_vk_buffer_handle(yb), 0, 0, &o, &diag);
    } else {
        s = sgfp4_vk_matvec_float(ctx, vt, sgfp4_vk_buffer_handle(xb),
                                  first * cols * sgfp4_dtype_size(dtype), dtype, batch, 0,
                                  sgfp4_vk_buffer_handle(yb), 0, 0, &o, &diag);
    }
    if (s != SGFP4_OK)
        fail_msg("fast product (slices %u, flags %u, batch %u): %s", slices, flags, batch,
                 diag.message);
    assert_int_equal(sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(yb), 0, y,
                                          sizeof *y * batch * rows, &diag),
                     SGFP4_OK);
    sgfp4_vk_buffer_free(ctx, yb);
}

/* A valid slices value other than the default for `cols` columns, batch and workgroup rows. */
static unsigned some_slices(uint64_t cols, unsigned batch, unsigned rows)
{
    uint64_t padded = 1;
    while (padded * 64 < cols)
        padded *= 2;
    const unsigned subs = (batch > 8 ? 128 : 256) / rows;
    unsigned max = 1;
    while (max < 64 && (uint64_t)subs * max * 2 <= padded)
        max *= 2;
    return 1u << below(1 + (unsigned)log2(max));
}

/* Runs the case on tensor t (resident as vt): the bound against D8 and float64 on every
 * output; then `splits` other runs (other slices, kernel flags, the vector inside another
 * batch) and each must give the first run's bits. */
static void check_case(const fast_case *c, const sgfp4_tensor *t, const sgfp4_vk_tensor *vt,
                       sgfp4_profile profile, uint64_t rows, uint64_t cols, unsigned splits)
{
    sgfp4_vk_context *ctx = contexts[c->ctx];
    const unsigned batch = c->batch;
    float *w = malloc(sizeof *w * rows * cols);
    assert_non_null(w);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, w, 0, sizeof *w * rows * cols, NULL),
                     SGFP4_OK);
    /* staged: the case's batch, then one more vector (below the largest batch) for the
     * in-a-batch check */
    const unsigned staged = batch < SGFP4_MATVEC_MAX_BATCH ? batch + 1 : batch;
    float *x = malloc(sizeof *x * staged * cols);
    uint16_t *h = malloc(sizeof *h * staged * cols);
    assert_true(x && h);
    fill_x(c->kind, cols, staged, c->dtype, w, x, h);
    const void *host_x = c->dtype == SGFP4_DTYPE_F16 ? (const void *)h : (const void *)x;
    const size_t x_bytes = staged * cols * sgfp4_dtype_size(c->dtype);

    sgfp4_matvec_options scalar;
    sgfp4_matvec_options_init(&scalar);
    scalar.backend = SGFP4_BACKEND_SCALAR;
    scalar.threads = 8;
    sgfp4_matvec_plan *plan = NULL;
    assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, staged);
    uint8_t *q8 = malloc(q8_size);
    float *want = malloc(sizeof *want * batch * rows);
    float *got = malloc(sizeof *got * batch * rows);
    float *again = malloc(sizeof *again * (batch > 2 ? batch : 2) * rows);
    assert_true(q8 && want && got && again);
    if (c->class_a) {
        assert_int_equal(sgfp4_matvec_quantize(host_x, c->dtype, cols, staged, 0, q8, q8_size,
                                               &scalar, NULL),
                         SGFP4_OK);
        assert_int_equal(sgfp4_matvec_q8(plan, q8, q8_size, batch, 0, rows, want, 0,
                                         sizeof *want * batch * rows, &scalar),
                         SGFP4_OK);
    } else {
        assert_int_equal(sgfp4_matvec_float(plan, host_x, c->dtype, batch, 0, 0, rows, want, 0,
                                            sizeof *want * batch * rows, &scalar),
                         SGFP4_OK);
    }
    sgfp4_vk_buffer *xb = device_buffer(ctx, x_bytes);
    sgfp4_vk_buffer *qb = device_buffer(ctx, q8_size);
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(xb), 0, host_x, x_bytes,
                                           &diag),
                     SGFP4_OK);
    assert_int_equal(sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(qb), 0, q8, q8_size,
                                           &diag),
                     SGFP4_OK);

    run_fast(ctx, vt, c->class_a, c->dtype, rows, cols, xb, qb, 0, batch, 0, 0, got);
    char what[200];
    snprintf(what, sizeof what, "%s [%s, %s, %s x, batch %u]", c->what, context_names[c->ctx],
             kind_names[c->kind], c->dtype == SGFP4_DTYPE_F16 ? "f16" : "f32", batch);
    check_bound(what, c->class_a, w, rows, cols, batch, q8, x, want, got);

    const int v1 = profile == SGFP4_PROFILE_V1;
    for (unsigned k = 0; k < splits; k++) {
        unsigned flags = 0;
        if (v1)
            flags = (k % 3 == 0 ? SGFP4_VK_MATVEC_ROWS_16 : k % 3 == 1 ? SGFP4_VK_MATVEC_ROWS_32 : 0) |
                    (k % 2 ? SGFP4_VK_MATVEC_NO_PREFETCH : 0);
        else
            flags = k % 3 == 0 ? SGFP4_VK_MATVEC_NO_PREFETCH
                    : k % 3 == 1 ? SGFP4_VK_MATVEC_LEAVES_AHEAD : SGFP4_VK_MATVEC_LEAVES_AT_USE;
        const unsigned wg_rows = flags & SGFP4_VK_MATVEC_ROWS_16   ? 16
                                 : flags & SGFP4_VK_MATVEC_ROWS_32 ? 32 : 64;
        run_fast(ctx, vt, c->class_a, c->dtype, rows, cols, xb, qb, 0, batch,
                 some_slices(cols, batch, wg_rows), flags, again);
        if (memcmp(got, again, sizeof *got * batch * rows) != 0)
            fail_msg("%s: other bits with kernel flags %u on another split", what, flags);
    }
    /* vector batch - 1 alone, and as vector 0 of a batch of two (with the extra vector) */
    run_fast(ctx, vt, c->class_a, c->dtype, rows, cols, xb, qb, batch - 1, 1, 0, 0, again);
    if (memcmp(got + (batch - 1) * rows, again, sizeof *got * rows) != 0)
        fail_msg("%s: vector %u alone gives other bits than in its batch", what, batch - 1);
    const unsigned pair = staged > batch ? batch - 1 : batch - 2; /* first of two staged */
    run_fast(ctx, vt, c->class_a, c->dtype, rows, cols, xb, qb, pair, 2, 0, 0, again);
    if (memcmp(got + pair * rows, again, sizeof *got * rows) != 0)
        fail_msg("%s: vector %u in a batch of two gives other bits", what, pair);

    sgfp4_vk_buffer_free(ctx, xb);
    sgfp4_vk_buffer_free(ctx, qb);
    sgfp4_matvec_plan_free(plan);
    free(w);
    free(x);
    free(h);
    free(q8);
    free(want);
    free(got);
    free(again);
}

/* Opens bytes, makes them resident on the case's context, runs the case. */
static void check_bytes(const fast_case *fc, const uint8_t *bytes, size_t size,
                        sgfp4_profile profile, uint64_t rows, uint64_t cols, unsigned splits)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(bytes, size, profile, rows, cols, &t, NULL, &diag) != SGFP4_OK)
        fail_msg("%s: open: %s", fc->what, diag.message);
    sgfp4_vk_tensor *vt = NULL;
    if (sgfp4_vk_tensor_create(contexts[fc->ctx], t, &vt, &diag) != SGFP4_OK)
        fail_msg("%s: upload: %s", fc->what, diag.message);
    check_case(fc, t, vt, profile, rows, cols, splits);
    sgfp4_vk_tensor_free(contexts[fc->ctx], vt);
    sgfp4_tensor_close(t);
}

/* `count` random settings on one tensor (the classes in turn). */
static void check_random(const char *what, const uint8_t *bytes, size_t size,
                         sgfp4_profile profile, uint64_t rows, uint64_t cols, unsigned count,
                         unsigned max_batch)
{
    static const unsigned batches[] = {1, 2, 4, 5, 8, 16};
    for (unsigned i = 0; i < count; i++) {
        unsigned batch = batches[below(6)];
        while (batch > max_batch)
            batch = batches[below(6)];
        const fast_case fc = {what, (int)below(CTX_COUNT), (int)(i & 1),
                              below(2) ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32, batch,
                              (x_kind)below(X_KINDS)};
        check_bytes(&fc, bytes, size, profile, rows, cols, i == 0 ? 1 : 0);
    }
}

/* ---- the tests ---- */

/* The random corpus of the D8 tests: random shapes, every layout, every corner. */
static void test_corpus(void **state)
{
    (void)state;
    const char *env = getenv("SGFP4_VK_MATVEC_CORPUS");
    const unsigned count = env ? (unsigned)atoi(env) : 8;
    for (unsigned i = 0; i < count; i++) {
        const int profile = 1 + (int)(i & 1);
        const gen_params p = gen_corpus_params(profile);
        gen_container c;
        gen_rng r = {1000 + i};
        assert_int_equal(gen_generate(&c, &r, &p), 0);
        char what[64];
        snprintf(what, sizeof what, "corpus %u v%d %llux%llu", i, profile,
                 (unsigned long long)c.rows, (unsigned long long)c.cols);
        check_random(what, c.data, c.size, (sgfp4_profile)profile, c.rows, c.cols, 2, 8);
        gen_free(&c);
    }
}

/* Odd shapes, every layout mix (MIXED_DEEP: mostly 4x4 and 8x8 leaves, the most segments a
 * row of a block can have), both profiles and classes, every activation kind. */
static void test_shapes(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{3, 130}, {65, 64}, {130, 200}, {2, 4160}, {70, 2049}};
    unsigned k = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int profile = 1; profile <= 2; profile++)
            for (int mix = 0; mix < (profile == 2 ? 3 : 1); mix++) {
                gen_params p = gen_shape_params(profile, shapes[i][0], shapes[i][1]);
                p.layouts = (gen_layouts)mix;
                if (i % 2)
                    p.halves = GEN_HALVES_LLM;
                size_t size;
                uint8_t *bytes = gen_container_bytes(&p, 700 + 7 * i + (uint64_t)mix, &size);
                assert_non_null(bytes);
                char what[80];
                snprintf(what, sizeof what, "shape %llux%llu v%d mix %d",
                         (unsigned long long)shapes[i][0], (unsigned long long)shapes[i][1],
                         profile, mix);
                for (int cls = 0; cls < 2; cls++, k++) {
                    const fast_case fc = {what, (int)(k % CTX_COUNT), cls,
                                          (k / 2) % 2 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32,
                                          k % 3 == 0 ? 4 : 1, (x_kind)(k % X_KINDS)};
                    check_bytes(&fc, bytes, size, (sgfp4_profile)profile, shapes[i][0],
                                shapes[i][1], i == 4 ? 3 : 0);
                }
                free(bytes);
            }
}

/* Each hostile kind of activations on its own, both classes and profiles, f32 and f16. */
static void test_hostile(void **state)
{
    (void)state;
    const uint64_t rows = 70, cols = 1000;
    for (int profile = 1; profile <= 2; profile++) {
        gen_params p = gen_shape_params(profile, rows, cols);
        p.halves = GEN_HALVES_LLM;
        size_t size;
        uint8_t *bytes = gen_container_bytes(&p, 800 + (uint64_t)profile, &size);
        for (int k = 0; k < X_KINDS; k++)
            for (int cls = 0; cls < 2; cls++) {
                const int f16 = (k + cls + profile) % 2;
                const fast_case fc = {"hostile", (k + cls) % CTX_COUNT, cls,
                                      f16 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32, 3, (x_kind)k};
                check_bytes(&fc, bytes, size, (sgfp4_profile)profile, rows, cols, 0);
            }
        free(bytes);
    }
}

/* Encoder output (v2 at 4.5 bits per weight, and v1) and real trained matrices
 * (../shared/weights), with their every split checked once. */
static void check_encoded(const char *what, const float *w, uint64_t rows, uint64_t cols)
{
    for (int profile = 2; profile >= 1; profile--) {
        sgfp4_encode_options o = encode_options((sgfp4_profile)profile, 8);
        void *bytes = NULL;
        size_t size = 0;
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
        char name[160];
        snprintf(name, sizeof name, "%s v%d", what, profile);
        check_random(name, bytes, size, (sgfp4_profile)profile, rows, cols, 2,
                     rows * cols > 100000 ? 4 : 16);
        /* the cancelling activations on each class */
        for (int cls = 0; cls < 2; cls++) {
            const fast_case fc = {name, cls, cls, SGFP4_DTYPE_F32, 2, X_CANCEL};
            check_bytes(&fc, bytes, size, (sgfp4_profile)profile, rows, cols, 0);
        }
        sgfp4_free(bytes);
    }
}

static void test_encoded(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{130, 200}, {64, 2112}, {1, 4096}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        float *w = gen_llm_weights(shapes[i][0], shapes[i][1], 40 + i);
        assert_non_null(w);
        char what[64];
        snprintf(what, sizeof what, "encoded %llux%llu", (unsigned long long)shapes[i][0],
                 (unsigned long long)shapes[i][1]);
        check_encoded(what, w, shapes[i][0], shapes[i][1]);
        free(w);
    }
}

static void check_real(void *ctx, const char *name, const float *w, uint64_t rows,
                       uint64_t cols)
{
    (void)ctx;
    check_encoded(name, w, rows, cols);
}

static void test_real_tensors(void **state)
{
    (void)state;
    const unsigned found = real_matrices_each(check_real, NULL);
    if (!found)
        skip();
    print_message("real tensors checked: %u\n", found);
}

/* The option is opt-in and checked: fast runs other kernels than D8 (somewhere in the
 * tests above the bits differ), a value other than 0 or 1 is refused, and the CPU backends
 * refuse fast = 1 instead of giving D8's result. */
static void test_opt_in(void **state)
{
    (void)state;
    print_message("fast products: %llu outputs compared, %llu with other bits than D8\n",
                  (unsigned long long)compared, (unsigned long long)differing);
    assert_true(compared > 0);
    assert_true(differing > 0);

    const uint64_t rows = 64, cols = 128;
    gen_params p = gen_shape_params(2, rows, cols);
    size_t size;
    uint8_t *bytes = gen_container_bytes(&p, 5, &size);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, size, SGFP4_PROFILE_V2, rows, cols, &t, NULL, NULL),
                     SGFP4_OK);
    sgfp4_vk_tensor *vt = NULL;
    assert_int_equal(sgfp4_vk_tensor_create(contexts[0], t, &vt, NULL), SGFP4_OK);
    sgfp4_vk_buffer *b = device_buffer(contexts[0], 4 * rows * cols);
    sgfp4_vk_matvec_options o;
    sgfp4_vk_matvec_options_init(&o);
    assert_int_equal(o.fast, 0);
    o.fast = 2;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_matvec_float(contexts[0], vt, sgfp4_vk_buffer_handle(b), 0,
                                           SGFP4_DTYPE_F32, 1, 0, sgfp4_vk_buffer_handle(b),
                                           4 * cols, 0, &o, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_non_null(strstr(diag.message, "fast"));

    sgfp4_matvec_plan *plan = NULL;
    assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
    sgfp4_matvec_options cpu;
    sgfp4_matvec_options_init(&cpu);
    assert_int_equal(cpu.fast, 0);
    float x[128] = {1.0f}, y[64];
    for (int backend = 0; backend < 2; backend++) {
        cpu.backend = backend ? SGFP4_BACKEND_SCALAR : SGFP4_BACKEND_AUTO;
        cpu.fast = 1;
        for (unsigned i = 0; i < 64; i++)
            y[i] = 7.0f;
        assert_int_equal(
            sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, rows, y, 0, sizeof y, &cpu),
            SGFP4_ERR_UNSUPPORTED);
        assert_true(y[0] == 7.0f && y[63] == 7.0f); /* nothing written */
        cpu.fast = 3;
        assert_int_equal(
            sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, rows, y, 0, sizeof y, &cpu),
            SGFP4_ERR_ARGUMENT);
    }
    sgfp4_matvec_plan_free(plan);
    sgfp4_vk_buffer_free(contexts[0], b);
    sgfp4_vk_tensor_free(contexts[0], vt);
    sgfp4_tensor_close(t);
    free(bytes);
}

int main(void)
{
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY); /* see test_vulkan_decode.c */
    const unsigned flags[CTX_COUNT] = {0, SGFP4_VK_NO_INTEGER_DOT};
    for (int c = 0; c < CTX_COUNT; c++) {
        sgfp4_vk_context_options o;
        sgfp4_vk_context_options_init(&o);
        o.flags = flags[c];
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_vk_context_create(&contexts[c], &o, &diag);
        if (s == SGFP4_ERR_UNAVAILABLE || s == SGFP4_ERR_VK_NO_DEVICE) {
            printf("skip: %s\n", diag.message);
            return 77;
        }
        if (s != SGFP4_OK) {
            printf("sgfp4_vk_context_create: %s\n", diag.message);
            return 1;
        }
        sgfp4_vk_device_info info;
        sgfp4_vk_device_info_init(&info);
        sgfp4_vk_context_get_info(contexts[c], &info);
        if (info.matvec_path == SGFP4_VK_MATVEC_UNAVAILABLE) {
            printf("skip: device %s has no matrix-vector path (no RTE float32)\n", info.name);
            return 77;
        }
    }
    /* test_opt_in last: it asserts that the others found outputs where fast differs */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),  cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_encoded), cmocka_unit_test(test_real_tensors),
        cmocka_unit_test(test_corpus),  cmocka_unit_test(test_opt_in),
    };
    if (getenv("SGFP4_VK_TEST")) /* one test by name, while developing */
        cmocka_set_test_filter(getenv("SGFP4_VK_TEST"));
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    for (int c = 0; c < CTX_COUNT; c++)
        sgfp4_vk_context_free(contexts[c]);
    return failed;
}
