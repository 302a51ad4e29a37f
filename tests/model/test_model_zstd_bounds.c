/* Bounds on zstd model inputs: a bomb (33 KB that inflate to 1 GiB) is refused once its output
 * passes 100 times its size (above the 64 MiB floor), with a message that names the bound and
 * the option that raises it, and leaves nothing in the temp folder; raising the option lets a
 * well-compressed real file through; the absolute limit and the free-space share are the
 * other bounds, and the smallest applies.
 * SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "model/zstd_bounds.h"
#include "sgfp4_model.h"

static char temp_dir[4096];

static int make_temp_dir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(temp_dir, sizeof temp_dir, "%s/sgfp4-zstd-test-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(temp_dir) ? 0 : -1;
}

static int remove_temp_dir(void **state)
{
    (void)state;
    return rmdir(temp_dir);
}

static size_t files_in(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static sgfp4_status open_zst(const char *path, const sgfp4_model_open_options *base,
                             sgfp4_diag *diag)
{
    sgfp4_model_open_options o;
    sgfp4_model_open_options_init(&o);
    if (base)
        o = *base;
    o.temp_dir = temp_dir;
    sgfp4_model *m = NULL;
    const sgfp4_status s = sgfp4_model_open(path, &m, &o, diag);
    if (s == SGFP4_OK)
        assert_true(sgfp4_model_was_compressed(m));
    else
        assert_null(m);
    sgfp4_model_close(m);
    assert_int_equal(files_in(temp_dir), 0); /* the copy is unlinked, whatever happened */
    return s;
}

static void bomb_is_refused(void **state)
{
    (void)state;
    const char *root = getenv("SGFP4_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/model/bomb-1GiB.safetensors.zst", root ? root : ".");
    sgfp4_diag diag;
    assert_int_equal(open_zst(path, NULL, &diag), SGFP4_ERR_LIMIT);
    if (!strstr(diag.message, "100 times its 32905 compressed bytes") ||
        !strstr(diag.message, "max_decompression_ratio"))
        fail_msg("message: %s", diag.message);
    /* the absolute bound, when it is the smallest */
    sgfp4_model_open_options o;
    sgfp4_model_open_options_init(&o);
    o.max_decompressed_bytes = 1 << 20;
    assert_int_equal(open_zst(path, &o, &diag), SGFP4_ERR_LIMIT);
    assert_non_null(strstr(diag.message, "max_decompressed_bytes"));
}

/* A valid safetensors file of one zeroed F32 tensor of `bytes` bytes, zstd-compressed (the
 * frame declares its size) into a file in the temp folder's parent. */
static void write_zero_model(const char *path, size_t bytes)
{
    const char header[] = "{\"z\":{\"dtype\":\"F32\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}";
    char text[256];
    const int n = snprintf(text, sizeof text, header, bytes / 4, bytes / 4 * 4);
    const size_t size = 8 + (size_t)n + bytes / 4 * 4;
    uint8_t *plain = calloc(1, size);
    assert_non_null(plain);
    for (int k = 0; k < 8; k++)
        plain[k] = (uint8_t)((uint64_t)n >> (8 * k));
    memcpy(plain + 8, text, (size_t)n);
    const size_t cap = ZSTD_compressBound(size);
    void *packed = malloc(cap);
    assert_non_null(packed);
    const size_t packed_size = ZSTD_compress(packed, cap, plain, size, 1);
    assert_false(ZSTD_isError(packed_size));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(packed, 1, packed_size, f), packed_size);
    assert_int_equal(fclose(f), 0);
    free(packed);
    free(plain);
}

static void raised_ratio_lets_a_real_file_through(void **state)
{
    (void)state;
    /* 80 MB of zeros compress about 8000-fold: over the default, under a raised ratio */
    char path[4200];
    snprintf(path, sizeof path, "%s.zeros.safetensors.zst", temp_dir);
    write_zero_model(path, 80u << 20);
    sgfp4_diag diag;
    assert_int_equal(open_zst(path, NULL, &diag), SGFP4_ERR_LIMIT);
    assert_non_null(strstr(diag.message, "max_decompression_ratio"));
    sgfp4_model_open_options o;
    sgfp4_model_open_options_init(&o);
    o.max_decompression_ratio = 1000000;
    if (open_zst(path, &o, &diag) != SGFP4_OK)
        fail_msg("raised ratio: %s", diag.message);
    /* a small file is never refused for its ratio (the 64 MiB floor) */
    write_zero_model(path, 1u << 20);
    assert_int_equal(open_zst(path, NULL, &diag), SGFP4_OK);
    unlink(path);
}

static void smallest_bound_applies(void **state)
{
    (void)state;
    const uint64_t MiB = 1 << 20;
    uint64_t limit;
    /* ratio x input size, above the floor */
    sgfp4_zstd_bounds b = {UINT64_C(1) << 40, 100, 10 * MiB, false, 0, 90};
    assert_int_equal(sgfp4_zstd_limit(&b, 1, &limit), SGFP4_ZSTD_BOUND_RATIO);
    assert_int_equal(limit, 1000 * MiB);
    /* the floor, for a small input */
    b.input_bytes = 1000;
    assert_int_equal(sgfp4_zstd_limit(&b, 1, &limit), SGFP4_ZSTD_BOUND_RATIO);
    assert_int_equal(limit, SGFP4_MODEL_ZSTD_RATIO_FLOOR);
    /* a pipe: the bytes read so far stand in for the input size */
    b.input_bytes = 0;
    assert_int_equal(sgfp4_zstd_limit(&b, 2 * MiB, &limit), SGFP4_ZSTD_BOUND_RATIO);
    assert_int_equal(limit, 200 * MiB);
    /* the free space share */
    b.space_known = true;
    b.free_bytes = 100 * MiB;
    assert_int_equal(sgfp4_zstd_limit(&b, 2 * MiB, &limit), SGFP4_ZSTD_BOUND_SPACE);
    assert_int_equal(limit, 90 * MiB);
    b.percent = 100;
    assert_int_equal(sgfp4_zstd_limit(&b, 2 * MiB, &limit), SGFP4_ZSTD_BOUND_SPACE);
    assert_int_equal(limit, 100 * MiB);
    b.free_bytes = UINT64_MAX; /* no overflow in the share */
    b.percent = 90;
    assert_int_equal(sgfp4_zstd_limit(&b, 2 * MiB, &limit), SGFP4_ZSTD_BOUND_RATIO);
    /* the absolute limit */
    b.max_bytes = 5 * MiB;
    assert_int_equal(sgfp4_zstd_limit(&b, 2 * MiB, &limit), SGFP4_ZSTD_BOUND_ABSOLUTE);
    assert_int_equal(limit, 5 * MiB);
    /* a ratio that overflows saturates */
    b = (sgfp4_zstd_bounds){UINT64_MAX, UINT64_MAX, UINT64_MAX, false, 0, 90};
    assert_int_equal(sgfp4_zstd_limit(&b, 1, &limit), SGFP4_ZSTD_BOUND_ABSOLUTE);
    assert_int_equal(limit, UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bomb_is_refused),
        cmocka_unit_test(raised_ratio_lets_a_real_file_through),
        cmocka_unit_test(smallest_bound_applies),
    };
    return cmocka_run_group_tests(tests, make_temp_dir, remove_temp_dir);
}
