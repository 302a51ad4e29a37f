/* sgfp4 verify --golden DIR, the matrix-vector part: the vectors of DIR/matvec/manifest.json
 * (docs/matvec.md, "Golden vectors"), each run with --backend and --threads: for Class A the
 * quantizer's q8 bytes and the product's y bytes, for Class B the y bytes, equal to the
 * expected files (a NaN matches any NaN: D8 leaves its sign and payload open).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* A file of the vector (path relative to DIR) read into *in; false with why set. */
static bool read_part(const cli_args *a, json_t *v, const char *key, fileio_input *in,
                      char *why, size_t why_size)
{
    const char *file = json_string_value(json_object_get(v, key));
    char path[4096], err[FILEIO_ERROR_SIZE];
    if (!file)
        return snprintf(why, why_size, "the manifest entry has no \"%s\"", key), false;
    snprintf(path, sizeof path, "%s/%s", a->golden, file);
    if (!fileio_read(path, in, err))
        return snprintf(why, why_size, "%s", err), false;
    return true;
}

/* Bit for bit, NaN equal to any NaN; false with why set at the first difference. */
static bool same_floats(const float *got, const uint8_t *want, size_t count, char *why,
                        size_t why_size)
{
    for (size_t i = 0; i < count; i++) {
        float w;
        memcpy(&w, want + 4 * i, 4);
        const bool both_nan = isnan(got[i]) && isnan(w);
        if (!both_nan && memcmp(&got[i], &w, 4) != 0)
            return snprintf(why, why_size, "y[%zu] is %a, expected %a", i, (double)got[i],
                            (double)w),
                   false;
    }
    return true;
}

static bool run_vector(const cli_args *a, json_t *v, char *why, size_t why_size)
{
    json_t *shape = json_object_get(v, "shape");
    const char *cls = json_string_value(json_object_get(v, "class"));
    const char *x_dtype = json_string_value(json_object_get(v, "x_dtype"));
    const json_int_t batch_value = json_integer_value(json_object_get(v, "batch"));
    sgfp4_profile profile;
    if (!json_is_array(shape) || json_array_size(shape) != 2 || !cls || !x_dtype ||
        batch_value < 1 || batch_value > SGFP4_MATVEC_MAX_BATCH ||
        !cli_parse_profile(json_string_value(json_object_get(v, "profile")), &profile))
        return snprintf(why, why_size, "malformed vector entry in matvec/manifest.json"), false;
    const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
    const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));
    const unsigned batch = (unsigned)batch_value;
    const bool class_a = strcmp(cls, "a") == 0;
    const sgfp4_dtype dtype = strcmp(x_dtype, "f16") == 0 ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_F32;
    fileio_input container = {0}, x = {0}, q8_want = {0}, y_want = {0};
    sgfp4_tensor *t = NULL;
    sgfp4_matvec_plan *plan = NULL;
    void *q8 = NULL;
    float *y = NULL;
    bool pass = false;
    if (!read_part(a, v, "container", &container, why, why_size) ||
        !read_part(a, v, "x", &x, why, why_size) ||
        !read_part(a, v, "y", &y_want, why, why_size) ||
        (class_a && !read_part(a, v, "q8", &q8_want, why, why_size)))
        goto done;
    sgfp4_diag diag;
    sgfp4_status s = sgfp4_tensor_open(container.data, container.size, profile, rows, cols, &t,
                                       NULL, &diag);
    if (s != SGFP4_OK) {
        snprintf(why, why_size, "the container does not open: %s [%s]", diag.message,
                 sgfp4_status_name(s));
        goto done;
    }
    const size_t y_bytes = (size_t)(rows * batch) * sizeof *y;
    if (x.size != cols * batch * sgfp4_dtype_size(dtype) || y_want.size != y_bytes) {
        snprintf(why, why_size, "x or y has the wrong size for %llux%llu, batch %u",
                 (unsigned long long)rows, (unsigned long long)cols, batch);
        goto done;
    }
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.backend = a->backend;
    o.threads = a->threads;
    if ((s = sgfp4_matvec_plan_create(t, &plan)) != SGFP4_OK || !(y = malloc(y_bytes))) {
        snprintf(why, why_size, "out of memory");
        goto done;
    }
    if (class_a) {
        const size_t q8_bytes = sgfp4_matvec_q8_bytes(cols, batch);
        if (!(q8 = malloc(q8_bytes))) {
            snprintf(why, why_size, "out of memory");
            goto done;
        }
        s = sgfp4_matvec_quantize(x.data, dtype, cols, batch, 0, q8, q8_bytes, &o, &diag);
        if (s != SGFP4_OK) {
            snprintf(why, why_size, "quantize: %s [%s]", diag.message, sgfp4_status_name(s));
            goto done;
        }
        if (q8_want.size != q8_bytes || memcmp(q8, q8_want.data, q8_bytes) != 0) {
            size_t i = 0;
            while (i < q8_bytes && i < q8_want.size && ((uint8_t *)q8)[i] == q8_want.data[i])
                i++;
            snprintf(why, why_size, "q8 byte %zu differs from the expected bytes", i);
            goto done;
        }
        s = sgfp4_matvec_q8(plan, q8, q8_bytes, batch, 0, rows, y, 0, y_bytes, &o);
    } else {
        s = sgfp4_matvec_float(plan, x.data, dtype, batch, 0, 0, rows, y, 0, y_bytes, &o);
    }
    if (s != SGFP4_OK) {
        snprintf(why, why_size, "the product failed: %s", sgfp4_status_name(s));
        goto done;
    }
    pass = same_floats(y, y_want.data, (size_t)(rows * batch), why, why_size);
done:
    free(y);
    free(q8);
    sgfp4_matvec_plan_free(plan);
    sgfp4_tensor_close(t);
    fileio_input_release(&container);
    fileio_input_release(&x);
    fileio_input_release(&q8_want);
    fileio_input_release(&y_want);
    return pass;
}

int cli_golden_matvec(const cli_args *a, size_t *passed, size_t *failed, json_t *results)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/matvec/manifest.json", a->golden);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return CLI_EXIT_OK; /* a golden set without matrix-vector vectors */
    fclose(probe);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return cli_error(a->command, "%s: line %d: %s", path, jerr.line, jerr.text);
    json_t *vectors = json_object_get(root, "vectors");
    if (!json_is_array(vectors)) {
        json_decref(root);
        return cli_error(a->command, "%s: no \"vectors\" array", path);
    }
    if (!sgfp4_matvec_backend_name(a->backend)) {
        json_decref(root);
        return cli_error(a->command, "the kernel set of --backend cannot run matrix-vector "
                         "products on this machine");
    }
    size_t index;
    json_t *v;
    json_array_foreach(vectors, index, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (a->only && (!name || strcmp(name, a->only) != 0))
            continue;
        char why[1024] = "", label[512];
        snprintf(label, sizeof label, "matvec/%s", name ? name : "?");
        const bool pass = run_vector(a, v, why, sizeof why);
        *(pass ? passed : failed) += 1;
        if (results)
            json_array_append_new(results, pass ? json_pack("{s:s,s:b}", "name", label, "ok", 1)
                                                : json_pack("{s:s,s:b,s:s}", "name", label, "ok",
                                                            0, "error", why));
        else if (pass && cli_verbosity > 0)
            printf("PASS %s\n", label);
        else if (!pass)
            printf("FAIL %s: %s\n", label, why);
    }
    json_decref(root);
    return CLI_EXIT_OK;
}
