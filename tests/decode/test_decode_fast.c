/* Every fast decode path against the scalar oracle, bit for bit: each kernel set this CPU
 * runs, 1..7 threads, streaming and cached stores, f32/f16/bf16, random row ranges, strides,
 * misaligned destinations and gathers; on random containers (every layout, both modes, odd
 * shapes, subnormal and signed-zero scales and biases), the MNN conformance fixtures and the
 * golden set when present.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "decode/kernels.h"
#include "support/decode_paths.h"
#include "support/options.h"
#include "datagen/generator.h"

static decode_rng rng = {12345};
static unsigned rnd(unsigned n) { return decode_rng_below(&rng, n); }

static const sgfp4_decode_kernels *kernel_sets[DECODE_MAX_KERNEL_SETS];
static unsigned kernel_set_count;
static const unsigned thread_counts[] = {1, 2, 3, 7};
static decode_check paths = {.rng = {54321}, .thread_counts = thread_counts,
                             .thread_count_n = sizeof thread_counts / sizeof thread_counts[0]};

static int find_kernel_sets(void **state)
{
    (void)state;
    kernel_set_count = decode_kernel_sets(kernel_sets);
    print_message("kernel sets on this CPU: %u (best: %s)\n", kernel_set_count,
                  sgfp4_decode_kernels_best()->name);
    return 0;
}

/* Row ranges and gathers through every kernel set, some thread counts and both store kinds
 * (tests/support/decode_paths.h). */
static void check_all_paths(const sgfp4_tensor *t, unsigned rounds)
{
    decode_reference ref;
    assert_true(decode_reference_make(t, &ref));
    for (unsigned ki = 0; ki < kernel_set_count; ki++)
        if (!decode_check_paths(&paths, t, &ref, kernel_sets[ki], rounds)) {
            decode_reference_free(&ref);
            fail_msg("%s", paths.message);
        }
    decode_reference_free(&ref);
}

static sgfp4_tensor *open_or_fail(const uint8_t *data, size_t size, sgfp4_profile profile,
                                  uint64_t rows, uint64_t cols)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_tensor_open(data, size, profile, rows, cols, &t, NULL, &diag);
    if (s != SGFP4_OK)
        fail_msg("open %llux%llu: %s", (unsigned long long)rows, (unsigned long long)cols,
                 diag.message);
    return t;
}

static void test_random_containers(void **state)
{
    (void)state;
    for (unsigned i = 0; i < 48; i++) {
        static const unsigned edges[] = {1, 3, 4, 17, 63, 64, 65, 100, 128, 130, 191};
        const unsigned rows = edges[rnd(11)], cols = edges[rnd(11)];
        gen_params p = gen_shape_params(i % 3 == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2, rows,
                                        cols);
        p.halves = i % 4 != 3 ? GEN_HALVES_ANY : GEN_HALVES_LLM;
        size_t size;
        uint8_t *data = gen_container_bytes(&p, 1000 + i, &size);
        assert_non_null(data);
        sgfp4_tensor *t = open_or_fail(data, size, p.profile, p.rows, p.cols);
        check_all_paths(t, 6);
        sgfp4_tensor_close(t);
        free(data);
    }
}

/* The fast leaf listing and half conversion equal the container layer's. */
static void test_leaf_listing(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if (((h >> 10) & 0x1Fu) == 0x1Fu)
            continue; /* Inf / NaN never reach decode */
        const float want = sgfp4_half_to_float((uint16_t)h);
        const float got = sgfp4_half_to_float_finite(h);
        if (memcmp(&want, &got, 4) != 0)
            fail_msg("half 0x%04x", h);
    }
    sgfp4_leaf_ref want[SGFP4_MAX_LEAVES], got[SGFP4_MAX_LEAVES];
    for (unsigned i = 0; i < 12; i++) {
        gen_params p = gen_shape_params(i % 4 == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2, 256, 320);
        p.halves = GEN_HALVES_ANY;
        size_t size;
        uint8_t *data = gen_container_bytes(&p, 500 + i, &size);
        assert_non_null(data);
        sgfp4_tensor *t = open_or_fail(data, size, p.profile, p.rows, p.cols);
        for (uint64_t b = 0; b < t->blocks; b++) {
            const unsigned n = sgfp4_block_leaf_refs(t, b, want);
            assert_int_equal(sgfp4_list_block_refs(t, b, got), n);
            for (unsigned k = 0; k < n; k++) {
                assert_int_equal(want[k].y, got[k].y);
                assert_int_equal(want[k].x, got[k].x);
                assert_int_equal(want[k].size, got[k].size);
                assert_int_equal(want[k].mode, got[k].mode);
                assert_int_equal(want[k].header, got[k].header);
                assert_memory_equal(&want[k].scale, &got[k].scale, 4);
                assert_memory_equal(&want[k].bias, &got[k].bias, 4);
                assert_ptr_equal(want[k].payload, got[k].payload);
            }
        }
        sgfp4_tensor_close(t);
        free(data);
    }
}

#ifdef SGFP4_HAVE_X86_KERNELS
typedef unsigned (*list_fn)(const sgfp4_tensor *, uint64_t, sgfp4_leaf_list *);
typedef void (*halves_fn)(const uint16_t *, size_t, float *);

/* A SIMD listing: every finite half converted as the container layer does, and each block's
 * leaves the container layer's, field for field, in storage order, with each kind's indices
 * (size class, mode) in storage order; on v1 and v2 containers of every layout, both halves
 * kinds and random and benchmark-rate records. */
static void check_listing(list_fn list_leaves, halves_fn halves_to_floats, unsigned seed)
{
    static sgfp4_leaf_list list;
    char message[256];
    if (!decode_check_halves(halves_to_floats, "SIMD", message, sizeof message))
        fail_msg("%s", message);
    for (unsigned i = 0; i < 16; i++) {
        gen_params p = gen_shape_params(i % 4 == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2, 256, 320);
        p.target_bpw = i % 3 == 1 ? 2.5 : 0;
        p.halves = i % 2 ? GEN_HALVES_ANY : GEN_HALVES_EDGES;
        size_t size;
        uint8_t *data = gen_container_bytes(&p, seed + i, &size);
        assert_non_null(data);
        sgfp4_tensor *t = open_or_fail(data, size, p.profile, p.rows, p.cols);
        for (uint64_t b = 0; b < t->blocks; b++)
            if (!decode_check_leaf_list(t, b, &list, list_leaves(t, b, &list), message,
                                        sizeof message))
                fail_msg("container %u: %s", i, message);
        sgfp4_tensor_close(t);
        free(data);
    }
}

static void test_avx2_leaf_listing(void **state)
{
    (void)state;
    if (!sgfp4_cpu_runs(SGFP4_CPU_AVX2))
        skip();
    check_listing(sgfp4_avx2_block_leaves, sgfp4_avx2_halves_to_floats, 700);
}

static void test_avx512_leaf_listing(void **state)
{
    (void)state;
    if (!sgfp4_cpu_runs(SGFP4_CPU_AVX512))
        skip();
    check_listing(sgfp4_avx512_block_leaves, sgfp4_avx512_halves_to_floats, 900);
}
#endif

/* The one CPU probe: the baseline and this CPU's own level run, every level below it on
 * its architecture runs, no level of another architecture does; the decode dispatch picks
 * the set of the highest level it has kernels for. */
static void test_cpu_level(void **state)
{
    (void)state;
    const sgfp4_cpu_level here = sgfp4_cpu_level_here();
    assert_true(sgfp4_cpu_runs(SGFP4_CPU_BASELINE));
    assert_true(sgfp4_cpu_runs(here));
    const char *expected = "generic";
    if (here >= SGFP4_CPU_AVX2 && here <= SGFP4_CPU_AVX512_VNNI) {
        assert_true(sgfp4_cpu_runs(SGFP4_CPU_AVX2));
        assert_int_equal(sgfp4_cpu_runs(SGFP4_CPU_AVX512), here >= SGFP4_CPU_AVX512);
        assert_false(sgfp4_cpu_runs(SGFP4_CPU_NEON));
        expected = here >= SGFP4_CPU_AVX512 ? "avx512" : "avx2";
    } else if (here == SGFP4_CPU_NEON || here == SGFP4_CPU_NEON_DOT) {
        assert_true(sgfp4_cpu_runs(SGFP4_CPU_NEON));
        assert_false(sgfp4_cpu_runs(SGFP4_CPU_AVX2));
        expected = "neon";
    } else {
        assert_int_equal(here, SGFP4_CPU_BASELINE);
        assert_false(sgfp4_cpu_runs(SGFP4_CPU_AVX2));
        assert_false(sgfp4_cpu_runs(SGFP4_CPU_NEON));
    }
#if !defined(SGFP4_HAVE_X86_KERNELS) && !defined(SGFP4_HAVE_NEON_KERNELS)
    expected = "generic"; /* a build without SIMD kernels */
#endif
    assert_string_equal(sgfp4_decode_kernels_best()->name, expected);
}

/* One tensor larger than a few macroblocks each way, at the rates the benchmark uses. */
static void test_rate_shaped_containers(void **state)
{
    (void)state;
    static const double rates[] = {4.5, 2.5, 0};
    for (unsigned i = 0; i < 3; i++) {
        gen_params p = gen_shape_params(SGFP4_PROFILE_V2, 320, 450);
        p.target_bpw = rates[i];
        p.halves = GEN_HALVES_LLM;
        p.corners = 0;
        size_t size;
        uint8_t *data = gen_container_bytes(&p, 77 + i, &size);
        assert_non_null(data);
        sgfp4_tensor *t = open_or_fail(data, size, p.profile, p.rows, p.cols);
        check_all_paths(t, 3);
        sgfp4_tensor_close(t);
        free(data);
    }
}

/* The public entry points: every backend value and store kind gives the oracle's bits; a
 * forced kernel set this machine cannot run is refused as unavailable, nothing written. */
static void test_public_backends(void **state)
{
    (void)state;
    gen_params p = gen_shape_params(SGFP4_PROFILE_V2, 200, 130);
    p.halves = GEN_HALVES_ANY;
    size_t size;
    uint8_t *data = gen_container_bytes(&p, 5, &size);
    assert_non_null(data);
    sgfp4_tensor *t = open_or_fail(data, size, p.profile, p.rows, p.cols);
    const size_t bytes = 200 * 130 * 4;
    float *want = malloc(bytes), *got = malloc(bytes);
    assert_non_null(want);
    assert_non_null(got);
    const sgfp4_decode_options scalar = decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, want, 0, bytes, &scalar), SGFP4_OK);
    const sgfp4_backend backends[] = {SGFP4_BACKEND_AUTO,    SGFP4_BACKEND_SCALAR,
                                      SGFP4_BACKEND_GENERIC, SGFP4_BACKEND_AVX2,
                                      SGFP4_BACKEND_AVX512,  SGFP4_BACKEND_NEON};
    unsigned ran = 0;
    for (unsigned b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        const char *name = sgfp4_decode_backend_name(backends[b]);
        for (unsigned threads = 0; threads < 4; threads++)
            for (unsigned store = 0; store < 3; store++) {
                const sgfp4_decode_options o =
                    decode_options(backends[b], threads, (sgfp4_store)store);
                memset(got, 0, bytes);
                const uint64_t rows[3] = {199, 0, 64};
                if (!name) { /* a kernel set this build or CPU does not run */
                    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, &o),
                                     SGFP4_ERR_UNAVAILABLE);
                    assert_int_equal(
                        sgfp4_decode_gather(t, rows, 3, SGFP4_DTYPE_F32, got, 0, bytes, &o),
                        SGFP4_ERR_UNAVAILABLE);
                    for (size_t i = 0; i < 200 * 130; i++)
                        assert_true(got[i] == 0.0f);
                    continue;
                }
                assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, &o), SGFP4_OK);
                assert_memory_equal(want, got, bytes);
                assert_int_equal(
                    sgfp4_decode_gather(t, rows, 3, SGFP4_DTYPE_F32, got, 0, bytes, &o),
                    SGFP4_OK);
                for (int k = 0; k < 3; k++)
                    assert_memory_equal(want + rows[k] * 130, got + k * 130, 130 * 4);
                ran++;
            }
    }
    /* AUTO, SCALAR and GENERIC run everywhere */
    assert_true(ran >= 3 * 4 * 3);
    assert_string_equal(sgfp4_decode_backend_name(SGFP4_BACKEND_SCALAR), "scalar");
    assert_string_equal(sgfp4_decode_backend_name(SGFP4_BACKEND_GENERIC), "generic");
    assert_string_equal(sgfp4_decode_backend_name(SGFP4_BACKEND_AUTO),
                        sgfp4_decode_kernels_best()->name);
    assert_null(sgfp4_decode_backend_name((sgfp4_backend)9));
    assert_null(sgfp4_decode_backend_name((sgfp4_backend)2)); /* retired: AUTO's second name */
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, NULL), SGFP4_OK);
    assert_memory_equal(want, got, bytes);
    const sgfp4_decode_options bad = decode_options((sgfp4_backend)9, 1, SGFP4_STORE_AUTO);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, &bad), SGFP4_ERR_ARGUMENT);
    const sgfp4_decode_options retired = decode_options((sgfp4_backend)2, 1, SGFP4_STORE_AUTO);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, &retired), SGFP4_ERR_ARGUMENT);
    const sgfp4_decode_options bad_store =
        decode_options(SGFP4_BACKEND_AUTO, 0, (sgfp4_store)3);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, &bad_store),
                     SGFP4_ERR_ARGUMENT);
    const uint64_t one_row = 0;
    assert_int_equal(sgfp4_decode_gather(t, &one_row, 1, SGFP4_DTYPE_F32, got, 0, bytes,
                                         &bad_store),
                     SGFP4_ERR_ARGUMENT);
    free(want);
    free(got);
    sgfp4_tensor_close(t);
    free(data);
}

/* The AUTO streaming threshold: the same for 0 and 1 thread, proportional to the thread
 * count (each writing core brings its own L2), and at least an L2's worth. */
static void test_stream_threshold(void **state)
{
    (void)state;
    const uint64_t one = sgfp4_decode_stream_bytes(1);
    assert_int_equal(sgfp4_decode_stream_bytes(0), one);
    assert_int_equal(sgfp4_decode_stream_bytes(3), 3 * one);
    assert_true(one >= 2 * 64 * 1024);
    assert_true(one % 2 == 0);
}

/* An allocator that refuses anything large: the fast path must fall back, not fail. */
static void *small_alloc(void *user, size_t size)
{
    (void)user;
    return size > 4096 ? NULL : malloc(size);
}
static void small_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static void test_scratch_refused(void **state)
{
    (void)state;
    gen_params p = gen_shape_params(SGFP4_PROFILE_V2, 150, 260);
    p.halves = GEN_HALVES_ANY;
    size_t size;
    uint8_t *data = gen_container_bytes(&p, 9, &size);
    assert_non_null(data);
    sgfp4_open_options oo;
    sgfp4_open_options_init(&oo);
    oo.allocator = (sgfp4_allocator){small_alloc, small_free, NULL};
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(data, size, p.profile, p.rows, p.cols, &t, &oo, NULL),
                     SGFP4_OK);
    const size_t bytes = 150 * 260 * 4;
    float *want = malloc(bytes), *got = malloc(bytes);
    assert_non_null(want);
    assert_non_null(got);
    const sgfp4_decode_options scalar = decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
    const sgfp4_decode_options fast = decode_options(SGFP4_BACKEND_AUTO, 2, SGFP4_STORE_AUTO);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, want, 0, bytes, &scalar), SGFP4_OK);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, got, 0, bytes, &fast), SGFP4_OK);
    assert_memory_equal(want, got, bytes);
    /* 300 requests: more than the refusing allocator gives the gather's sort */
    uint64_t rows[300];
    for (unsigned i = 0; i < 300; i++)
        rows[i] = (i * 37u) % 150u;
    float *gathered = malloc(300 * 260 * 4);
    assert_non_null(gathered);
    assert_int_equal(
        sgfp4_decode_gather(t, rows, 300, SGFP4_DTYPE_F32, gathered, 0, 300 * 260 * 4, &fast),
        SGFP4_OK);
    for (unsigned i = 0; i < 300; i++)
        assert_memory_equal(want + rows[i] * 260, gathered + i * 260, 260 * 4);
    free(gathered);
    free(want);
    free(got);
    sgfp4_tensor_close(t);
    free(data);
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        data = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (data && (fseek(f, 0, SEEK_SET) != 0 || fread(data, 1, (size_t)n, f) != (size_t)n)) {
            free(data);
            data = NULL;
        }
        *size = (size_t)n;
    }
    fclose(f);
    return data;
}

/* Every container a manifest (a JSON array of {file, profile, shape}, or an object holding
 * such an array) lists; returns how many were checked. */
static unsigned check_manifest(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_t *root = json_load_file(path, 0, NULL);
    if (!root)
        return 0;
    json_t *list = root;
    if (json_is_object(root)) {
        const char *key;
        json_t *value;
        list = NULL;
        json_object_foreach(root, key, value) if (!list && json_is_array(value)) list = value;
    }
    unsigned checked = 0;
    size_t i;
    json_t *entry;
    json_array_foreach(list, i, entry)
    {
        const char *file = json_string_value(json_object_get(entry, "file"));
        const char *profile = json_string_value(json_object_get(entry, "profile"));
        json_t *shape = json_object_get(entry, "shape");
        if (!file || !json_is_array(shape) || json_array_size(shape) != 2)
            continue;
        const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
        const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));
        sgfp4_profile pr = SGFP4_PROFILE_AUTO;
        if (profile && strcmp(profile, "v1") == 0)
            pr = SGFP4_PROFILE_V1;
        else if (profile && strcmp(profile, "v2") == 0)
            pr = SGFP4_PROFILE_V2;
        snprintf(path, sizeof path, "%s/%s", dir, file);
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        if (!data)
            continue;
        sgfp4_tensor *t = NULL;
        if (sgfp4_tensor_open(data, size, pr, rows, cols, &t, NULL, NULL) == SGFP4_OK) {
            check_all_paths(t, 3); /* only containers that open (a set may hold rejects) */
            sgfp4_tensor_close(t);
            checked++;
        }
        free(data);
    }
    json_decref(root);
    return checked;
}

static void test_mnn_fixtures(void **state)
{
    (void)state;
    const char *shared = getenv("SGFP4_SHARED_DIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/conformance/mnn", shared ? shared : "../shared");
    const unsigned n = check_manifest(dir);
    if (n == 0)
        skip();
    print_message("MNN fixtures checked: %u\n", n);
}

static void test_golden(void **state)
{
    (void)state;
    const char *source = getenv("SGFP4_SOURCE_DIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/golden", source ? source : ".");
    const unsigned n = check_manifest(dir);
    if (n == 0)
        skip();
    print_message("golden containers checked: %u\n", n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_level),
        cmocka_unit_test(test_leaf_listing),
#ifdef SGFP4_HAVE_X86_KERNELS
        cmocka_unit_test(test_avx2_leaf_listing),
        cmocka_unit_test(test_avx512_leaf_listing),
#endif
        cmocka_unit_test(test_random_containers),
        cmocka_unit_test(test_rate_shaped_containers),
        cmocka_unit_test(test_public_backends),
        cmocka_unit_test(test_stream_threshold),
        cmocka_unit_test(test_scratch_refused),
        cmocka_unit_test(test_mnn_fixtures),
        cmocka_unit_test(test_golden),
    };
    return cmocka_run_group_tests(tests, find_kernel_sets, NULL);
}
