/* Matrix-vector products (DECISIONS D8) and the Class A quantizer:
 *   - the quantizer bit for bit against the test's own (d8_reference.c) on hostile values
 *     (zeros, -0, the 2^-40 floor and around it, subnormals, 1e30, FLT_MAX, ties), f16
 *     input, padding, strides; NaN and infinity refused with the place named;
 *   - the oracle (backend SCALAR) bit for bit against the test's own D8 and within the
 *     documented bound of a float64 product, both classes, f32 and f16 activations, batches
 *     1..16, on the random corpus and the odd shapes with every layout (tools/datagen/generator.c:
 *     intended content, independent of src/), the
 *     golden containers, encoder output of odd shapes and of real tensors
 *     (../shared/weights), with hostile activations;
 *   - every kernel set, thread count and row split bit-identical to the oracle
 *     (matvec_paths.c), and the public calls with their options;
 *   - the caller's floating-point modes change nothing; every argument error; the plan's
 *     memory through the tensor's allocator.
 * SPDX-License-Identifier: MIT */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "matvec/d8_reference.h"
#include "matvec/matvec_paths.h"
#include "matvec/repack.h"
#include "sgfp4_experimental.h"
#include "sgfp4_model.h"
#include "datagen/generator.h"
#include "datagen/reference_numbers.h"
#include "support/options.h"
#include "support/real_matrices.h"

static const sgfp4_matvec_kernels *kernel_sets[MATVEC_MAX_KERNEL_SETS];
static unsigned kernel_set_count;
static const unsigned thread_counts[] = {1, 2, 3, 7};
static matvec_check paths = {.rng = {271828}, .thread_counts = thread_counts,
                             .thread_count_n = sizeof thread_counts / sizeof thread_counts[0]};
static matvec_rng rng = {314159};
static uint64_t series_checked, results_checked, bounds_checked;

static uint64_t below(uint64_t n) { return matvec_rng_below(&rng, n); }

/* The pool half the path checks' calls and the public calls run on (4 threads: counts
 * above it are capped). */
static sgfp4_thread_pool *pool;

static int setup(void **state)
{
    (void)state;
    if (sgfp4_thread_pool_create(4, &pool) != SGFP4_OK)
        return -1;
    paths.pool = pool;
    kernel_set_count = matvec_kernel_sets(kernel_sets);
    print_message("matvec kernel sets on this CPU: %u (best: %s)\n", kernel_set_count,
                  sgfp4_matvec_backend_name(SGFP4_BACKEND_AUTO));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sgfp4_thread_pool_free(pool);
    return 0;
}

static sgfp4_matvec_options scalar_options(void)
{
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.backend = SGFP4_BACKEND_SCALAR;
    return o;
}

/* A random container of the differential corpus (tools/datagen/generator.c). */
static int generate(gen_container *c, gen_rng *r, int profile)
{
    const gen_params p = gen_corpus_params(profile);
    return gen_generate(c, r, &p);
}

/* ---- activations ---- */

typedef enum x_kind {
    X_GAUSS,        /* ordinary values, a random power-of-two scale per block */
    X_ZEROS,        /* +0 */
    X_NEG_ZEROS,    /* -0 */
    X_BELOW_B,      /* below Class B's 2^-60 floor (subnormals too), and exactly 2^-60 */
    X_BELOW_A,      /* between 2^-60 and Class A's 2^-40 floor, and exactly 2^-40 */
    X_HUGE,         /* 1e30, FLT_MAX, 2^127 among ordinary values */
    X_TIES,         /* (k + 1/2) * 2^s in blocks whose maximum is 127 * 2^s: quantizer ties */
    X_MIXED,        /* each block one of the above */
    X_NONFINITE,    /* ordinary values with NaN and infinities (Class B only) */
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
        const unsigned pick = (unsigned)below(8);
        return pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                                                                  : value_of(X_GAUSS, scale);
    }
    default: return 0.0f;
    }
}

/* x[batch][cols] of `kind`; F16: the values are those of the halves in h[batch][cols]. */
static void fill_x(x_kind kind, uint64_t cols, unsigned batch, sgfp4_dtype dtype, float *x,
                   uint16_t *h)
{
    for (unsigned n = 0; n < batch; n++)
        for (uint64_t b = 0; b * 64 < cols; b++) {
            const x_kind k = kind == X_MIXED ? (x_kind)below(X_MIXED) : kind;
            const int scale = dtype == SGFP4_DTYPE_F16 ? (int)below(16) - 10 : (int)below(41) - 20;
            float *xb = x + n * cols + b * 64;
            const unsigned width = (unsigned)(cols - b * 64 < 64 ? cols - b * 64 : 64);
            for (unsigned j = 0; j < width; j++)
                xb[j] = value_of(k, scale);
            if (k == X_TIES) /* the block maximum fixes e = scale */
                xb[below(width)] = signed_random((float)ldexp(127, scale));
        }
    if (dtype == SGFP4_DTYPE_F16)
        for (uint64_t i = 0; i < batch * cols; i++) {
            if (isfinite(x[i]) && fabsf(x[i]) > 65504.0f) /* the largest half instead */
                x[i] = copysignf(65504.0f, x[i]);
            h[i] = ref_float_to_half(x[i]);
            x[i] = (float)ref_half_value(h[i]);
        }
}

/* ---- one series: a tensor, activations of one kind, one class ---- */

typedef struct series {
    const char *what;
    x_kind kind;
    unsigned batch;
    sgfp4_dtype dtype;
    bool class_a;
    unsigned rounds; /* path rounds per kernel set */
} series;

static void fail_series(const series *s, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void fail_series(const series *s, const char *format, ...)
{
    char text[700];
    va_list ap;
    va_start(ap, format);
    vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    fail_msg("%s, class %c, %s x (%s), batch %u: %s", s->what, s->class_a ? 'A' : 'B',
             kind_names[s->kind], s->dtype == SGFP4_DTYPE_F16 ? "f16" : "f32", s->batch, text);
}

static void check_series(const sgfp4_matvec_plan *plan, const d8_matrix *m, const series *s)
{
    const uint64_t rows = m->rows, cols = m->cols, tiles = m->padded_cols / 64;
    const unsigned batch = s->batch;
    float *x = malloc(batch * cols * sizeof *x);
    uint16_t *h = malloc(batch * cols * sizeof *h);
    float *y = malloc(batch * rows * sizeof *y), *want = malloc(rows * sizeof *want);
    double *exact = malloc(rows * sizeof *exact), *bound = malloc(rows * sizeof *bound);
    int8_t *q = malloc(tiles * 64);
    float *d = malloc(tiles * sizeof *d);
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, batch);
    uint8_t *q8 = malloc(q8_size);
    assert_true(x && h && y && want && exact && bound && q && d && q8 && q8_size);
    fill_x(s->kind, cols, batch, s->dtype, x, h);
    const void *input = s->dtype == SGFP4_DTYPE_F16 ? (const void *)h : (const void *)x;
    const sgfp4_matvec_options scalar = scalar_options();
    const size_t vector_bytes = q8_size / batch;
    sgfp4_matvec_x xv;

    /* the oracle through the public call */
    if (s->class_a) {
        sgfp4_diag diag;
        if (sgfp4_matvec_quantize(input, s->dtype, cols, batch, 0, q8, q8_size, &scalar,
                                  &diag) != SGFP4_OK)
            fail_series(s, "quantize: %s", diag.message);
        assert_int_equal(sgfp4_matvec_q8(plan, q8, q8_size, batch, 0, rows, y, 0,
                                         batch * rows * sizeof *y, &scalar),
                         SGFP4_OK);
        xv = (sgfp4_matvec_x){q8, vector_bytes, SGFP4_DTYPE_F32, batch};
    } else {
        assert_int_equal(sgfp4_matvec_float(plan, input, s->dtype, batch, 0, 0, rows, y, 0,
                                            batch * rows * sizeof *y, &scalar),
                         SGFP4_OK);
        xv = (sgfp4_matvec_x){input, cols * sgfp4_dtype_size(s->dtype), s->dtype, batch};
    }

    /* against the test's own D8, vector by vector */
    for (unsigned n = 0; n < batch; n++) {
        const float *xn = x + n * cols;
        if (s->class_a) {
            d8_quantize(xn, cols, q, d);
            const uint8_t *got = q8 + n * vector_bytes;
            for (uint64_t i = 0; i < tiles * 64; i++)
                if ((int8_t)got[i] != q[i])
                    fail_series(s, "vector %u: q[%llu] is %d, the test's quantizer %d", n,
                                (unsigned long long)i, (int8_t)got[i], q[i]);
            for (uint64_t b = 0; b < tiles; b++) {
                float gd;
                memcpy(&gd, got + tiles * 64 + 4 * b, 4);
                if (ref_bits_of(gd) != ref_bits_of(d[b]))
                    fail_series(s, "vector %u: d[%llu] is %a, the test's quantizer %a", n,
                                (unsigned long long)b, (double)gd, (double)d[b]);
            }
            for (size_t i = tiles * 68; i < vector_bytes; i++)
                assert_int_equal(got[i], 0);
            assert_true(d8_product_a(m, q, d, want));
            d8_float64_a(m, q, d, exact, bound);
        } else {
            assert_true(d8_product_b(m, xn, want));
            d8_float64_b(m, xn, exact, bound);
        }
        for (uint64_t r = 0; r < rows; r++) {
            const float got = y[n * rows + r];
            if (!d8_same(got, want[r]))
                fail_series(s, "vector %u, row %llu: the oracle gives %a (0x%08x), the test's "
                               "D8 %a (0x%08x)",
                            n, (unsigned long long)r, (double)got, ref_bits_of(got),
                            (double)want[r], ref_bits_of(want[r]));
            results_checked++;
            if (bound[r] >= 0 && isfinite(exact[r])) {
                if (!(fabs((double)got - exact[r]) <= bound[r]))
                    fail_series(s, "vector %u, row %llu: %a is %g from the float64 product %a, "
                                   "beyond the bound %g",
                                n, (unsigned long long)r, (double)got,
                                fabs((double)got - exact[r]), exact[r], bound[r]);
                bounds_checked++;
            }
        }
    }

    /* every kernel set, thread count and row split against the oracle */
    const matvec_inputs in = {s->class_a, xv, y};
    for (unsigned k = 0; k < kernel_set_count; k++) {
        if (s->class_a) {
            for (unsigned n = 0; n < batch; n++)
                if (!matvec_check_quantizer(&paths, kernel_sets[k],
                                            (const uint8_t *)input +
                                                n * cols * sgfp4_dtype_size(s->dtype),
                                            s->dtype, cols))
                    fail_series(s, "%s", paths.message);
        }
        if (!matvec_check_paths(&paths, plan, &in, kernel_sets[k], s->rounds))
            fail_series(s, "%s", paths.message);
    }

    /* the public call with the default backend and threads equals the oracle */
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.threads = 1 + (unsigned)below(4);
    o.pool = below(2) ? pool : NULL;
    float *y2 = malloc(batch * rows * sizeof *y2);
    assert_non_null(y2);
    if (s->class_a)
        assert_int_equal(sgfp4_matvec_q8(plan, q8, q8_size, batch, 0, rows, y2, rows,
                                         batch * rows * sizeof *y2, &o),
                         SGFP4_OK);
    else
        assert_int_equal(sgfp4_matvec_float(plan, input, s->dtype, batch, cols, 0, rows, y2, rows,
                                            batch * rows * sizeof *y2, &o),
                         SGFP4_OK);
    for (uint64_t i = 0; i < batch * rows; i++)
        if (!d8_same(y[i], y2[i]))
            fail_series(s, "AUTO on %u threads%s differs at %llu", o.threads,
                        o.pool ? " of a pool" : "", (unsigned long long)i);
    free(y2);
    series_checked++;
    free(x);
    free(h);
    free(y);
    free(want);
    free(exact);
    free(bound);
    free(q);
    free(d);
    free(q8);
}

/* What the series ran on plans with the repacked layout (matvec/repack.h) and what those
 * layouts held: repacked_layout_is_exercised() asserts that every feature was covered. */
static uint64_t repacked_series, plain_v2_series, wide_groups, t158_blocks, small_leaf_blocks;
/* Class B series on the layout (and those with a padded last block column) */
static uint64_t repacked_b_series, repacked_b_padded_series;
/* v1 series on plans with the layout and without (the container's whole-block paths) */
static uint64_t repacked_v1_series, plain_v1_series;
/* What the layouts of a class's series on repacked plans held (summed per series), in both
 * classes the two ways the AVX-512 sets take a unit's S and B: units whose four tiles lie in
 * one leaf whose entry is in the tables' second register, and units of several leaves;
 * groups whose units all lie in one leaf each (the pairs' form of the meta), and the others
 * (the tables' form; their two loops). */
typedef struct unit_mix {
    uint64_t one_leaf_high_units, several_leaf_units, one_leaf_groups, mixed_groups;
} unit_mix;
static unit_mix class_mix[2]; /* [class_a] */

static void unit_mix_add(unit_mix *to, const unit_mix *from)
{
    to->one_leaf_high_units += from->one_leaf_high_units;
    to->several_leaf_units += from->several_leaf_units;
    to->one_leaf_groups += from->one_leaf_groups;
    to->mixed_groups += from->mixed_groups;
}

static void tally_repack(const sgfp4_matvec_plan *plan, unit_mix *mix)
{
    const sgfp4_tensor *t = plan->tensor;
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    for (uint64_t b = 0; b < t->blocks; b++) {
        const uint8_t *blk = sgfp4_matvec_repacked_block(plan, b);
        for (unsigned g = 0; g < 8; g++) {
            const unsigned count = blk[SGFP4_RP_CODES + 16 + g];
            wide_groups += count > 16; /* the tables' second register */
            const uint8_t *tile = blk + sgfp4_load_u16le(blk + SGFP4_RP_CODES + 2 * g);
            if (count == 0) { /* every unit in one leaf: the meta holds their (S, B) pairs */
                mix->one_leaf_groups++;
                continue;
            }
            bool all_one = true;
            for (unsigned p = 0; p < 8; p++) {
                const uint8_t *four = tile + 4 * p;
                const bool one = four[0] == four[1] && four[0] == four[2] && four[0] == four[3];
                mix->one_leaf_high_units += one && four[0] >= 16;
                mix->several_leaf_units += !one;
                all_one &= one;
            }
            assert_false(all_one); /* such a group has the pairs' form */
            mix->mixed_groups++;
        }
        const unsigned n = sgfp4_block_leaf_refs(t, b, leaves);
        bool t158 = false, small = false;
        for (unsigned i = 0; i < n; i++) {
            t158 |= leaves[i].mode == SGFP4_MODE_T158;
            small |= leaves[i].size == 4;
        }
        t158_blocks += t158;
        small_leaf_blocks += small;
    }
}

/* A tensor's plans: with the repacked layout where the fastest set reads it (as
 * sgfp4_matvec_plan_create builds it), and one without. */
typedef struct plan_pair {
    sgfp4_matvec_plan *plans[2];
    unit_mix mix; /* the repacked plan's units and groups */
} plan_pair;

static void plan_pair_make(const sgfp4_tensor *t, plan_pair *pp)
{
    memset(pp, 0, sizeof *pp);
    assert_int_equal(sgfp4_matvec_plan_create(t, &pp->plans[0]), SGFP4_OK);
    const bool repack = sgfp4_matvec_kernels_best()->reads_repack;
    assert_true((pp->plans[0]->repack != NULL) == repack);
    if (repack) {
        tally_repack(pp->plans[0], &pp->mix);
        assert_int_equal(sgfp4_matvec_plan_create_with(t, false, &pp->plans[1]), SGFP4_OK);
        assert_null(pp->plans[1]->repack);
    }
}

static void plan_pair_free(plan_pair *pp)
{
    sgfp4_matvec_plan_free(pp->plans[0]);
    sgfp4_matvec_plan_free(pp->plans[1]);
}

/* Series s on plan `which` of pp (the one without the layout where there is one), counted. */
static void run_series(const plan_pair *pp, unsigned which, const sgfp4_tensor *t,
                       const d8_matrix *m, series *s)
{
    if (s->class_a && s->kind == X_NONFINITE)
        s->kind = X_MIXED;
    const sgfp4_matvec_plan *plan = pp->plans[1] && which ? pp->plans[1] : pp->plans[0];
    repacked_series += plan->repack != NULL;
    repacked_b_series += plan->repack && !s->class_a;
    repacked_b_padded_series += plan->repack && !s->class_a && t->cols % SGFP4_MB != 0;
    if (plan->repack)
        unit_mix_add(&class_mix[s->class_a], &pp->mix);
    plain_v2_series += t->profile == SGFP4_PROFILE_V2 && !plan->repack;
    plain_v1_series += t->profile == SGFP4_PROFILE_V1 && !plan->repack;
    repacked_v1_series += t->profile == SGFP4_PROFILE_V1 && plan->repack;
    check_series(plan, m, s);
}

/* Both classes with random activation kinds, batches and dtypes; a tensor (v1 or v2) on a
 * plan with the repacked layout and on one without, pairs of series (both classes) on each. */
static void check_tensor(const char *what, const sgfp4_tensor *t, const d8_matrix *m,
                         unsigned count, unsigned rounds)
{
    plan_pair pp;
    plan_pair_make(t, &pp);
    static const unsigned batches[] = {1, 1, 2, 3, 4, 5, 8, 16};
    for (unsigned i = 0; i < count; i++) {
        series s = {what, (x_kind)below(X_KINDS), batches[below(8)],
                    below(4) ? SGFP4_DTYPE_F32 : SGFP4_DTYPE_F16, i % 2 == 0, rounds};
        run_series(&pp, (i / 2) % 2, t, m, &s);
    }
    plan_pair_free(&pp);
}

/* Every batch size 1..SGFP4_MATVEC_MAX_BATCH, both classes, on both plans: the kernels take
 * a batch's vectors in chunks that share each block's weights, so every chunk width and
 * every remainder (5, 7, 13, ...) must give each vector its own product. */
static void check_every_batch(const char *what, const sgfp4_tensor *t, const d8_matrix *m,
                              unsigned rounds)
{
    plan_pair pp;
    plan_pair_make(t, &pp);
    for (unsigned batch = 1; batch <= SGFP4_MATVEC_MAX_BATCH; batch++)
        for (unsigned i = 0; i < 4; i++) {
            const x_kind kinds[] = {X_GAUSS, X_MIXED, X_TIES, X_HUGE};
            series s = {what, kinds[below(4)], batch,
                        below(4) ? SGFP4_DTYPE_F32 : SGFP4_DTYPE_F16, i % 2 == 0, rounds};
            run_series(&pp, i / 2, t, m, &s);
        }
    plan_pair_free(&pp);
}

static sgfp4_tensor *open_or_fail(const void *data, size_t size, sgfp4_profile profile,
                                  uint64_t rows, uint64_t cols)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(data, size, profile, rows, cols, &t, NULL, &diag) != SGFP4_OK)
        fail_msg("open %llux%llu: %s", (unsigned long long)rows, (unsigned long long)cols,
                 diag.message);
    return t;
}

/* ---- the quantizer ---- */

static void quantize_one(const float *x, uint64_t cols, uint8_t *q8, size_t size)
{
    sgfp4_diag diag;
    if (sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 1, 0, q8, size, NULL, &diag) !=
        SGFP4_OK)
        fail_msg("quantize: %s", diag.message);
}

static float d_of(const uint8_t *q8, uint64_t tiles, uint64_t b)
{
    float d;
    memcpy(&d, q8 + tiles * 64 + 4 * b, 4);
    return d;
}

static void quantizer_known_values(void **state)
{
    (void)state;
    uint8_t q8[2 * 68 + 64];
    float x[128] = {0};
    /* block 0: maximum 127, so e = 0 and q = round_half_even(x): ties go to even */
    const float ties[] = {127, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -0.0f, 3.49f};
    const int want[] = {127, 0, 2, 2, 0, -2, -2, 126, 0, 3};
    memcpy(x, ties, sizeof ties);
    /* block 1: maximum 2^-40 exactly: e = -46 (127 * 2^-47 < 2^-40 <= 127 * 2^-46) */
    x[64] = 0x1p-40f;
    x[65] = -0x1p-41f;
    x[66] = 0x1p-149f; /* a subnormal rounds to 0 */
    quantize_one(x, 128, q8, sizeof q8);
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_int_equal((int8_t)q8[i], want[i]);
    assert_true(d_of(q8, 2, 0) == 1.0f);
    assert_true(d_of(q8, 2, 1) == 0x1p-46f);
    assert_int_equal((int8_t)q8[64], 64);
    assert_int_equal((int8_t)q8[65], -32);
    assert_int_equal((int8_t)q8[66], 0);

    /* just above 127 needs e = 1; just below 2^-40 gives d = 0 and q = 0 */
    memset(x, 0, sizeof x);
    x[0] = 0x1.fc0002p6f; /* 127.00001 */
    x[1] = 3.0f;          /* 1.5: a tie, to 2 */
    x[64] = 0x1.fffffep-41f;
    x[70] = -0x1.fffffep-41f;
    quantize_one(x, 128, q8, sizeof q8);
    assert_true(d_of(q8, 2, 0) == 2.0f);
    assert_int_equal((int8_t)q8[0], 64); /* 63.500005 rounds up */
    assert_int_equal((int8_t)q8[1], 2);
    assert_true(ref_bits_of(d_of(q8, 2, 1)) == 0); /* +0 */
    for (unsigned i = 64; i < 128; i++)
        assert_int_equal(q8[i], 0);

    /* the largest floats: FLT_MAX needs e = 122, and rounds to 64 */
    memset(x, 0, sizeof x);
    x[0] = FLT_MAX;
    x[1] = -1e30f;
    x[64] = -0.0f;
    quantize_one(x, 128, q8, sizeof q8);
    assert_true(d_of(q8, 2, 0) == 0x1p122f);
    assert_int_equal((int8_t)q8[0], 64);
    assert_int_equal((int8_t)q8[1], 0); /* 1e30 / 2^122 = 1.9e-7 */
    assert_true(ref_bits_of(d_of(q8, 2, 1)) == 0);
}

static void quantizer_refuses_non_finite(void **state)
{
    (void)state;
    float x[200];
    for (unsigned i = 0; i < 200; i++)
        x[i] = (float)i;
    uint8_t q8[4 * 320];
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (unsigned k = 0; k < 3; k++) {
        x[137] = bad[k];
        sgfp4_diag diag;
        assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, 100, 2, 100, q8, sizeof q8,
                                               NULL, &diag),
                         SGFP4_ERR_ARGUMENT);
        assert_non_null(strstr(diag.message, "vector 1, column 37"));
        assert_non_null(strstr(diag.message, k == 0 ? "NaN" : "infinite"));
        assert_int_equal(diag.offset, 137 * 4);
        assert_int_equal(diag.row, 1);
        assert_int_equal(diag.col, 37);
    }
    uint16_t h[64] = {0};
    h[5] = 0x7C00; /* f16 infinity */
    sgfp4_diag diag;
    assert_int_equal(sgfp4_matvec_quantize(h, SGFP4_DTYPE_F16, 64, 1, 0, q8, sizeof q8, NULL,
                                           &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_non_null(strstr(diag.message, "column 5"));
}

/* Random and hostile vectors of odd lengths, f32 and f16, against the test's quantizer;
 * every kernel set's quantizer against the reference. */
static void quantizer_matches_reference(void **state)
{
    (void)state;
    static const uint64_t lengths[] = {1, 3, 63, 64, 65, 130, 200, 1000};
    for (unsigned i = 0; i < 160; i++) {
        const uint64_t cols = lengths[i % 8];
        const sgfp4_dtype dtype = i % 3 == 2 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32;
        const x_kind kind = (x_kind)(i / 8 % X_NONFINITE);
        const unsigned batch = 1 + (unsigned)below(3);
        float *x = malloc(batch * cols * 4);
        uint16_t *h = malloc(batch * cols * 2);
        const size_t size = sgfp4_matvec_q8_bytes(cols, batch);
        uint8_t *q8 = malloc(size);
        int8_t *q = malloc((cols + 63) / 64 * 64);
        float *d = malloc((cols + 63) / 64 * 4);
        assert_true(x && h && q8 && q && d);
        fill_x(kind, cols, batch, dtype, x, h);
        memset(q8, 0xEE, size);
        const void *in = dtype == SGFP4_DTYPE_F16 ? (const void *)h : (const void *)x;
        assert_int_equal(sgfp4_matvec_quantize(in, dtype, cols, batch, 0, q8, size, NULL, NULL),
                         SGFP4_OK);
        const uint64_t tiles = (cols + 63) / 64;
        for (unsigned n = 0; n < batch; n++) {
            d8_quantize(x + n * cols, cols, q, d);
            const uint8_t *v = q8 + n * (size / batch);
            assert_memory_equal(v, q, tiles * 64);
            assert_memory_equal(v + tiles * 64, d, tiles * 4);
            for (size_t p = tiles * 68; p < size / batch; p++)
                assert_int_equal(v[p], 0);
            for (unsigned k = 0; k < kernel_set_count; k++)
                if (!matvec_check_quantizer(&paths, kernel_sets[k],
                                            (const uint8_t *)in + n * cols * sgfp4_dtype_size(dtype),
                                            dtype, cols))
                    fail_msg("%s", paths.message);
        }
        free(x);
        free(h);
        free(q8);
        free(q);
        free(d);
    }
}

/* f16 activations give the bits of the same values as f32, in both classes. */
static void f16_equals_f32(void **state)
{
    (void)state;
    gen_rng r = {77};
    gen_container c;
    assert_int_equal(generate(&c, &r, 2), 0);
    sgfp4_tensor *t = open_or_fail(c.data, c.size, SGFP4_PROFILE_V2, c.rows, c.cols);
    sgfp4_matvec_plan *plan;
    assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
    const uint64_t n = c.cols;
    uint16_t *h = malloc(n * 2);
    float *x = malloc(n * 4), *y1 = malloc(c.rows * 4), *y2 = malloc(c.rows * 4);
    const size_t size = sgfp4_matvec_q8_bytes(n, 1);
    uint8_t *qa = malloc(size), *qb = malloc(size);
    assert_true(h && x && y1 && y2 && qa && qb);
    for (uint64_t j = 0; j < n; j++) {
        h[j] = (uint16_t)below(0x7C00) | (below(2) ? 0x8000u : 0); /* any finite half */
        x[j] = (float)ref_half_value(h[j]);
    }
    assert_int_equal(
        sgfp4_matvec_float(plan, h, SGFP4_DTYPE_F16, 1, 0, 0, c.rows, y1, 0, c.rows * 4, NULL),
        SGFP4_OK);
    assert_int_equal(
        sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, c.rows, y2, 0, c.rows * 4, NULL),
        SGFP4_OK);
    for (uint64_t i = 0; i < c.rows; i++)
        assert_true(d8_same(y1[i], y2[i]));
    assert_int_equal(sgfp4_matvec_quantize(h, SGFP4_DTYPE_F16, n, 1, 0, qa, size, NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, n, 1, 0, qb, size, NULL, NULL),
                     SGFP4_OK);
    assert_memory_equal(qa, qb, size);
    free(h);
    free(x);
    free(y1);
    free(y2);
    free(qa);
    free(qb);
    sgfp4_matvec_plan_free(plan);
    sgfp4_tensor_close(t);
    gen_free(&c);
}

/* ---- products ---- */

/* The expansion of a corpus container from its intended content (never from the bytes). */
static void matrix_from_corpus(const gen_container *c, d8_matrix *m)
{
    assert_true(d8_matrix_init(m, c->rows, c->cols));
    int8_t codes[4096];
    static const int8_t t158[4] = {0, 1, -1, 0};
    for (uint64_t b = 0; b < c->blocks; b++) {
        const gen_block *blk = &c->block[b];
        for (unsigned i = 0; i < blk->leaves_count; i++) {
            const gen_leaf *l = &blk->leaves[i];
            for (unsigned k = 0; k < (unsigned)l->size * l->size; k++) {
                const unsigned s = blk->sym[l->first_symbol + k];
                codes[k] = (int8_t)(l->mode ? t158[s] : s >= 8 ? (int)s - 16 : (int)s);
            }
            const uint16_t bias = c->profile == 2 ? (uint16_t)(l->bias & 0xFFF0u) : l->bias;
            d8_matrix_set_leaf(m, b / c->tiles_x, b % c->tiles_x, l->y, l->x, l->size,
                               l->scale, bias, codes);
        }
    }
}

static void random_corpus(void **state)
{
    (void)state;
    const unsigned count = getenv("SGFP4_MATVEC_CORPUS") ? (unsigned)atoi(getenv("SGFP4_MATVEC_CORPUS")) : 60;
    for (unsigned i = 0; i < count; i++) {
        gen_rng r = {1000 + i};
        gen_container c;
        const int profile = i % 3 == 0 ? 1 : 2;
        assert_int_equal(generate(&c, &r, profile), 0);
        sgfp4_tensor *t = open_or_fail(c.data, c.size, (sgfp4_profile)profile, c.rows, c.cols);
        d8_matrix m;
        matrix_from_corpus(&c, &m);
        char what[96];
        snprintf(what, sizeof what, "corpus container %u (v%d %llux%llu)", i, profile,
                 (unsigned long long)c.rows, (unsigned long long)c.cols);
        check_tensor(what, t, &m, 4, 2);
        d8_matrix_free(&m);
        sgfp4_tensor_close(t);
        gen_free(&c);
    }
    print_message("series %llu, results %llu (float64 bound checked on %llu), path calls %llu\n",
                  (unsigned long long)series_checked, (unsigned long long)results_checked,
                  (unsigned long long)bounds_checked, (unsigned long long)paths.calls);
}

/* The odd shapes and block counts that are no power of two, from the generator (every
 * layout, edge-case halves, the format's corners), and its deep-MIXED and LLM-like variants;
 * expanded from the intended content. */
static void generated_shapes(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{1, 1},   {3, 130},  {130, 200}, {65, 64},
                                         {64, 65}, {3, 1093}, {2, 4160}};
    for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int profile = 1; profile <= 2; profile++)
            for (unsigned variant = 0; variant < (profile == 2 ? 3u : 1u); variant++) {
                gen_params p = gen_shape_params(profile, shapes[i][0], shapes[i][1]);
                if (variant == 1)
                    p.layouts = GEN_LAYOUTS_MIXED_DEEP;
                if (variant == 2)
                    p.halves = GEN_HALVES_LLM;
                gen_rng r = {700 + 10 * i + variant};
                gen_container c;
                assert_int_equal(gen_generate(&c, &r, &p), 0);
                sgfp4_tensor *t =
                    open_or_fail(c.data, c.size, (sgfp4_profile)profile, c.rows, c.cols);
                d8_matrix m;
                matrix_from_corpus(&c, &m);
                char what[96];
                snprintf(what, sizeof what, "generated v%d %llux%llu (variant %u)", profile,
                         (unsigned long long)c.rows, (unsigned long long)c.cols, variant);
                check_tensor(what, t, &m, 2, 1);
                d8_matrix_free(&m);
                sgfp4_tensor_close(t);
                gen_free(&c);
            }
}

/* Every hostile kind, both classes, on one container with every layout. */
static void hostile_activations(void **state)
{
    (void)state;
    for (unsigned i = 0; i < 3; i++) {
        gen_container c;
        gen_rng r = {5000 + i};
        do { /* a container with a few blocks in each direction */
            assert_int_equal(generate(&c, &r, 2), 0);
            if (c.tiles_x >= 2 && c.tiles_y >= 2)
                break;
            gen_free(&c);
        } while (1);
        sgfp4_tensor *t = open_or_fail(c.data, c.size, SGFP4_PROFILE_V2, c.rows, c.cols);
        d8_matrix m;
        matrix_from_corpus(&c, &m);
        sgfp4_matvec_plan *plan;
        assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
        for (unsigned kind = 0; kind < X_KINDS; kind++)
            for (unsigned cls = 0; cls < 2; cls++) {
                if (cls == 0 && kind == X_NONFINITE)
                    continue;
                const series s = {"hostile activations", (x_kind)kind, 1 + (unsigned)below(4),
                                  i == 2 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32, cls == 0, 2};
                check_series(plan, &m, &s);
            }
        sgfp4_matvec_plan_free(plan);
        d8_matrix_free(&m);
        sgfp4_tensor_close(t);
        gen_free(&c);
    }
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

/* Every must-decode golden container, both classes. */
static void golden_containers(void **state)
{
    (void)state;
    const char *source = getenv("SGFP4_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/manifest.json", source ? source : ".");
    json_error_t error;
    json_t *manifest = json_load_file(path, 0, &error);
    if (!manifest)
        skip();
    size_t i;
    json_t *v;
    unsigned checked = 0;
    json_array_foreach(json_object_get(manifest, "vectors"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "expect")), "decode") != 0)
            continue;
        snprintf(path, sizeof path, "%s/golden/%s", source ? source : ".",
                 json_string_value(json_object_get(v, "file")));
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        assert_non_null(data);
        const json_t *shape = json_object_get(v, "shape");
        const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
        const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));
        const sgfp4_profile profile =
            strcmp(json_string_value(json_object_get(v, "profile")), "v1") == 0
                ? SGFP4_PROFILE_V1
                : SGFP4_PROFILE_V2;
        sgfp4_tensor *t = open_or_fail(data, size, profile, rows, cols);
        d8_matrix m;
        assert_true(d8_matrix_from_tensor(&m, t, data));
        check_tensor(json_string_value(json_object_get(v, "name")), t, &m, 2, 1);
        d8_matrix_free(&m);
        sgfp4_tensor_close(t);
        free(data);
        checked++;
    }
    json_decref(manifest);
    print_message("golden containers checked: %u\n", checked);
}

/* Encoder output (a different writer than the corpus) of the odd shapes, and of shapes
 * whose block count is no power of two (the block tree pads). */
static void encoded_shapes(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{1, 1}, {3, 130}, {130, 200}, {65, 64},
                                         {3, 1093}, {2, 4160}, {64, 65}};
    for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int profile = 1; profile <= 2; profile++) {
            const uint64_t rows = shapes[i][0], cols = shapes[i][1];
            float *w = malloc(rows * cols * 4);
            assert_non_null(w);
            for (uint64_t k = 0; k < rows * cols; k++)
                w[k] = value_of(X_GAUSS, -4);
            sgfp4_encode_options o = encode_options((sgfp4_profile)profile, 1);
            void *bytes = NULL;
            size_t size = 0;
            assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL),
                             SGFP4_OK);
            sgfp4_tensor *t = open_or_fail(bytes, size, (sgfp4_profile)profile, rows, cols);
            d8_matrix m;
            assert_true(d8_matrix_from_tensor(&m, t, bytes));
            char what[64];
            snprintf(what, sizeof what, "encoded v%d %llux%llu", profile,
                     (unsigned long long)rows, (unsigned long long)cols);
            check_tensor(what, t, &m, 4, 2);
            d8_matrix_free(&m);
            sgfp4_tensor_close(t);
            sgfp4_free(bytes);
            free(w);
        }
}

/* Real trained matrices (../shared/weights), encoded as v2 at 4.5 bits per weight and v1. */
static void check_real(void *ctx, const char *name, const float *w, uint64_t rows,
                       uint64_t cols)
{
    (void)ctx;
    for (int profile = 2; profile >= 1; profile--) {
        sgfp4_encode_options o = encode_options((sgfp4_profile)profile, 2);
        void *bytes = NULL;
        size_t size = 0;
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
        sgfp4_tensor *t = open_or_fail(bytes, size, (sgfp4_profile)profile, rows, cols);
        d8_matrix m;
        assert_true(d8_matrix_from_tensor(&m, t, bytes));
        char what[160];
        snprintf(what, sizeof what, "%s v%d", name, profile);
        check_tensor(what, t, &m, 2, 1);
        d8_matrix_free(&m);
        sgfp4_tensor_close(t);
        sgfp4_free(bytes);
    }
}

static void real_tensors(void **state)
{
    (void)state;
    const unsigned found = real_matrices_each(check_real, NULL);
    if (!found)
        skip();
    print_message("real tensors checked: %u\n", found);
}

/* Every batch size on the tensors whose blocks reach each batched path: generated v2 (every
 * layout, padded last block column, rows that end inside a strip) and v1, encoder output of
 * an LLM-like matrix at 4.5 bits per weight (v2, v1), and a real matrix where
 * ../shared/weights has it. */
static void every_batch_size(void **state)
{
    (void)state;
    static const struct {
        int profile;
        uint64_t rows, cols;
    } generated[] = {{2, 130, 200}, {1, 65, 1093}};
    for (unsigned i = 0; i < 2; i++) {
        gen_params p = gen_shape_params(generated[i].profile, generated[i].rows, generated[i].cols);
        gen_rng r = {900 + i};
        gen_container c;
        assert_int_equal(gen_generate(&c, &r, &p), 0);
        sgfp4_tensor *t = open_or_fail(c.data, c.size, (sgfp4_profile)c.profile, c.rows, c.cols);
        d8_matrix m;
        matrix_from_corpus(&c, &m);
        char what[96];
        snprintf(what, sizeof what, "generated v%d %llux%llu", c.profile,
                 (unsigned long long)c.rows, (unsigned long long)c.cols);
        check_every_batch(what, t, &m, 2);
        d8_matrix_free(&m);
        sgfp4_tensor_close(t);
        gen_free(&c);
    }
    const uint64_t rows = 136, cols = 1100;
    float *w = gen_llm_weights(rows, cols, 7);
    assert_non_null(w);
    for (int profile = 2; profile >= 1; profile--) {
        sgfp4_encode_options o = encode_options((sgfp4_profile)profile, 2);
        o.target_bpw = 4.5;
        void *bytes = NULL;
        size_t size = 0;
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
        sgfp4_tensor *t = open_or_fail(bytes, size, (sgfp4_profile)profile, rows, cols);
        d8_matrix m;
        assert_true(d8_matrix_from_tensor(&m, t, bytes));
        char what[96];
        snprintf(what, sizeof what, "encoded LLM-like v%d %llux%llu", profile,
                 (unsigned long long)rows, (unsigned long long)cols);
        check_every_batch(what, t, &m, 2);
        d8_matrix_free(&m);
        sgfp4_tensor_close(t);
        sgfp4_free(bytes);
    }
    free(w);
    const char *shared = getenv("SGFP4_SHARED_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/weights/gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors",
             shared ? shared : "../shared");
    sgfp4_model *model;
    if (sgfp4_model_open(path, &model, NULL, NULL) != SGFP4_OK) {
        print_message("no real tensor (%s): generated and encoded tensors only\n", path);
        return;
    }
    const sgfp4_model_tensor *mt = sgfp4_model_tensor_find(model, "decoder12/att.proj.w");
    assert_true(mt && mt->dtype == SGFP4_ST_F32 && mt->rank == 2);
    float *real = malloc(mt->shape[0] * mt->shape[1] * 4);
    assert_non_null(real);
    memcpy(real, mt->data, mt->shape[0] * mt->shape[1] * 4);
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.threads = 2;
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(
        sgfp4_encode_alloc(real, mt->shape[0], mt->shape[1], 0, &bytes, &size, &o, NULL), SGFP4_OK);
    free(real);
    sgfp4_tensor *t = open_or_fail(bytes, size, SGFP4_PROFILE_V2, mt->shape[0], mt->shape[1]);
    d8_matrix m;
    assert_true(d8_matrix_from_tensor(&m, t, bytes));
    check_every_batch("decoder12/att.proj.w v2", t, &m, 1);
    d8_matrix_free(&m);
    sgfp4_tensor_close(t);
    sgfp4_free(bytes);
    sgfp4_model_close(model);
}

/* The caller's rounding mode and flush-to-zero bits change no result. */
static void caller_fp_modes_change_nothing(void **state)
{
    (void)state;
    gen_rng r = {99};
    gen_container c;
    assert_int_equal(generate(&c, &r, 2), 0);
    sgfp4_tensor *t = open_or_fail(c.data, c.size, SGFP4_PROFILE_V2, c.rows, c.cols);
    sgfp4_matvec_plan *plan;
    assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
    float *x = malloc(c.cols * 4), *ya = malloc(c.rows * 4), *yb = malloc(c.rows * 4);
    float *za = malloc(c.rows * 4), *zb = malloc(c.rows * 4);
    const size_t size = sgfp4_matvec_q8_bytes(c.cols, 1);
    uint8_t *qa = malloc(size), *qb = malloc(size);
    assert_true(x && ya && yb && za && zb && qa && qb);
    fill_x(X_MIXED, c.cols, 1, SGFP4_DTYPE_F32, x, NULL);
    const sgfp4_matvec_options o = scalar_options();
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, c.cols, 1, 0, qa, size, &o, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_matvec_q8(plan, qa, size, 1, 0, c.rows, ya, 0, c.rows * 4, &o),
                     SGFP4_OK);
    assert_int_equal(
        sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, c.rows, za, 0, c.rows * 4, &o),
        SGFP4_OK);
    static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    for (unsigned k = 0; k < 3; k++) {
        fenv_t saved;
        fegetenv(&saved);
        fesetround(modes[k]);
#if defined(__x86_64__) && defined(__GNUC__)
        unsigned mxcsr;
        __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
        mxcsr |= 0x8040u; /* flush-to-zero and denormals-are-zero */
        __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
#endif
        const sgfp4_status s1 =
            sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, c.cols, 1, 0, qb, size, &o, NULL);
        const sgfp4_status s2 = sgfp4_matvec_q8(plan, qb, size, 1, 0, c.rows, yb, 0, c.rows * 4, &o);
        const sgfp4_status s3 =
            sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, c.rows, zb, 0, c.rows * 4, &o);
        const int round_kept = fegetround() == modes[k];
        fesetenv(&saved);
        assert_int_equal(s1, SGFP4_OK);
        assert_int_equal(s2, SGFP4_OK);
        assert_int_equal(s3, SGFP4_OK);
        assert_true(round_kept); /* the caller's mode is given back */
        assert_memory_equal(qa, qb, size);
        for (uint64_t i = 0; i < c.rows; i++) {
            assert_true(d8_same(ya[i], yb[i]));
            assert_true(d8_same(za[i], zb[i]));
        }
    }
    free(x);
    free(ya);
    free(yb);
    free(za);
    free(zb);
    free(qa);
    free(qb);
    sgfp4_matvec_plan_free(plan);
    sgfp4_tensor_close(t);
    gen_free(&c);
}

/* The sign of a zero result, where only D8's exact rules decide it. Every weight is -0
 * (v1 blocks with scale -0, bias -0, codes 0): Class A cells are fl32(-0 * iq + -0 * is) =
 * -0 for any x; Class B products are -0 * x = -0 for x > 0, and for x = +0, and for x = -0,
 * which Class B reads as +0 (the 2^-60 floor). So every cell is -0, except a Class B cell
 * with padding columns, whose p_j = +0 makes it +0; and the block tree gives -0 only when
 * every partial is -0 and no +0 padding joins it (ceil(I/64) a power of two). */
static void signed_zero_results(void **state)
{
    (void)state;
    static const struct {
        uint64_t cols;
        float a, b; /* the expected results of Class A and B */
    } cases[] = {
        {256, -0.0f, -0.0f}, /* 4 blocks, no padding anywhere: -0 */
        {254, -0.0f, 0.0f},  /* 2 padding columns: Class B's last cell is +0 */
        {192, 0.0f, 0.0f},   /* 3 blocks: the tree's +0 padding joins */
        {190, 0.0f, 0.0f},
        {64, -0.0f, -0.0f},  /* one block, P = 1 */
        {1, -0.0f, 0.0f},
    };
    static const float inputs[] = {1.0f, 0.0f, -0.0f, 0x1p-70f};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint64_t rows = 2, cols = cases[c].cols, blocks = (cols + 63) / 64;
        uint8_t *v1 = calloc(blocks, 2056);
        assert_non_null(v1);
        for (uint64_t b = 0; b < blocks; b++) {
            const uint32_t header = 0x8000u << 16 | 0x8000u, offset = (uint32_t)b * 2048;
            memcpy(v1 + 4 * b, &header, 4);
            memcpy(v1 + 4 * blocks + 4 * b, &offset, 4);
        }
        sgfp4_tensor *t = open_or_fail(v1, blocks * 2056, SGFP4_PROFILE_V1, rows, cols);
        sgfp4_matvec_plan *plan;
        assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
        float x[256], y[2];
        uint8_t q8[4 * 128];
        for (unsigned k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
            for (unsigned j = 0; j < 256; j++)
                x[j] = inputs[k];
            assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 1, 0, q8,
                                                   sizeof q8, NULL, NULL),
                             SGFP4_OK);
            assert_int_equal(sgfp4_matvec_q8(plan, q8, sizeof q8, 1, 0, rows, y, 0, sizeof y,
                                             NULL),
                             SGFP4_OK);
            for (unsigned r = 0; r < rows; r++)
                if (ref_bits_of(y[r]) != ref_bits_of(cases[c].a))
                    fail_msg("class A, %llu columns, x = %a: %a, not %a",
                             (unsigned long long)cols, (double)inputs[k], (double)y[r],
                             (double)cases[c].a);
            assert_int_equal(
                sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 1, 0, 0, rows, y, 0, sizeof y, NULL),
                SGFP4_OK);
            for (unsigned r = 0; r < rows; r++)
                if (ref_bits_of(y[r]) != ref_bits_of(cases[c].b))
                    fail_msg("class B, %llu columns, x = %a: %a, not %a",
                             (unsigned long long)cols, (double)inputs[k], (double)y[r],
                             (double)cases[c].b);
        }
        sgfp4_matvec_plan_free(plan);
        sgfp4_tensor_close(t);
        free(v1);
    }
}

/* ---- the API's edges ---- */

static unsigned allocations;
static void *count_alloc(void *user, size_t size)
{
    (void)user;
    allocations++;
    return malloc(size);
}
static void count_free(void *user, void *p)
{
    (void)user;
    allocations--;
    free(p);
}

static void arguments_are_checked(void **state)
{
    (void)state;
    gen_rng r = {4242};
    gen_container c;
    do {
        assert_int_equal(generate(&c, &r, 2), 0);
        if (c.rows >= 4 && c.cols >= 4)
            break;
        gen_free(&c);
    } while (1);
    sgfp4_open_options oo;
    sgfp4_open_options_init(&oo);
    oo.allocator = (sgfp4_allocator){count_alloc, count_free, NULL};
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(c.data, c.size, SGFP4_PROFILE_V2, c.rows, c.cols, &t, &oo,
                                       NULL),
                     SGFP4_OK);
    const unsigned before = allocations;
    sgfp4_matvec_plan *plan = (sgfp4_matvec_plan *)&c; /* set to NULL on failure */
    assert_int_equal(sgfp4_matvec_plan_create(NULL, &plan), SGFP4_ERR_ARGUMENT);
    assert_null(plan);
    assert_int_equal(sgfp4_matvec_plan_create(t, NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_plan_create(t, &plan), SGFP4_OK);
    /* through the tensor's allocator: the object, for v2 its leaf table (two arrays) and,
     * where the fastest kernel set reads it, the repacked layout (two more) */
    const unsigned repack = sgfp4_matvec_kernels_best()->reads_repack ? 2 : 0;
    assert_true(allocations >= before + 2 + repack && allocations <= before + 3 + repack);
    assert_true((plan->repack != NULL) == (repack != 0));
    if (plan->repack) /* counted: at least its 2 KB of codes per block */
        assert_true(sgfp4_matvec_plan_bytes(plan) >= 2048 * t->blocks);
    assert_true(sgfp4_matvec_plan_bytes(plan) >= sizeof(sgfp4_matvec_block_leaves) * t->blocks);
    assert_int_equal(sgfp4_matvec_plan_bytes(NULL), 0);

    const uint64_t rows = c.rows, cols = c.cols;
    const size_t size = sgfp4_matvec_q8_bytes(cols, 2);
    assert_int_equal(size, 2 * (((cols + 63) / 64 * 68 + 63) / 64 * 64));
    uint8_t *q8 = calloc(1, size);
    float *x = calloc(2 * cols, 4);
    float *y = malloc(2 * rows * 4);
    assert_true(q8 && x && y);
    assert_int_equal(sgfp4_matvec_q8_bytes(0, 1), 0);
    assert_int_equal(sgfp4_matvec_q8_bytes(cols, 0), 0);
    assert_int_equal(sgfp4_matvec_q8_bytes(cols, SGFP4_MATVEC_MAX_BATCH + 1), 0);
    assert_int_equal(sgfp4_matvec_q8_bytes(UINT64_MAX, 1), 0);

    /* the quantizer */
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 2, 0, q8, size, NULL, NULL),
                     SGFP4_OK);
    assert_int_equal(sgfp4_matvec_quantize(NULL, SGFP4_DTYPE_F32, cols, 2, 0, q8, size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 2, 0, NULL, size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 2, 0, q8, size - 1, NULL, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, 0, 2, 0, q8, size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 0, 0, q8, size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 17, 0, q8, size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 2, cols - 1, q8, size, NULL,
                                           NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_BF16, cols, 2, 0, q8, size, NULL, NULL),
                     SGFP4_ERR_UNSUPPORTED);
    assert_int_equal(sgfp4_matvec_quantize(x, (sgfp4_dtype)9, cols, 2, 0, q8, size, NULL, NULL),
                     SGFP4_ERR_ARGUMENT);

    /* options */
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.threads, 0);
    assert_int_equal(o.backend, SGFP4_BACKEND_AUTO);
    const size_t ycap = 2 * rows * 4;
    o.struct_size = sizeof o + 8; /* from a newer header */
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o),
                     SGFP4_ERR_ARGUMENT);
    o.struct_size = 0;
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o),
                     SGFP4_ERR_ARGUMENT);
    assert_null(o.pool);
    o.struct_size = offsetof(sgfp4_matvec_options, pool); /* the layout before the pool */
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o), SGFP4_OK);
    o.struct_size = offsetof(sgfp4_matvec_options, threads); /* no released layout */
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_matvec_options_init(&o);
    o.threads = 0; /* the default: 1 */
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o), SGFP4_OK);
    o.threads = SGFP4_MAX_THREADS + 1;
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o),
                     SGFP4_ERR_ARGUMENT);
    o.threads = SGFP4_MAX_THREADS;
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o), SGFP4_OK);
    sgfp4_matvec_options_init(&o);
    o.backend = (sgfp4_backend)42;
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o),
                     SGFP4_ERR_ARGUMENT);
    assert_null(sgfp4_matvec_backend_name((sgfp4_backend)42));
    assert_null(sgfp4_matvec_backend_name((sgfp4_backend)2)); /* retired: AUTO's second name */
    o.backend = (sgfp4_backend)2;
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o),
                     SGFP4_ERR_ARGUMENT);
    assert_string_equal(sgfp4_matvec_backend_name(SGFP4_BACKEND_SCALAR), "scalar");
    static const sgfp4_backend forced[] = {SGFP4_BACKEND_GENERIC, SGFP4_BACKEND_AVX2,
                                           SGFP4_BACKEND_AVX512, SGFP4_BACKEND_NEON};
    for (unsigned k = 0; k < 4; k++) {
        o.backend = forced[k];
        const sgfp4_status want = sgfp4_matvec_backend_name(forced[k]) ? SGFP4_OK
                                                                        : SGFP4_ERR_UNAVAILABLE;
        assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap, &o), want);
        assert_int_equal(
            sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 2, 0, 0, rows, y, 0, ycap, &o), want);
        assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, 2, 0, q8, size, &o,
                                               NULL),
                         want);
    }

    /* the products: nothing written on any error */
    memset(y, 0x5A, ycap);
    assert_int_equal(sgfp4_matvec_q8(NULL, q8, size, 2, 0, rows, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, NULL, size, 2, 0, rows, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, NULL, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size - 1, 2, 0, rows, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 0, 0, rows, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 17, 0, rows, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 2, 2, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 3, 1, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows + 1, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, UINT64_MAX, y, 0, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, rows - 1, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, 0, ycap - 1, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(
        sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 2, 0, 0, rows, y, 0, ycap - 1, NULL),
        SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, rows + 1, ycap, NULL),
                     SGFP4_ERR_DST_TOO_SMALL); /* a wider stride needs more room */
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 0, rows, y, SIZE_MAX, ycap, NULL),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(
        sgfp4_matvec_float(plan, NULL, SGFP4_DTYPE_F32, 2, 0, 0, rows, y, 0, ycap, NULL),
        SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_float(plan, x, SGFP4_DTYPE_BF16, 2, 0, 0, rows, y, 0, ycap, NULL),
                     SGFP4_ERR_UNSUPPORTED);
    assert_int_equal(
        sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 2, cols - 1, 0, rows, y, 0, ycap, NULL),
        SGFP4_ERR_ARGUMENT);
    assert_int_equal(
        sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, 2, SIZE_MAX, 0, rows, y, 0, ycap, NULL),
        SGFP4_ERR_ARGUMENT);
    for (size_t i = 0; i < ycap; i++)
        assert_int_equal(((uint8_t *)y)[i], 0x5A);

    /* a row range writes exactly its floats, at y_stride */
    const size_t stride = 3;
    float small[2 * 3 + 1];
    memset(small, 0x5A, sizeof small);
    assert_int_equal(sgfp4_matvec_q8(plan, q8, size, 2, 1, 3, small, stride,
                                     (stride + 2) * sizeof(float), NULL),
                     SGFP4_OK);
    const uint8_t *s8 = (const uint8_t *)small;
    for (size_t b = 2 * 4; b < 3 * 4; b++)
        assert_int_equal(s8[b], 0x5A); /* the gap after vector 0 */
    for (size_t b = 5 * 4; b < sizeof small; b++)
        assert_int_equal(s8[b], 0x5A); /* nothing past the last float */

    free(q8);
    free(x);
    free(y);
    sgfp4_matvec_plan_free(plan);
    sgfp4_matvec_plan_free(NULL);
    assert_int_equal(allocations, before);
    sgfp4_tensor_close(t);
    gen_free(&c);
}

/* Run last: the series above ran every kernel set on plans with the repacked layout and
 * on plans without it, v1 tensors as well as v2, and the layouts held groups of more than
 * 16 leaves, T158 leaves and 4x4 leaves (so a wrong layout or a wrong read of it would have
 * failed them); each class
 * ran on layouts with both kinds of unit and both kinds of group (so each of its paths). */
static void repacked_layout_is_exercised(void **state)
{
    (void)state;
    print_message("series on repacked plans %llu (Class B %llu, %llu of them padded; v1 %llu), "
                  "on plain v2 plans %llu, plain v1 plans %llu; groups of > 16 leaves %llu, "
                  "blocks with T158 %llu, with 4x4 leaves %llu\n",
                  (unsigned long long)repacked_series, (unsigned long long)repacked_b_series,
                  (unsigned long long)repacked_b_padded_series,
                  (unsigned long long)repacked_v1_series, (unsigned long long)plain_v2_series,
                  (unsigned long long)plain_v1_series, (unsigned long long)wide_groups,
                  (unsigned long long)t158_blocks, (unsigned long long)small_leaf_blocks);
    for (unsigned a = 0; a < 2; a++) {
        const unit_mix *c = &class_mix[a];
        print_message("Class %c: one-leaf units of entries >= 16 %llu, units of several "
                      "leaves %llu; groups of one-leaf units %llu, others %llu\n",
                      a ? 'A' : 'B', (unsigned long long)c->one_leaf_high_units,
                      (unsigned long long)c->several_leaf_units,
                      (unsigned long long)c->one_leaf_groups, (unsigned long long)c->mixed_groups);
    }
    if (!sgfp4_matvec_kernels_best()->reads_repack)
        skip();
    assert_true(repacked_series > repacked_b_series && repacked_b_series > 0);
    assert_true(plain_v2_series > 0 && repacked_b_padded_series > 0);
    assert_true(repacked_v1_series > 0 && plain_v1_series > 0);
    assert_true(wide_groups > 0 && t158_blocks > 0 && small_leaf_blocks > 0);
    for (unsigned a = 0; a < 2; a++) {
        const unit_mix *c = &class_mix[a];
        assert_true(c->one_leaf_high_units > 0 && c->several_leaf_units > 0);
        assert_true(c->one_leaf_groups > 0 && c->mixed_groups > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantizer_known_values),
        cmocka_unit_test(quantizer_refuses_non_finite),
        cmocka_unit_test(quantizer_matches_reference),
        cmocka_unit_test(f16_equals_f32),
        cmocka_unit_test(signed_zero_results),
        cmocka_unit_test(arguments_are_checked),
        cmocka_unit_test(caller_fp_modes_change_nothing),
        cmocka_unit_test(hostile_activations),
        cmocka_unit_test(random_corpus),
        cmocka_unit_test(generated_shapes),
        cmocka_unit_test(golden_containers),
        cmocka_unit_test(encoded_shapes),
        cmocka_unit_test(real_tensors),
        cmocka_unit_test(every_batch_size),
        cmocka_unit_test(repacked_layout_is_exercised),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
