/* The Vulkan matrix-vector products (DECISIONS D8) against the CPU's scalar oracle, bit for
 * bit: the device quantizer's q8 bytes against sgfp4_matvec_quantize, the Class A and Class B
 * products against sgfp4_matvec_q8 / sgfp4_matvec_float (backend SCALAR), on the random
 * corpus, odd shapes of every layout, the golden matvec vectors, encoder output and encoded
 * real tensors, with hostile activations (zeros, -0, values below both floors, huge values,
 * quantizer ties, NaN and infinity), batches 1..16, f32 and f16 activations, strided outputs
 * at offsets, every split of a band into workgroups; run to run; and the recorded path in a
 * command buffer of our own with the documented barriers. Contexts: the default (OpSDot where
 * the device has it), the written-out dot products, an adopted device (the decode pipeline a
 * context picks does not reach the products: the two product modules are these).
 * Each pipeline (a product's specialization constants) is compiled on first use, which on
 * lavapipe costs far more than running it: the cases sample the settings so that every class
 * x profile x layout x batch (1 and 16 included) x activation type is covered with few
 * distinct pipelines. SGFP4_VK_MATVEC_CORPUS=N widens the random corpus (default 12).
 * Exits 77 (skip) where no Vulkan device exists.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sgfp4.h"
#include "sgfp4_config.h"
#include "sgfp4_model.h"
#include "sgfp4_vulkan.h"
#include "sgfp4_experimental.h"
#include "datagen/generator.h"
#include "datagen/reference_numbers.h"
#include "support/options.h"
#include "support/real_matrices.h"
#include "tool_clock.h"
#if SGFP4_HAVE_VULKAN
#include <vulkan/vulkan.h>

#include "vulkan/vk_internal.h" /* where a tensor's bytes lie (test_bench_read) */
#include "vk_kit.h"
#endif

enum { CTX_DEFAULT, CTX_PLAIN_DOT, CTX_COUNT };
static sgfp4_vk_context *contexts[CTX_COUNT];
static const char *const context_names[CTX_COUNT] = {"default", "written-out dot"};

static gen_rng rng = {2024};
static uint32_t below(uint32_t n) { return gen_below(&rng, n); }

/* ---- activations ---- */

typedef enum x_kind {
    X_GAUSS, X_ZEROS, X_NEG_ZEROS, X_BELOW_B, X_BELOW_A, X_HUGE, X_TIES, X_MIXED, X_NONFINITE,
    X_KINDS
} x_kind;
static const char *const kind_names[X_KINDS] = {"gauss", "zeros", "-zeros", "below-2^-60",
                                                "below-2^-40", "huge", "ties", "mixed",
                                                "non-finite"};

static float signed_random(float v) { return below(2) ? -v : v; }

static float value_of(x_kind kind, int scale)
{
    switch (kind) {
    case X_GAUSS: {
        double s = 0;
        for (int i = 0; i < 4; i++)
            s += (double)below(1u << 20) / (1u << 20);
        return (float)ldexp(s - 2.0, scale);
    }
    case X_ZEROS: return 0.0f;
    case X_NEG_ZEROS: return -0.0f;
    case X_BELOW_B: {
        static const float v[] = {0x1p-61f, 0x1p-100f, 0x1p-149f, 0x1.fffffep-61f, 0x1p-60f,
                                  0x1p-126f, 0x1.8p-140f, 0.0f};
        return signed_random(v[below(8)]);
    }
    case X_BELOW_A: {
        static const float v[] = {0x1p-41f, 0x1.fffffep-41f, 0x1p-59f, 0x1p-60f, 0x1.3p-50f,
                                  0x1p-40f};
        return signed_random(v[below(6)]);
    }
    case X_HUGE: {
        static const float v[] = {1e30f, FLT_MAX, 0x1p127f, 1.5f, -3e-3f, 1e20f};
        return signed_random(v[below(6)]);
    }
    case X_TIES: return (float)ldexp((double)((int)below(254) - 127) + 0.5, scale);
    case X_NONFINITE: {
        const unsigned pick = below(8);
        return pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                                                                  : value_of(X_GAUSS, scale);
    }
    default: return 0.0f;
    }
}

/* x[batch][stride] of `kind` (columns past cols are junk the products must not read); F16:
 * the values are those of the halves in h. */
static void fill_x(x_kind kind, uint64_t cols, unsigned batch, size_t stride, sgfp4_dtype dtype,
                   float *x, uint16_t *h)
{
    for (size_t i = 0; i < batch * stride; i++)
        x[i] = NAN; /* junk between vectors */
    for (unsigned n = 0; n < batch; n++)
        for (uint64_t b = 0; b * 64 < cols; b++) {
            const x_kind k = kind == X_MIXED ? (x_kind)below(X_MIXED) : kind;
            const int scale = dtype == SGFP4_DTYPE_F16 ? (int)below(16) - 10 : (int)below(41) - 20;
            float *xb = x + n * stride + b * 64;
            const unsigned width = (unsigned)(cols - b * 64 < 64 ? cols - b * 64 : 64);
            for (unsigned j = 0; j < width; j++)
                xb[j] = value_of(k, scale);
            if (k == X_TIES)
                xb[below(width)] = signed_random((float)ldexp(127, scale));
        }
    if (dtype == SGFP4_DTYPE_F16)
        for (size_t i = 0; i < batch * stride; i++) {
            if (isfinite(x[i]) && fabsf(x[i]) > 65504.0f)
                x[i] = copysignf(65504.0f, x[i]);
            h[i] = ref_float_to_half(x[i]);
            x[i] = (float)ref_half_value(h[i]);
        }
}

/* ---- one product on the GPU and on the CPU ---- */

/* SGFP4_VK_TEST_VERBOSE=1 prints every case with the seconds of its GPU part (the first use
 * of a pipeline includes its compilation, tool_now()), while developing. */

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int same_bits(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b); /* D8 leaves a NaN's sign and payload open */
    return memcmp(&a, &b, 4) == 0;
}

typedef struct product_case {
    const char *what;
    int ctx;
    int class_a;
    sgfp4_dtype dtype;
    unsigned batch;
    x_kind kind;
    unsigned slices; /* 0: the library's choice */
    unsigned flags;  /* SGFP4_VK_MATVEC_* */
} product_case;

static sgfp4_vk_buffer *device_buffer(sgfp4_vk_context *ctx, uint64_t size)
{
    sgfp4_vk_buffer *b = NULL;
    sgfp4_diag diag;
    if (sgfp4_vk_buffer_create(ctx, size, &b, &diag) != SGFP4_OK)
        fail_msg("buffer of %llu bytes: %s", (unsigned long long)size, diag.message);
    return b;
}

/* Runs the case on tensor t (resident as vt on the case's context) and compares every output
 * bit with the oracle; the device quantizer's bytes with the CPU's. Returns the y bytes of
 * the GPU (malloc'ed, batch * rows floats) for callers comparing runs. */
static float *check_product(const product_case *c, const sgfp4_tensor *t,
                            const sgfp4_vk_tensor *vt, uint64_t rows, uint64_t cols)
{
    sgfp4_vk_context *ctx = contexts[c->ctx];
    const unsigned batch = c->batch;
    const size_t x_stride = (size_t)cols + below(3) * (c->dtype == SGFP4_DTYPE_F16 ? 1 : 2);
    const size_t y_stride = (size_t)rows + below(3);
    const size_t elem = sgfp4_dtype_size(c->dtype);
    float *x = malloc(sizeof *x * batch * x_stride);
    uint16_t *h = malloc(sizeof *h * batch * x_stride);
    assert_true(x && h);
    fill_x(c->kind, cols, batch, x_stride, c->dtype, x, h);
    const void *host_x = c->dtype == SGFP4_DTYPE_F16 ? (const void *)h : (const void *)x;
    const size_t x_bytes = batch * x_stride * elem;

    /* The oracle. */
    sgfp4_matvec_options scalar;
    sgfp4_matvec_options_init(&scalar);
    scalar.backend = SGFP4_BACKEND_SCALAR;
    scalar.threads = 8; /* the same bits on any thread count; the reference is slow */
    sgfp4_matvec_plan *plan = NULL;
    assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, batch);
    uint8_t *q8 = malloc(q8_size), *q8_gpu = malloc(q8_size);
    float *want = malloc(sizeof *want * batch * y_stride);
    float *got = malloc(sizeof *got * batch * y_stride);
    assert_true(q8 && q8_gpu && want && got);
    for (size_t i = 0; i < batch * y_stride; i++)
        want[i] = got[i] = -7.25f; /* the gaps stay untouched */
    int nonfinite = 0;
    if (c->class_a) {
        const sgfp4_status s = sgfp4_matvec_quantize(host_x, c->dtype, cols, batch, x_stride, q8,
                                                     q8_size, &scalar, NULL);
        nonfinite = s == SGFP4_ERR_ARGUMENT;
        if (!nonfinite) {
            assert_int_equal(s, SGFP4_OK);
            assert_int_equal(sgfp4_matvec_q8(plan, q8, q8_size, batch, 0, rows, want, y_stride,
                                             sizeof *want * batch * y_stride, &scalar),
                             SGFP4_OK);
        }
    } else {
        assert_int_equal(sgfp4_matvec_float(plan, host_x, c->dtype, batch, x_stride, 0, rows, want,
                                            y_stride, sizeof *want * batch * y_stride, &scalar),
                         SGFP4_OK);
    }

    /* The GPU: x at an offset in a buffer, y strided at an offset. */
    const double gpu_start = tool_now();
    const uint64_t x_off = 4 * (1 + below(8)), y_off = 4 * (1 + below(8)), q_off = 64;
    sgfp4_vk_buffer *xb = device_buffer(ctx, x_off + x_bytes);
    sgfp4_vk_buffer *qb = device_buffer(ctx, q_off + q8_size);
    sgfp4_vk_buffer *yb = device_buffer(ctx, y_off + sizeof *got * batch * y_stride);
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(xb), x_off, host_x, x_bytes,
                                           &diag),
                     SGFP4_OK);
    assert_int_equal(sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(yb), y_off, got,
                                           sizeof *got * batch * y_stride, &diag),
                     SGFP4_OK);
    sgfp4_vk_matvec_options o;
    sgfp4_vk_matvec_options_init(&o);
    o.slices = c->slices;
    o.flags = c->flags;
    sgfp4_status s;
    if (c->class_a) {
        s = sgfp4_vk_quantize(ctx, sgfp4_vk_buffer_handle(xb), x_off, c->dtype, cols, batch,
                              x_stride, sgfp4_vk_buffer_handle(qb), q_off, &o, &diag);
        if (nonfinite) {
            if (s != SGFP4_ERR_ARGUMENT)
                fail_msg("%s: the device quantizer accepted a non-finite activation", c->what);
            goto done;
        }
        if (s != SGFP4_OK)
            fail_msg("%s: quantize: %s", c->what, diag.message);
        assert_int_equal(sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(qb), q_off, q8_gpu,
                                              q8_size, &diag),
                         SGFP4_OK);
        if (memcmp(q8, q8_gpu, q8_size) != 0) {
            size_t i = 0;
            while (q8[i] == q8_gpu[i])
                i++;
            fail_msg("%s [%s]: q8 byte %zu differs: %02x, CPU %02x", c->what,
                     context_names[c->ctx], i, q8_gpu[i], q8[i]);
        }
        s = sgfp4_vk_matvec_q8(ctx, vt, sgfp4_vk_buffer_handle(qb), q_off, batch,
                               sgfp4_vk_buffer_handle(yb), y_off, y_stride, &o, &diag);
    } else {
        s = sgfp4_vk_matvec_float(ctx, vt, sgfp4_vk_buffer_handle(xb), x_off, c->dtype, batch,
                                  x_stride, sgfp4_vk_buffer_handle(yb), y_off, y_stride, &o, &diag);
    }
    if (s != SGFP4_OK)
        fail_msg("%s [%s]: product: %s", c->what, context_names[c->ctx], diag.message);
    if (getenv("SGFP4_VK_TEST_VERBOSE"))
        print_message("%s [%s]: class %c, %s x, batch %u, slices %u, flags %u: %.2f s\n",
                      c->what, context_names[c->ctx], c->class_a ? 'A' : 'B',
                      c->dtype == SGFP4_DTYPE_F16 ? "f16" : "f32", batch, c->slices, c->flags,
                      tool_now() - gpu_start);
    assert_int_equal(sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(yb), y_off, got,
                                          sizeof *got * batch * y_stride, &diag),
                     SGFP4_OK);
    for (unsigned n = 0; n < batch; n++)
        for (size_t r = 0; r < y_stride; r++) {
            const size_t i = n * y_stride + r;
            if (!same_bits(got[i], want[i]))
                fail_msg("%s [%s, class %c, %s x, batch %u, %s, slices %u]: vector %u row %zu: "
                         "%a (0x%08x), CPU %a (0x%08x)",
                         c->what, context_names[c->ctx], c->class_a ? 'A' : 'B',
                         c->dtype == SGFP4_DTYPE_F16 ? "f16" : "f32", batch,
                         kind_names[c->kind], c->slices, n, r, (double)got[i],
                         bits_of(got[i]), (double)want[i], bits_of(want[i]));
        }
done:
    sgfp4_vk_buffer_free(ctx, xb);
    sgfp4_vk_buffer_free(ctx, qb);
    sgfp4_vk_buffer_free(ctx, yb);
    sgfp4_matvec_plan_free(plan);
    free(x);
    free(h);
    free(q8);
    free(q8_gpu);
    free(want);
    float *packed = malloc(sizeof *packed * batch * (size_t)rows);
    assert_non_null(packed);
    for (unsigned n = 0; n < batch; n++)
        memcpy(packed + n * rows, got + n * y_stride, sizeof *packed * (size_t)rows);
    free(got);
    return packed;
}

/* Opens bytes, makes them resident on context c, runs the case, frees everything. */
static void check_bytes(const product_case *pc, const uint8_t *bytes, size_t size,
                        sgfp4_profile profile, uint64_t rows, uint64_t cols)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(bytes, size, profile, rows, cols, &t, NULL, &diag) != SGFP4_OK)
        fail_msg("%s: open: %s", pc->what, diag.message);
    sgfp4_vk_tensor *vt = NULL;
    if (sgfp4_vk_tensor_create(contexts[pc->ctx], t, &vt, &diag) != SGFP4_OK)
        fail_msg("%s: upload: %s", pc->what, diag.message);
    free(check_product(pc, t, vt, rows, cols));
    sgfp4_vk_tensor_free(contexts[pc->ctx], vt);
    sgfp4_tensor_close(t);
}

/* Rows per workgroup that flags ask for (v1; v2 always 64). */
static unsigned rows_of(unsigned flags)
{
    return flags & SGFP4_VK_MATVEC_ROWS_16 ? 16 : flags & SGFP4_VK_MATVEC_ROWS_32 ? 32 : 64;
}

/* Random v1 kernel flags (the workgroup's rows, the prefetch). */
static unsigned random_flags(void)
{
    static const unsigned rows[3] = {SGFP4_VK_MATVEC_ROWS_16, SGFP4_VK_MATVEC_ROWS_32, 0};
    return rows[below(3)] | (below(3) == 0 ? SGFP4_VK_MATVEC_NO_PREFETCH : 0);
}

/* Random v2 kernel flags: the default, no prefetch, or the leaves' S and Bias a step ahead
 * or at their use (each class's default is the other class's choice). */
static unsigned random_v2_flags(void)
{
    static const unsigned flags[4] = {0, SGFP4_VK_MATVEC_NO_PREFETCH,
                                      SGFP4_VK_MATVEC_LEAVES_AHEAD, SGFP4_VK_MATVEC_LEAVES_AT_USE};
    return flags[below(4)];
}

/* A random valid slices value for a tensor of `cols` columns, batch and workgroup rows (0 =
 * the default): at most the blocks of a row over the most blocks a workgroup may have in
 * flight. */
static unsigned random_slices(uint64_t cols, unsigned batch, unsigned rows)
{
    uint64_t padded = 1;
    while (padded * 64 < cols)
        padded *= 2;
    const unsigned subs = (batch > 8 ? 128 : 256) / rows;
    unsigned max = 1;
    while (max < 64 && (uint64_t)subs * max * 2 <= padded)
        max *= 2;
    const unsigned pick = below(4);
    return pick == 0 ? 0 : pick == 1 ? 1 : pick == 2 ? max : 1u << below(1 + (unsigned)log2(max));
}

/* Batches of the random settings. Batches above 8 take the other workgroup split, whose
 * pipelines lavapipe compiles ~10x slower: test_shapes and test_golden run them. */
static const unsigned batches[] = {1, 2, 3, 4, 5, 8, 1, 3};

/* Every class, dtype and context over `count` random settings (the classes in turn); a
 * batch of at most max_batch. */
static void check_random_settings(const char *what, const uint8_t *bytes, size_t size,
                                  sgfp4_profile profile, uint64_t rows, uint64_t cols,
                                  unsigned count, unsigned max_batch)
{
    for (unsigned i = 0; i < count; i++) {
        unsigned batch = batches[below(8)];
        while (batch > max_batch)
            batch = batches[below(8)];
        product_case pc = {what,
                           (int)below(CTX_COUNT),
                           (int)(i & 1),
                           below(2) ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32,
                           batch,
                           (x_kind)below(X_KINDS),
                           0,
                           0};
        if (pc.class_a && pc.kind == X_NONFINITE && below(2))
            pc.kind = X_MIXED;
        pc.flags = profile == SGFP4_PROFILE_V1 ? random_flags() : random_v2_flags();
        pc.slices = random_slices(cols, pc.batch, rows_of(pc.flags));
        check_bytes(&pc, bytes, size, profile, rows, cols);
    }
}

/* ---- the tests ---- */

/* The differential corpus: random shapes (edge-heavy), every layout, every corner. */
static void test_corpus(void **state)
{
    (void)state;
    const char *env = getenv("SGFP4_VK_MATVEC_CORPUS");
    const unsigned count = env ? (unsigned)atoi(env) : 12;
    for (unsigned i = 0; i < count; i++) {
        const int profile = 1 + (int)(i & 1);
        const gen_params p = gen_corpus_params(profile);
        gen_container c;
        gen_rng r = {1000 + i};
        assert_int_equal(gen_generate(&c, &r, &p), 0);
        char what[64];
        snprintf(what, sizeof what, "corpus %u v%d %llux%llu", i, profile,
                 (unsigned long long)c.rows, (unsigned long long)c.cols);
        check_random_settings(what, c.data, c.size, (sgfp4_profile)profile, c.rows, c.cols, 2,
                              16);
        gen_free(&c);
    }
    print_message("corpus: %u containers, 2 products each\n", count);
}

/* Odd shapes, every layout mix, both profiles, both classes: batches 1 and 4 with f32/f16
 * activations and the contexts in turn over the shapes (each class, profile and batch meets
 * both types); the widest shape at batch 16 (the batch > 8 split) in every profile, layout
 * mix and class, on both product modules and with f32 and f16 activations (the default
 * split and kernel, so that the layout mixes share their pipelines). */
static void test_shapes(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{1, 1},   {3, 130},  {130, 200}, {65, 64},
                                         {64, 65}, {3, 1093}, {2, 4160},  {70, 2049}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int profile = 1; profile <= 2; profile++)
            for (int mix = 0; mix < (profile == 2 ? 3 : 1); mix++) {
                gen_params p = gen_shape_params(profile, shapes[i][0], shapes[i][1]);
                p.layouts = (gen_layouts)mix;
                if (i % 2)
                    p.halves = GEN_HALVES_LLM;
                size_t size;
                uint8_t *bytes = gen_container_bytes(&p, 300 + 7 * i + (uint64_t)mix, &size);
                assert_non_null(bytes);
                char what[80];
                snprintf(what, sizeof what, "shape %llux%llu v%d mix %d",
                         (unsigned long long)shapes[i][0], (unsigned long long)shapes[i][1],
                         profile, mix);
                for (int cls = 0; cls < 2; cls++) {
                    const int wide = i + 1 == sizeof shapes / sizeof shapes[0];
                    const unsigned batch = wide ? 16 : (i + (size_t)mix + (size_t)cls) % 2 ? 4 : 1;
                    const int f16 = wide ? (cls == 1 && profile == 1) || (cls == 0 && mix == 1)
                                         : (int)((i / 2 + (size_t)cls + (size_t)mix) % 2);
                    const unsigned flags = wide ? 0
                                           : profile == 1 ? random_flags()
                                           : batch == 4   ? SGFP4_VK_MATVEC_NO_PREFETCH
                                           : i % 2        ? SGFP4_VK_MATVEC_LEAVES_AHEAD
                                                          : SGFP4_VK_MATVEC_LEAVES_AT_USE;
                    const int ctx = wide ? (cls == 0 && profile == 2 ? CTX_PLAIN_DOT : CTX_DEFAULT)
                                         : (int)((i + (size_t)cls) % CTX_COUNT);
                    product_case pc = {what, ctx, cls, f16 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32,
                                       batch, X_MIXED,
                                       wide ? 0 : random_slices(shapes[i][1], batch, rows_of(flags)),
                                       flags};
                    check_bytes(&pc, bytes, size, (sgfp4_profile)profile, shapes[i][0],
                                shapes[i][1]);
                }
                free(bytes);
            }
}

/* Every split of a wide band into workgroups gives the same bits (and the oracle's): each
 * slices value and kernel shape, the classes in turn, batches up to 8 (test_shapes runs the
 * batch > 8 split). */
static void test_every_split(void **state)
{
    (void)state;
    const uint64_t rows = 100, cols = 64 * 70 + 3; /* P = 128 blocks */
    for (int profile = 1; profile <= 2; profile++) {
        gen_params p = gen_shape_params(profile, rows, cols);
        p.halves = GEN_HALVES_LLM;
        size_t size;
        uint8_t *bytes = gen_container_bytes(&p, 77 + (uint64_t)profile, &size);
        sgfp4_tensor *t = NULL;
        assert_int_equal(sgfp4_tensor_open(bytes, size, (sgfp4_profile)profile, rows, cols, &t,
                                           NULL, NULL),
                         SGFP4_OK);
        sgfp4_vk_tensor *vt = NULL;
        assert_int_equal(sgfp4_vk_tensor_create(contexts[0], t, &vt, NULL), SGFP4_OK);
        for (unsigned s = 0; s <= 5; s++)
            for (unsigned f = 0; f < (profile == 1 ? 3u : 4u); f++) {
                const unsigned slices = 1u << s;
                const int cls = (int)((s + f) % 2);
                const unsigned flags = f == 0           ? 0
                                       : profile == 2   ? (f == 1   ? SGFP4_VK_MATVEC_NO_PREFETCH
                                                           : f == 2 ? SGFP4_VK_MATVEC_LEAVES_AHEAD
                                                                    : SGFP4_VK_MATVEC_LEAVES_AT_USE)
                                       : f == 1         ? SGFP4_VK_MATVEC_ROWS_16
                                                        : SGFP4_VK_MATVEC_ROWS_32 |
                                                  SGFP4_VK_MATVEC_NO_PREFETCH;
                static const unsigned split_batch[6] = {5, 8, 4, 2, 1, 3};
                const unsigned batch = split_batch[s];
                if ((batch > 8 ? 128 : 256) / rows_of(flags) * slices > 128)
                    continue;
                product_case pc = {"every split", 0, cls, SGFP4_DTYPE_F32, batch, X_MIXED,
                                   slices, flags};
                free(check_product(&pc, t, vt, rows, cols));
            }
        sgfp4_vk_tensor_free(contexts[0], vt);
        sgfp4_tensor_close(t);
        free(bytes);
    }
}

static uint8_t *read_file(const char *dir, const char *name, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(n > 0 ? (size_t)n : 1);
    if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
        free(d);
        d = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return d;
}

/* The golden matvec vectors: the device quantizer writes each vector's q8 file, the products
 * its y file (values computed by tools/gen_golden.py, independently of the library). */
static void test_golden(void **state)
{
    (void)state;
    const char *src = getenv("SGFP4_SOURCE_DIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/golden", src ? src : ".");
    size_t msize;
    uint8_t *mtext = read_file(dir, "matvec/manifest.json", &msize);
    if (!mtext)
        skip();
    json_t *root = json_loadb((const char *)mtext, msize, 0, NULL);
    free(mtext);
    assert_non_null(root);
    size_t i, checked = 0;
    json_t *v;
    json_array_foreach(json_object_get(root, "vectors"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        const sgfp4_profile profile =
            strcmp(json_string_value(json_object_get(v, "profile")), "v1") == 0 ? SGFP4_PROFILE_V1
                                                                                : SGFP4_PROFILE_V2;
        json_t *shape = json_object_get(v, "shape");
        const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
        const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));
        const int class_a = strcmp(json_string_value(json_object_get(v, "class")), "a") == 0;
        const unsigned batch = (unsigned)json_integer_value(json_object_get(v, "batch"));
        const sgfp4_dtype dtype =
            strcmp(json_string_value(json_object_get(v, "x_dtype")), "f16") == 0 ? SGFP4_DTYPE_F16
                                                                                  : SGFP4_DTYPE_F32;
        size_t csize, xsize, ysize, qsize = 0;
        uint8_t *container = read_file(dir, json_string_value(json_object_get(v, "container")),
                                       &csize);
        uint8_t *x = read_file(dir, json_string_value(json_object_get(v, "x")), &xsize);
        uint8_t *y = read_file(dir, json_string_value(json_object_get(v, "y")), &ysize);
        uint8_t *q8 = class_a ? read_file(dir, json_string_value(json_object_get(v, "q8")), &qsize)
                              : NULL;
        assert_true(container && x && y && (!class_a || q8));
        /* Class B runs the same code in both product modules: one context is enough. */
        for (int c = 0; c < (class_a ? CTX_COUNT : 1); c++) {
            sgfp4_vk_context *ctx = contexts[c];
            sgfp4_tensor *t = NULL;
            assert_int_equal(sgfp4_tensor_open(container, csize, profile, rows, cols, &t, NULL,
                                               NULL),
                             SGFP4_OK);
            sgfp4_vk_tensor *vt = NULL;
            assert_int_equal(sgfp4_vk_tensor_create(ctx, t, &vt, NULL), SGFP4_OK);
            sgfp4_vk_buffer *xb = device_buffer(ctx, xsize), *yb = device_buffer(ctx, ysize);
            sgfp4_vk_buffer *qb = device_buffer(ctx, sgfp4_matvec_q8_bytes(cols, batch));
            assert_int_equal(sgfp4_vk_buffer_write(ctx, sgfp4_vk_buffer_handle(xb), 0, x, xsize,
                                                   NULL),
                             SGFP4_OK);
            sgfp4_diag diag;
            sgfp4_status s;
            if (class_a) {
                s = sgfp4_vk_quantize(ctx, sgfp4_vk_buffer_handle(xb), 0, dtype, cols, batch, 0,
                                      sgfp4_vk_buffer_handle(qb), 0, NULL, &diag);
                if (s != SGFP4_OK)
                    fail_msg("%s: quantize: %s", name, diag.message);
                uint8_t *got = malloc(qsize);
                assert_int_equal(sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(qb), 0, got,
                                                      qsize, NULL),
                                 SGFP4_OK);
                if (memcmp(got, q8, qsize) != 0)
                    fail_msg("%s [%s]: device q8 bytes differ from the golden file", name,
                             context_names[c]);
                free(got);
                s = sgfp4_vk_matvec_q8(ctx, vt, sgfp4_vk_buffer_handle(qb), 0, batch,
                                       sgfp4_vk_buffer_handle(yb), 0, 0, NULL, &diag);
            } else {
                s = sgfp4_vk_matvec_float(ctx, vt, sgfp4_vk_buffer_handle(xb), 0, dtype, batch, 0,
                                          sgfp4_vk_buffer_handle(yb), 0, 0, NULL, &diag);
            }
            if (s != SGFP4_OK)
                fail_msg("%s: product: %s", name, diag.message);
            float *got = malloc(ysize);
            assert_int_equal(sgfp4_vk_buffer_read(ctx, sgfp4_vk_buffer_handle(yb), 0, got, ysize,
                                                  NULL),
                             SGFP4_OK);
            for (size_t k = 0; k < ysize / 4; k++) {
                float want;
                memcpy(&want, y + 4 * k, 4);
                if (!same_bits(got[k], want))
                    fail_msg("%s [%s]: y[%zu] = %a, golden %a", name, context_names[c], k,
                             (double)got[k], (double)want);
            }
            free(got);
            sgfp4_vk_buffer_free(ctx, xb);
            sgfp4_vk_buffer_free(ctx, yb);
            sgfp4_vk_buffer_free(ctx, qb);
            sgfp4_vk_tensor_free(ctx, vt);
            sgfp4_tensor_close(t);
        }
        free(container);
        free(x);
        free(y);
        free(q8);
        checked++;
    }
    json_decref(root);
    assert_true(checked > 0);
    print_message("golden: %zu matvec vectors bit-identical on every context\n", checked);
}

/* Encoder output (v2 at 4.5 bits per weight, and v1) of LLM-like matrices of odd shapes. */
static void test_encoded(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{130, 200}, {64, 2112}, {200, 700}, {1, 4096}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const uint64_t rows = shapes[i][0], cols = shapes[i][1];
        float *w = gen_llm_weights(rows, cols, 40 + i);
        assert_non_null(w);
        for (int profile = 1; profile <= 2; profile++) {
            sgfp4_encode_options o = encode_options((sgfp4_profile)profile, 8);
            void *bytes = NULL;
            size_t size = 0;
            assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL),
                             SGFP4_OK);
            char what[64];
            snprintf(what, sizeof what, "encoded v%d %llux%llu", profile,
                     (unsigned long long)rows, (unsigned long long)cols);
            check_random_settings(what, bytes, size, (sgfp4_profile)profile, rows, cols, 2,
                                  16);
            sgfp4_free(bytes);
        }
        free(w);
    }
}

/* Real trained matrices (../shared/weights), encoded as v2 at 4.5 bits per weight and v1. */
static void check_real(void *ctx, const char *name, const float *w, uint64_t rows,
                       uint64_t cols)
{
    (void)ctx;
    for (int profile = 2; profile >= 1; profile--) {
        sgfp4_encode_options o = encode_options((sgfp4_profile)profile, 8);
        void *bytes = NULL;
        size_t size = 0;
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
        char what[160];
        snprintf(what, sizeof what, "%s v%d", name, profile);
        check_random_settings(what, bytes, size, (sgfp4_profile)profile, rows, cols, 2,
                              rows * cols > 100000 ? 4 : 16);
        sgfp4_free(bytes);
    }
}

static void test_real_tensors(void **state)
{
    (void)state;
    const unsigned found = real_matrices_each(check_real, NULL);
    if (!found)
        skip();
    print_message("real tensors checked: %u\n", found);
}

/* Each hostile kind of activations on its own, both classes and profiles; f32 and f16 in
 * turn (each kind meets both types in each class), the contexts in turn. */
static void test_hostile(void **state)
{
    (void)state;
    const uint64_t rows = 70, cols = 300;
    for (int profile = 1; profile <= 2; profile++) {
        gen_params p = gen_shape_params(profile, rows, cols);
        size_t size;
        uint8_t *bytes = gen_container_bytes(&p, 500 + (uint64_t)profile, &size);
        for (int k = 0; k < X_KINDS; k++)
            for (int cls = 0; cls < 2; cls++) {
                const int d = (k + cls + profile) % 2;
                product_case pc = {kind_names[k], (k / 2 + cls) % CTX_COUNT, cls,
                                   d ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32, 3, (x_kind)k, 0, 0};
                check_bytes(&pc, bytes, size, (sgfp4_profile)profile, rows, cols);
            }
        free(bytes);
    }
}

/* The same product, repeated and on every split, gives the same bits. */
static void test_run_to_run(void **state)
{
    (void)state;
    const uint64_t rows = 64, cols = 4096;
    float *w = gen_llm_weights(rows, cols, 9);
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.threads = 8;
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, size, SGFP4_PROFILE_V2, rows, cols, &t, NULL, NULL),
                     SGFP4_OK);
    sgfp4_vk_tensor *vt = NULL;
    assert_int_equal(sgfp4_vk_tensor_create(contexts[0], t, &vt, NULL), SGFP4_OK);
    for (int cls = 0; cls < 2; cls++) {
        float *first = NULL;
        for (unsigned run = 0; run < 3; run++) {
            rng.state = 4242; /* the same activations each run */
            product_case pc = {"run to run", 0, cls, SGFP4_DTYPE_F32, 4, X_GAUSS,
                               run == 2 ? 1u : 0u, 0};
            float *y = check_product(&pc, t, vt, rows, cols);
            if (!first)
                first = y;
            else {
                assert_memory_equal(first, y, sizeof *y * 4 * rows);
                free(y);
            }
        }
        free(first);
    }
    sgfp4_vk_tensor_free(contexts[0], vt);
    sgfp4_tensor_close(t);
    sgfp4_free(bytes);
    free(w);
}

/* A small generated v2 tensor, resident on ctx: the fixture of the kit and argument tests. */
enum { SMALL_ROWS = 10, SMALL_COLS = 100 };
typedef struct small_tensor {
    uint8_t *bytes;
    sgfp4_tensor *t;
    sgfp4_vk_tensor *vt;
} small_tensor;

static small_tensor small_tensor_make(sgfp4_vk_context *ctx)
{
    gen_params p = gen_shape_params(2, SMALL_ROWS, SMALL_COLS);
    size_t size;
    small_tensor s = {gen_container_bytes(&p, 8, &size), NULL, NULL};
    assert_int_equal(sgfp4_tensor_open(s.bytes, size, SGFP4_PROFILE_V2, SMALL_ROWS, SMALL_COLS,
                                       &s.t, NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_vk_tensor_create(ctx, s.t, &s.vt, NULL), SGFP4_OK);
    return s;
}

static void small_tensor_free(sgfp4_vk_context *ctx, small_tensor *s)
{
    sgfp4_vk_tensor_free(ctx, s->vt);
    sgfp4_tensor_close(s->t);
    free(s->bytes);
}

#if SGFP4_HAVE_VULKAN
/* A host-visible storage buffer made with raw Vulkan, as a runtime's own. */
typedef struct host_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
} host_buffer;

static void host_buffer_create(const sgfp4_vk_handles *h, VkDeviceSize size, host_buffer *hb)
{
    const VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                    .size = size,
                                    .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    assert_int_equal(vkCreateBuffer(h->device, &bci, NULL, &hb->buffer), VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(h->device, hb->buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(h->physical_device, &mp);
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    assert_int_not_equal(type, UINT32_MAX);
    const VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                      .allocationSize = req.size,
                                      .memoryTypeIndex = type};
    assert_int_equal(vkAllocateMemory(h->device, &mai, NULL, &hb->memory), VK_SUCCESS);
    assert_int_equal(vkBindBufferMemory(h->device, hb->buffer, hb->memory, 0), VK_SUCCESS);
    assert_int_equal(vkMapMemory(h->device, hb->memory, 0, VK_WHOLE_SIZE, 0, &hb->mapped),
                     VK_SUCCESS);
}

static void host_buffer_destroy(const sgfp4_vk_handles *h, host_buffer *hb)
{
    vkDestroyBuffer(h->device, hb->buffer, NULL);
    vkFreeMemory(h->device, hb->memory, NULL);
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
    const VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                .srcAccessMask = src_access,
                                .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* The recorded path, as a runtime uses it, on an adopted device: the host writes x; one
 * command buffer of ours records the quantizer, then (one barrier) three Class A products
 * of one x with nothing between them (q, k, v), a Class B product, then (a barrier) the same
 * q product again into a second output, and the host reads everything after one submission
 * (HOST barrier). Every result equals the oracle's; the status reports a NaN after a second
 * submission with one. */
static void test_recorded(void **state)
{
    (void)state;
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(contexts[0], &h);
    sgfp4_vk_context *ctx = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_context_import(&h, &ctx, NULL, &diag), SGFP4_OK);
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    sgfp4_vk_context_get_info(ctx, &info);
    assert_int_equal(info.matvec_path, SGFP4_VK_MATVEC_SHADER); /* adopted: no OpSDot */

    const uint64_t rows[3] = {130, 64, 200}, cols = 1100;
    const unsigned batch = 3;
    sgfp4_tensor *t[3];
    sgfp4_vk_tensor *vt[3];
    void *bytes[3];
    for (int i = 0; i < 3; i++) {
        float *w = gen_llm_weights(rows[i], cols, 60 + (uint64_t)i);
        sgfp4_encode_options o;
        sgfp4_encode_options_init(&o);
        o.profile = i == 1 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
        o.threads = 8;
        size_t size;
        assert_int_equal(sgfp4_encode_alloc(w, rows[i], cols, 0, &bytes[i], &size, &o, NULL),
                         SGFP4_OK);
        assert_int_equal(sgfp4_tensor_open(bytes[i], size, o.profile, rows[i], cols, &t[i], NULL,
                                           NULL),
                         SGFP4_OK);
        assert_int_equal(sgfp4_vk_tensor_create(ctx, t[i], &vt[i], NULL), SGFP4_OK);
        free(w);
    }
    float *x = malloc(sizeof *x * batch * cols);
    uint16_t *hx = malloc(sizeof *hx * batch * cols);
    fill_x(X_GAUSS, cols, batch, cols, SGFP4_DTYPE_F32, x, hx);
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, batch);
    /* y: 3 Class A outputs, one Class B, the repeated product: each batch x 200 floats. */
    enum { OUTS = 5, Y_ROWS = 200 };
    host_buffer xb, qb, yb;
    host_buffer_create(&h, sizeof *x * batch * cols, &xb);
    host_buffer_create(&h, q8_size, &qb);
    host_buffer_create(&h, sizeof(float) * OUTS * batch * Y_ROWS, &yb);
    memcpy(xb.mapped, x, sizeof *x * batch * cols);
    memset(yb.mapped, 0, sizeof(float) * OUTS * batch * Y_ROWS);

    sgfp4_vk_op *quant, *prod[OUTS];
    assert_int_equal(sgfp4_vk_quantize_create(ctx, xb.buffer, 0, SGFP4_DTYPE_F32, cols, batch, 0,
                                              qb.buffer, 0, NULL, &quant, &diag),
                     SGFP4_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sgfp4_vk_matvec_q8_create(ctx, vt[i], qb.buffer, 0, batch, yb.buffer,
                                                   sizeof(float) * i * batch * Y_ROWS, Y_ROWS,
                                                   NULL, &prod[i], &diag),
                         SGFP4_OK);
    assert_int_equal(sgfp4_vk_matvec_float_create(ctx, vt[2], xb.buffer, 0, SGFP4_DTYPE_F32,
                                                  batch, 0, yb.buffer,
                                                  sizeof(float) * 3 * batch * Y_ROWS, Y_ROWS,
                                                  NULL, &prod[3], &diag),
                     SGFP4_OK);
    assert_int_equal(sgfp4_vk_matvec_q8_create(ctx, vt[0], qb.buffer, 0, batch, yb.buffer,
                                               sizeof(float) * 4 * batch * Y_ROWS, Y_ROWS, NULL,
                                               &prod[4], &diag),
                     SGFP4_OK);
    assert_true(sgfp4_vk_op_bytes(prod[0]) > 0);

    VkCommandPool pool;
    const VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                         .queueFamilyIndex = h.queue_family};
    assert_int_equal(vkCreateCommandPool(h.device, &pci, NULL, &pool), VK_SUCCESS);
    VkCommandBuffer cmd;
    const VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                             .commandPool = pool,
                                             .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                             .commandBufferCount = 1};
    assert_int_equal(vkAllocateCommandBuffers(h.device, &cai, &cmd), VK_SUCCESS);
    VkFence fence;
    const VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    assert_int_equal(vkCreateFence(h.device, &fci, NULL, &fence), VK_SUCCESS);
    for (int round = 0; round < 2; round++) {
        if (round == 1) /* a NaN for the quantizer to report */
            ((float *)xb.mapped)[cols + 17] = NAN;
        const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        assert_int_equal(vkBeginCommandBuffer(cmd, &bi), VK_SUCCESS);
        /* Host writes to x (made available by the submission) -> the quantizer's reads. */
        barrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        sgfp4_vk_op_record(quant, cmd);
        barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        for (int i = 0; i < 4; i++)
            sgfp4_vk_op_record(prod[i], cmd); /* q, k, v and Class B: nothing between them */
        barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        sgfp4_vk_op_record(prod[4], cmd); /* tensor 0 again (prod[0]'s tensor, new scratch) */
        sgfp4_vk_op_record(NULL, cmd);    /* nothing */
        barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        assert_int_equal(vkEndCommandBuffer(cmd), VK_SUCCESS);
        const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                 .commandBufferCount = 1,
                                 .pCommandBuffers = &cmd};
        assert_int_equal(vkQueueSubmit(h.queue, 1, &si, fence), VK_SUCCESS);
        assert_int_equal(vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
        assert_int_equal(vkResetFences(h.device, 1, &fence), VK_SUCCESS);
        assert_int_equal(vkResetCommandBuffer(cmd, 0), VK_SUCCESS);
        if (round == 1) {
            assert_int_equal(sgfp4_vk_op_status(quant, &diag), SGFP4_ERR_ARGUMENT);
            assert_non_null(strstr(diag.message, "activation 17 of vector 1"));
            assert_int_equal(sgfp4_vk_op_status(quant, &diag), SGFP4_OK); /* reset */
            break;
        }
        assert_int_equal(sgfp4_vk_op_status(quant, &diag), SGFP4_OK);
        /* The oracle. */
        uint8_t *q8 = malloc(q8_size);
        assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, batch, 0, q8, q8_size,
                                               NULL, NULL),
                         SGFP4_OK);
        assert_memory_equal(q8, qb.mapped, q8_size);
        const float *got = yb.mapped;
        for (int i = 0; i < OUTS; i++) {
            const int ti = i == 3 ? 2 : i == 4 ? 0 : i;
            sgfp4_matvec_plan *plan;
            assert_int_equal(sgfp4_matvec_plan_create(t[ti], &plan), SGFP4_OK);
            float *want = calloc(batch * Y_ROWS, sizeof *want);
            if (i == 3)
                assert_int_equal(sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, batch, 0, 0, rows[ti],
                                                    want, Y_ROWS, sizeof *want * batch * Y_ROWS,
                                                    NULL),
                                 SGFP4_OK);
            else
                assert_int_equal(sgfp4_matvec_q8(plan, q8, q8_size, batch, 0, rows[ti], want,
                                                 Y_ROWS, sizeof *want * batch * Y_ROWS, NULL),
                                 SGFP4_OK);
            for (size_t k = 0; k < batch * Y_ROWS; k++)
                if (!same_bits(got[i * batch * Y_ROWS + k], want[k]))
                    fail_msg("recorded output %d: value %zu = %a, CPU %a", i, k,
                             (double)got[i * batch * Y_ROWS + k], (double)want[k]);
            free(want);
            sgfp4_matvec_plan_free(plan);
        }
        free(q8);
    }
    vkDestroyFence(h.device, fence, NULL);
    vkDestroyCommandPool(h.device, pool, NULL);
    sgfp4_vk_op_free(quant);
    for (int i = 0; i < OUTS; i++)
        sgfp4_vk_op_free(prod[i]);
    host_buffer_destroy(&h, &xb);
    host_buffer_destroy(&h, &qb);
    host_buffer_destroy(&h, &yb);
    for (int i = 0; i < 3; i++) {
        sgfp4_vk_tensor_free(ctx, vt[i]);
        sgfp4_tensor_close(t[i]);
        sgfp4_free(bytes[i]);
    }
    free(x);
    free(hx);
    sgfp4_vk_context_free(ctx);
}

/* Runs the kit's plain read of [offset, offset + bytes) of buf (words, on the host) with the
 * word at `marked` set to VKIT_READ_UNEXPECTED, every other word 0: whether the read wrote
 * its sink, i.e. whether it read that word. */
static int read_sees(vkit *kit, sgfp4_vk_buffer *buf, uint32_t *words, size_t n_words,
                     uint64_t offset, uint64_t bytes, size_t marked)
{
    sgfp4_vk_context *ctx = vkit_context(kit);
    sgfp4_diag diag;
    vkit_dispatch d;
    const VkBuffer handle = sgfp4_vk_buffer_handle(buf);
    if (vkit_read_prepare(kit, handle, offset, bytes, &d, &diag) != SGFP4_OK)
        fail_msg("read of %llu bytes at %llu: %s", (unsigned long long)bytes,
                 (unsigned long long)offset, diag.message);
    const uint32_t zero[4] = {0};
    uint32_t sink = 0;
    double seconds;
    words[marked] = VKIT_READ_UNEXPECTED;
    assert_int_equal(sgfp4_vk_buffer_write(ctx, handle, 0, words, 4 * n_words, &diag), SGFP4_OK);
    words[marked] = 0;
    assert_int_equal(sgfp4_vk_buffer_write(ctx, vkit_read_sink(kit), 0, zero, 16, &diag),
                     SGFP4_OK);
    assert_int_equal(vkit_time(kit, (vkit_step){NULL, &d}, &seconds, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_vk_buffer_read(ctx, vkit_read_sink(kit), 0, &sink, 4, &diag),
                     SGFP4_OK);
    vkit_dispatch_free(kit, &d);
    return sink == VKIT_READ_UNEXPECTED;
}

/* The benchmark kit's plain read: every word of its range (rounded up to whole words) is
 * read, whatever the split into whole vectors, tail words and workgroups, and no word
 * outside; it runs in the kit's bursts and streams; the range of a tensor's products is where
 * they read; arguments are checked. */
static void test_bench_read(void **state)
{
    (void)state;
    sgfp4_vk_context *ctx = contexts[0];
    sgfp4_diag diag;
    vkit *kit = NULL;
    assert_int_equal(vkit_open(ctx, &kit, &diag), SGFP4_OK);
    enum { WORDS = 24576 }; /* 96 KiB: three workgroups' chunks of 32 KiB */
    uint32_t *words = calloc(WORDS, 4);
    sgfp4_vk_buffer *buf = device_buffer(ctx, 4 * WORDS);
    /* (offset, bytes): whole vectors only; vectors and a tail; a tail alone; 255 vectors
     * and 3 tail words; three chunks and a partial word. */
    const uint64_t ranges[][2] = {{0, 8192}, {16, 1234}, {256, 4}, {4096, 4092}, {32, 80001}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        const size_t first = ranges[r][0] / 4, end = first + (ranges[r][1] + 3) / 4;
        /* both ends, the last word of the whole vectors, and words spread over the chunks */
        size_t inside[9] = {first, end - 1, first + (end - first) / 4 * 4 - 1};
        if (inside[2] < first)
            inside[2] = first;
        for (int k = 3; k < 9; k++)
            inside[k] = first + (size_t)(k - 2) * (end - first) / 7;
        for (int k = 0; k < 9; k++)
            if (!read_sees(kit, buf, words, WORDS, ranges[r][0], ranges[r][1], inside[k]))
                fail_msg("read of %llu bytes at %llu missed word %zu",
                         (unsigned long long)ranges[r][1], (unsigned long long)ranges[r][0],
                         inside[k]);
        if (first > 0)
            assert_false(read_sees(kit, buf, words, WORDS, ranges[r][0], ranges[r][1],
                                   first - 1));
        assert_false(read_sees(kit, buf, words, WORDS, ranges[r][0], ranges[r][1], end));
    }

    /* A v1 and a v2 tensor: the products read the container and the products' layout. */
    for (int profile = 1; profile <= 2; profile++) {
        gen_params p = gen_shape_params(profile, 70, 200);
        size_t size;
        uint8_t *bytes = gen_container_bytes(&p, 9, &size);
        sgfp4_tensor *t = NULL;
        sgfp4_vk_tensor *vt = NULL;
        assert_int_equal(sgfp4_tensor_open(bytes, size, (sgfp4_profile)profile, 70, 200, &t,
                                           NULL, NULL),
                         SGFP4_OK);
        assert_int_equal(sgfp4_vk_tensor_create(ctx, t, &vt, NULL), SGFP4_OK);
        VkBuffer where = VK_NULL_HANDLE;
        VkDeviceSize offset = 1;
        uint64_t n = 0;
        assert_int_equal(sgfp4_vk_tensor_product_range(vt, &where, &offset, &n, &diag), SGFP4_OK);
        assert_true(where == (profile == 1 ? vt->container.buffer : vt->product.buffer));
        assert_int_equal(offset, 0);
        assert_int_equal(n, profile == 1 ? size : vt->product_bytes);
        vkit_dispatch d[2];
        vkit_step steps[2];
        for (int i = 0; i < 2; i++) {
            assert_int_equal(vkit_read_prepare(kit, where, offset, n, &d[i], &diag), SGFP4_OK);
            steps[i] = (vkit_step){NULL, &d[i]};
        }
        for (int stream = 0; stream < 2; stream++) {
            double seconds[3] = {0};
            assert_int_equal(vkit_run(kit, steps, 2, NULL, 3, stream, seconds, NULL, &diag),
                             SGFP4_OK);
            for (int i = 0; i < 3; i++)
                assert_true(seconds[i] > 0);
        }
        for (int i = 0; i < 2; i++)
            vkit_dispatch_free(kit, &d[i]);
        assert_int_equal(sgfp4_vk_tensor_product_range(vt, &where, &offset, NULL, &diag),
                         SGFP4_ERR_ARGUMENT);
        assert_int_equal(sgfp4_vk_tensor_product_range(NULL, &where, &offset, &n, &diag),
                         SGFP4_ERR_ARGUMENT);
        sgfp4_vk_tensor_free(ctx, vt);
        sgfp4_tensor_close(t);
        free(bytes);
    }

    const VkBuffer handle = sgfp4_vk_buffer_handle(buf);
    vkit_dispatch d;
    assert_int_equal(vkit_read_prepare(kit, handle, 8, 64, &d, &diag),
                     SGFP4_ERR_ARGUMENT); /* offset not a multiple of 16 */
    assert_int_equal(vkit_read_prepare(kit, handle, 0, 0, &d, &diag),
                     SGFP4_ERR_ARGUMENT); /* no bytes */
    assert_int_equal(vkit_read_prepare(NULL, handle, 0, 64, &d, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(vkit_read_prepare(kit, VK_NULL_HANDLE, 0, 64, &d, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(vkit_read_prepare(kit, handle, 0, 64, NULL, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_vk_buffer_free(ctx, buf);
    free(words);
    vkit_close(kit);
}

/* The benchmark kit's stream: two products recorded back to back write the bits of the
 * synchronous call, each into its own output; its arguments are checked. */
static void test_kit_stream(void **state)
{
    (void)state;
    sgfp4_vk_context *ctx = contexts[0];
    sgfp4_diag diag;
    const uint64_t cols = SMALL_COLS;
    small_tensor small = small_tensor_make(ctx);
    sgfp4_vk_tensor *vt = small.vt;
    sgfp4_vk_buffer *b = device_buffer(ctx, 4096);
    const VkBuffer buf = sgfp4_vk_buffer_handle(b);
    vkit *kit = NULL;
    assert_int_equal(vkit_open(ctx, &kit, &diag), SGFP4_OK);
    float x[SMALL_COLS], y[3][SMALL_ROWS];
    for (uint64_t i = 0; i < cols; i++)
        x[i] = (float)((int)below(2001) - 1000) / 256.0f;
    assert_int_equal(sgfp4_vk_buffer_write(ctx, buf, 0, x, sizeof x, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_vk_matvec_float(ctx, vt, buf, 0, SGFP4_DTYPE_F32, 1, 0, buf, 1024, 0,
                                           NULL, &diag),
                     SGFP4_OK);
    sgfp4_vk_op *ops[2] = {NULL, NULL};
    vkit_step steps[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sgfp4_vk_matvec_float_create(ctx, vt, buf, 0, SGFP4_DTYPE_F32, 1, 0, buf,
                                                      2048 + 1024 * (uint64_t)i, 0, NULL, &ops[i],
                                                      &diag),
                         SGFP4_OK);
        steps[i] = (vkit_step){ops[i], NULL};
    }
    double op_seconds[3];
    assert_int_equal(vkit_run(kit, steps, 2, NULL, 3, 1, op_seconds, NULL, &diag), SGFP4_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sgfp4_vk_buffer_read(ctx, buf, 1024 + 1024 * (uint64_t)i, y[i],
                                              sizeof y[i], &diag),
                         SGFP4_OK);
        if (i > 0)
            assert_memory_equal(y[0], y[i], sizeof y[i]);
    }
    for (int i = 0; i < 3; i++)
        assert_true(op_seconds[i] > 0);
    assert_int_equal(vkit_run(kit, steps, 2, NULL, 0, 1, op_seconds, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* no rounds */
    assert_int_equal(vkit_run(NULL, steps, 2, NULL, 1, 1, op_seconds, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(vkit_run(kit, steps, 0, NULL, 1, 1, op_seconds, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(vkit_run(kit, steps, 2, NULL, VKIT_MAX_TIMED, 1, op_seconds, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* more dispatches than one submission times */
    vkit_dispatch d;
    assert_int_equal(vkit_copy_prepare(kit, buf, buf, 24, &d, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_vk_op_free(ops[0]);
    sgfp4_vk_op_free(ops[1]);
    vkit_close(kit);
    sgfp4_vk_buffer_free(ctx, b);
    small_tensor_free(ctx, &small);
}
#else
static void test_recorded(void **state)
{
    (void)state;
    skip();
}

static void test_bench_read(void **state)
{
    (void)state;
    skip();
}

static void test_kit_stream(void **state)
{
    (void)state;
    skip();
}
#endif

/* Arguments are checked; nothing aborts; nothing is written on an error. */
static void test_bad_arguments(void **state)
{
    (void)state;
    sgfp4_vk_context *ctx = contexts[0];
    sgfp4_diag diag;
    const uint64_t rows = SMALL_ROWS, cols = SMALL_COLS;
    small_tensor small = small_tensor_make(ctx);
    sgfp4_vk_tensor *vt = small.vt;
    assert_true(sgfp4_vk_tensor_table_bytes(vt) > 0);
    assert_int_equal(sgfp4_vk_tensor_table_bytes(NULL), 0);
    assert_int_equal(sgfp4_vk_tensor_device_bytes(NULL), 0);
    sgfp4_vk_buffer *b = device_buffer(ctx, 4096);
    const VkBuffer buf = sgfp4_vk_buffer_handle(b);
    sgfp4_vk_op *op = (sgfp4_vk_op *)&diag; /* must be reset to NULL on failure */
    assert_int_equal(sgfp4_vk_matvec_q8_create(NULL, vt, buf, 0, 1, buf, 0, 0, NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_null(op);
    assert_int_equal(sgfp4_vk_matvec_q8_create(ctx, NULL, buf, 0, 1, buf, 0, 0, NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_matvec_q8_create(ctx, vt, buf, 0, 1, buf, 0, 0, NULL, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 0, buf, 0, 0, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* batch 0 */
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 17, buf, 0, 0, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* batch 17 */
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 2, 1, buf, 0, 0, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* q8 offset not a multiple of 4 */
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 1, buf, 6, 0, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* y offset */
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 2, buf, 0, rows - 1, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* y stride below rows */
    assert_int_equal(sgfp4_vk_matvec_float(ctx, vt, buf, 0, SGFP4_DTYPE_F32, 2, cols - 1, buf, 0,
                                           0, NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* x stride below cols */
    assert_int_equal(sgfp4_vk_matvec_float(ctx, vt, buf, 0, SGFP4_DTYPE_BF16, 1, 0, buf, 0, 0,
                                           NULL, &diag),
                     SGFP4_ERR_UNSUPPORTED);
    assert_int_equal(sgfp4_vk_matvec_float(ctx, vt, buf, 2, SGFP4_DTYPE_F32, 1, 0, buf, 0, 0,
                                           NULL, &diag),
                     SGFP4_ERR_ARGUMENT); /* an f32 x at a 2-byte offset */
    sgfp4_vk_matvec_options o;
    sgfp4_vk_matvec_options_init(&o);
    o.slices = 3;
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 1, buf, 0, 0, &o, &diag),
                     SGFP4_ERR_ARGUMENT); /* not a power of two */
    o.slices = 2; /* 2 blocks: 4 per workgroup is already more than the row has */
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 1, buf, 0, 0, &o, &diag),
                     SGFP4_ERR_ARGUMENT);
    o.struct_size = 3;
    assert_int_equal(sgfp4_vk_matvec_q8(ctx, vt, buf, 0, 1, buf, 0, 0, &o, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_quantize(ctx, buf, 0, SGFP4_DTYPE_BF16, cols, 1, 0, buf, 0, NULL,
                                       &diag),
                     SGFP4_ERR_UNSUPPORTED);
    assert_int_equal(sgfp4_vk_quantize(ctx, buf, 0, SGFP4_DTYPE_F32, 0, 1, 0, buf, 0, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_quantize(ctx, buf, 0, SGFP4_DTYPE_F32, cols, 1, cols - 1, buf, 0,
                                       NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_quantize(ctx, buf, 2, SGFP4_DTYPE_F32, cols, 1, 0, buf, 0, NULL,
                                       &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_op_run(NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_op_status(NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_op_bytes(NULL), 0);
    sgfp4_vk_op_free(NULL);
    sgfp4_vk_op_record(NULL, NULL);
    sgfp4_vk_buffer_free(ctx, b);
    small_tensor_free(ctx, &small);
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
            printf("skip: device %s has no exact matrix-vector path (no RTE float32)\n",
                   info.name);
            return 77;
        }
        printf("context %s: device %s, matvec path %s\n", context_names[c], info.name,
               info.matvec_path == SGFP4_VK_MATVEC_DOT_PRODUCT ? "OpSDot" : "written-out dot");
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments), cmocka_unit_test(test_golden),
        cmocka_unit_test(test_shapes),        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_hostile),       cmocka_unit_test(test_recorded),
        cmocka_unit_test(test_encoded),       cmocka_unit_test(test_real_tensors),
        cmocka_unit_test(test_run_to_run),    cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_bench_read),    cmocka_unit_test(test_kit_stream),
    };
    if (getenv("SGFP4_VK_TEST")) /* one test by name, while developing */
        cmocka_set_test_filter(getenv("SGFP4_VK_TEST"));
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    for (int c = 0; c < CTX_COUNT; c++)
        sgfp4_vk_context_free(contexts[c]);
    return failed;
}
