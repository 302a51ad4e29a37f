/* The API conventions every options-taking call shares (docs/api.md, "Conventions"): options
 * are made by sgfp4_<x>_options_init() only, NULL means the defaults, an unknown struct_size
 * is SGFP4_ERR_ARGUMENT, a caller's older (shorter) layout keeps the defaults of the fields it
 * lacks; `threads` 0 means 1 and above SGFP4_MAX_THREADS is refused; a too-small output is
 * SGFP4_ERR_DST_TOO_SMALL.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/options.h"
#include "sgfp4.h"
#include "sgfp4_config.h"
#include "sgfp4_model.h"
#include "sgfp4_vulkan.h"

/* A 1x1 v1 container: one block, scale 1.0, bias 0, code 1 -> 1.0f. */
static unsigned char container[2056];

static int setup(void **state)
{
    (void)state;
    const uint32_t header = 0x3C00u << 16;
    memcpy(container, &header, 4);
    container[8] = 0x01;
    return 0;
}

static void init_sets_struct_size_and_defaults(void **state)
{
    (void)state;
    sgfp4_open_options oo;
    memset(&oo, 0x5A, sizeof oo);
    sgfp4_open_options_init(&oo);
    assert_int_equal(oo.struct_size, sizeof oo);
    assert_int_equal(oo.limits.max_elements, 0);
    assert_null(oo.allocator.alloc);

    sgfp4_decode_options d;
    memset(&d, 0x5A, sizeof d);
    sgfp4_decode_options_init(&d);
    assert_int_equal(d.struct_size, sizeof d);
    assert_int_equal(d.backend, SGFP4_BACKEND_AUTO);
    assert_int_equal(d.threads, 0);
    assert_int_equal(d.store, SGFP4_STORE_AUTO);

    sgfp4_encode_options e;
    memset(&e, 0x5A, sizeof e);
    sgfp4_encode_options_init(&e);
    assert_int_equal(e.struct_size, sizeof e);
    assert_int_equal(e.profile, SGFP4_PROFILE_V2);
    assert_true(e.target_bpw == 4.5);
    assert_int_equal(e.threads, 0);

    sgfp4_model_open_options mo;
    sgfp4_model_open_options_init(&mo);
    assert_int_equal(mo.struct_size, sizeof mo);
    assert_null(mo.temp_dir);
    sgfp4_model_write_options mw;
    sgfp4_model_write_options_init(&mw);
    assert_int_equal(mw.struct_size, sizeof mw);
    assert_null(mw.decode);
    assert_null(mw.progress);

    sgfp4_vk_context_options vk;
    sgfp4_vk_context_options_init(&vk);
    assert_int_equal(vk.struct_size, sizeof vk);
    assert_int_equal(vk.device_index, -1);
    assert_int_equal(vk.flags, 0);

    /* init functions accept NULL */
    sgfp4_open_options_init(NULL);
    sgfp4_decode_options_init(NULL);
    sgfp4_encode_options_init(NULL);
    sgfp4_model_open_options_init(NULL);
    sgfp4_model_write_options_init(NULL);
    sgfp4_vk_context_options_init(NULL);
}

static void unknown_struct_size_is_refused(void **state)
{
    (void)state;
    const size_t sizes[] = {0, 1, sizeof(sgfp4_open_options) + 8};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        sgfp4_open_options oo;
        sgfp4_open_options_init(&oo);
        oo.struct_size = sizes[k];
        sgfp4_tensor *t = (sgfp4_tensor *)&oo;
        sgfp4_diag diag;
        assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 1, 1,
                                           &t, &oo, &diag),
                         SGFP4_ERR_ARGUMENT);
        assert_null(t);
        assert_non_null(strstr(diag.message, "struct_size"));
    }

    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 1, 1, &t,
                                       NULL, NULL),
                     SGFP4_OK);
    float out[1] = {0};
    sgfp4_decode_options d;
    sgfp4_decode_options_init(&d);
    d.struct_size = 0; /* zero-initialised by hand: not made by init */
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_ERR_ARGUMENT);
    d.struct_size = sizeof d + 4;
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_ERR_ARGUMENT);
    d.struct_size = sizeof d;
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_OK);
    assert_true(out[0] == 1.0f);
    sgfp4_tensor_close(t);

    const float weights[64] = {0.5f};
    unsigned char encoded[4096];
    size_t written = 0;
    sgfp4_encode_options e;
    sgfp4_encode_options_init(&e);
    e.struct_size = 0;
    assert_int_equal(sgfp4_encode(weights, 8, 8, 0, encoded, sizeof encoded, &written, &e),
                     SGFP4_ERR_ARGUMENT);

    sgfp4_model_open_options mo;
    sgfp4_model_open_options_init(&mo);
    mo.struct_size = sizeof mo - 1;
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory("x", 1, &m, &mo, &diag), SGFP4_ERR_ARGUMENT);
    assert_null(m);
    assert_non_null(strstr(diag.message, "struct_size"));

    sgfp4_vk_context_options vk;
    sgfp4_vk_context_options_init(&vk);
    vk.struct_size = 0;
    sgfp4_vk_context *ctx = NULL;
    const sgfp4_status s = sgfp4_vk_context_create(&ctx, &vk, NULL);
    assert_int_equal(s, SGFP4_HAVE_VULKAN ? SGFP4_ERR_ARGUMENT : SGFP4_ERR_UNAVAILABLE);
    assert_null(ctx);
}

/* The mechanism for layouts to come: a caller built against an older header passes a
 * shorter struct, whose missing fields keep their defaults. */
typedef struct two_layouts {
    size_t struct_size;
    int first;  /* in the first layout */
    int second; /* appended later */
} two_layouts;

static void older_layouts_keep_defaults(void **state)
{
    (void)state;
    const size_t layouts[2] = {offsetof(two_layouts, second), sizeof(two_layouts)};
    const two_layouts defaults = {sizeof(two_layouts), 1, 2};
    two_layouts given = {offsetof(two_layouts, second), 10, 20}, out = defaults;
    assert_int_equal(sgfp4_options_copy(&given, &out, sizeof out, layouts, 2), SGFP4_OK);
    assert_int_equal(out.struct_size, sizeof out);
    assert_int_equal(out.first, 10);
    assert_int_equal(out.second, 2); /* not read: past the caller's struct_size */
    given.struct_size = sizeof given;
    out = defaults;
    assert_int_equal(sgfp4_options_copy(&given, &out, sizeof out, layouts, 2), SGFP4_OK);
    assert_int_equal(out.second, 20);
    given.struct_size = sizeof given - 2; /* no released layout */
    assert_int_equal(sgfp4_options_copy(&given, &out, sizeof out, layouts, 2),
                     SGFP4_ERR_ARGUMENT);
    out = defaults;
    assert_int_equal(sgfp4_options_copy(NULL, &out, sizeof out, layouts, 2), SGFP4_OK);
    assert_int_equal(out.first, 1);
}

static void threads_zero_means_one_and_the_maximum_holds(void **state)
{
    (void)state;
    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 1, 1, &t,
                                       NULL, NULL),
                     SGFP4_OK);
    float out[1];
    sgfp4_decode_options d;
    sgfp4_decode_options_init(&d);
    const unsigned counts[] = {0, 1, SGFP4_MAX_THREADS};
    for (size_t k = 0; k < 3; k++) {
        d.threads = counts[k];
        assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_OK);
    }
    d.threads = SGFP4_MAX_THREADS + 1;
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_ERR_ARGUMENT);
    sgfp4_tensor_close(t);

    float weights[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        weights[i] = (float)((i * 37) % 101 - 50) / 512.0f;
    unsigned char a[8192], b[8192];
    size_t na = 0, nb = 0;
    sgfp4_encode_options e;
    sgfp4_encode_options_init(&e);
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, a, sizeof a, &na, &e), SGFP4_OK);
    e.threads = 3;
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, b, sizeof b, &nb, &e), SGFP4_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    e.threads = SGFP4_MAX_THREADS + 1;
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, b, sizeof b, &nb, &e), SGFP4_ERR_ARGUMENT);
}

static sgfp4_status discard(void *user, const void *data, size_t size)
{
    (void)user;
    (void)data;
    (void)size;
    return SGFP4_OK;
}

static void zstd_sink_threads(void **state)
{
    (void)state;
    const sgfp4_sink inner = {discard, NULL};
    sgfp4_zstd_sink *zs = NULL;
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, SGFP4_MAX_THREADS + 1, &zs),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, 0, &zs), SGFP4_OK);
    assert_int_equal(sgfp4_zstd_sink_finish(zs), SGFP4_OK);
    sgfp4_zstd_sink_free(zs);
    sgfp4_zstd_sink_free(NULL);
}

static void too_small_outputs_have_their_own_status(void **state)
{
    (void)state;
    assert_int_equal(SGFP4_ERR_DST_TOO_SMALL, 8);
    assert_string_equal(sgfp4_status_name(SGFP4_ERR_DST_TOO_SMALL), "DST_TOO_SMALL");
    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 2, 2, &t,
                                       NULL, NULL),
                     SGFP4_OK);
    float out[4];
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, 15, NULL), SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, 16, NULL), SGFP4_OK);
    const uint64_t rows[2] = {1, 0};
    assert_int_equal(sgfp4_decode_gather(t, rows, 2, SGFP4_DTYPE_F32, out, 0, 8, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, NULL, 0, 16, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_tensor_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_sets_struct_size_and_defaults),
        cmocka_unit_test(unknown_struct_size_is_refused),
        cmocka_unit_test(older_layouts_keep_defaults),
        cmocka_unit_test(threads_zero_means_one_and_the_maximum_holds),
        cmocka_unit_test(zstd_sink_threads),
        cmocka_unit_test(too_small_outputs_have_their_own_status),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
