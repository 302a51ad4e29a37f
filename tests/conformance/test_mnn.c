/* Another implementation's vectors: every case of $SGFP4_SHARED_DIR/conformance/mnn (v2
 * containers + expected float32 from MNN's SGFP4 decoder) must decode bit for bit, with the
 * scalar reference and the AUTO backend, on 1 and several threads, and the container facts
 * the fixture manifest records (records, leaves per mode, size) must match what the library
 * reports. The fixtures are read from the shared folder at test time, never copied here.
 * Exits 77 (CTest "skipped") with a message when the folder is absent.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "sgfp4.h"
#include "support/options.h"

static char mnn_dir[4096];

/* Reads a whole file into a new buffer; NULL if it cannot. */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc(n > 0 ? (size_t)n : 1);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            *size = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

static unsigned char *read_case_file(const char *name, size_t *size)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", mnn_dir, name);
    unsigned char *data = read_file(path, size);
    if (!data)
        fail_msg("cannot read %s", path);
    return data;
}

static uint64_t json_u64(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("fixture manifest: \"%s\" is not an integer", key);
    return (uint64_t)json_integer_value(v);
}

/* Checks that bytes hash to the fixture manifest's sha256 for them (the files are the ones
 * the manifest describes). */
static void assert_sha256(const char *name, const unsigned char *data, size_t size,
                          const char *want_hex)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    assert_true(EVP_Digest(data, size, md, &n, EVP_sha256(), NULL) == 1);
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (!want_hex || strcmp(hex, want_hex) != 0)
        fail_msg("%s: sha256 %s, the fixture manifest says %s", name, hex,
                 want_hex ? want_hex : "(nothing)");
}

/* Decodes one case with every backend/thread combination and compares bit for bit. */
static void check_case(json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *file = json_string_value(json_object_get(c, "file"));
    const char *expected_file = json_string_value(json_object_get(c, "expected"));
    const char *profile = json_string_value(json_object_get(c, "profile"));
    json_t *shape = json_object_get(c, "shape");
    assert_non_null(name);
    assert_non_null(file);
    assert_non_null(expected_file);
    assert_non_null(profile);
    assert_string_equal(profile, "v2");
    assert_true(json_is_array(shape) && json_array_size(shape) == 2);
    const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
    const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));

    size_t size = 0, expected_size = 0;
    unsigned char *data = read_case_file(file, &size);
    unsigned char *expected = read_case_file(expected_file, &expected_size);
    assert_int_equal(expected_size, rows * cols * 4);
    assert_int_equal(size, json_u64(c, "container_bytes"));
    assert_sha256(file, data, size, json_string_value(json_object_get(c, "sha256_container")));
    assert_sha256(expected_file, expected, expected_size,
                  json_string_value(json_object_get(c, "sha256_expected")));

    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s =
        sgfp4_tensor_open(data, size, SGFP4_PROFILE_V2, rows, cols, &t, NULL, &diag);
    if (s != SGFP4_OK)
        fail_msg("%s: rejected: %s [%s]", name, diag.message, sgfp4_status_name(s));

    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    uint64_t records = 0;
    for (int l = 0; l < 6; l++)
        records += info.records_by_layout[l];
    assert_int_equal(records, json_u64(c, "records"));
    assert_int_equal(info.leaves, json_u64(c, "leaves"));
    assert_int_equal(info.leaves_by_mode[SGFP4_MODE_FP4], json_u64(c, "leaves_mode0"));
    assert_int_equal(info.leaves_by_mode[SGFP4_MODE_T158], json_u64(c, "leaves_mode1"));

    float *out = malloc(expected_size);
    assert_non_null(out);
    const sgfp4_backend backends[] = {SGFP4_BACKEND_SCALAR, SGFP4_BACKEND_AUTO};
    const unsigned threads[] = {1, 3};
    for (size_t b = 0; b < 2; b++)
        for (size_t k = 0; k < 2; k++) {
            const sgfp4_decode_options o =
                decode_options(backends[b], threads[k], SGFP4_STORE_AUTO);
            memset(out, 0xA5, expected_size);
            assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, expected_size, &o),
                             SGFP4_OK);
            if (memcmp(out, expected, expected_size) != 0) {
                size_t i = 0;
                while (memcmp((unsigned char *)out + 4 * i, expected + 4 * i, 4) == 0)
                    i++;
                float want;
                memcpy(&want, expected + 4 * i, 4);
                fail_msg("%s (backend %d, %u threads): element %zu (row %zu, col %zu) is "
                         "%.9g, MNN expects %.9g",
                         name, (int)backends[b], threads[k], i, i / (size_t)cols,
                         i % (size_t)cols, (double)out[i], (double)want);
            }
        }
    print_message("mnn %-20s %llux%llu  %llu leaves: bit-identical\n", name,
                  (unsigned long long)rows, (unsigned long long)cols,
                  (unsigned long long)info.leaves);
    free(out);
    sgfp4_tensor_close(t);
    free(expected);
    free(data);
}

static void every_mnn_case_is_bit_identical(void **state)
{
    (void)state;
    char path[8192];
    snprintf(path, sizeof path, "%s/manifest.json", mnn_dir);
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        fail_msg("%s: line %d: %s", path, err.line, err.text);
    assert_true(json_is_array(root));
    assert_true(json_array_size(root) > 0);
    size_t index;
    json_t *c;
    json_array_foreach(root, index, c) check_case(c);
    print_message("%zu MNN cases bit-identical\n", json_array_size(root));
    json_decref(root);
}

int main(void)
{
    const char *shared = getenv("SGFP4_SHARED_DIR");
    snprintf(mnn_dir, sizeof mnn_dir, "%s/conformance/mnn", shared ? shared : "../shared");
    char manifest[8192];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", mnn_dir);
    FILE *probe = fopen(manifest, "rb");
    if (!probe) {
        fprintf(stderr, "test_mnn: SKIPPED: no MNN fixtures at %s (set SGFP4_SHARED_DIR to "
                        "the shared/ folder that holds conformance/mnn)\n",
                mnn_dir);
        return 77;
    }
    fclose(probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_mnn_case_is_bit_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
