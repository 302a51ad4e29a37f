/* The golden matrix-vector vectors (golden/matvec/manifest.json, written by
 * tools/gen_golden.py from intended values through its own statement of D8) through the
 * public API only: for every backend this machine runs, the Class A quantizer's bytes equal
 * the vector's q8 file, and the products, on 1 and 3 threads and over a row range cut in
 * two calls, equal its y file bit for bit (a NaN matches any NaN: D8 leaves NaN signs and
 * payloads open).
 *
 * usage: test_matvec_golden GOLDEN_DIR [--only NAME]
 * Exit 0 when every vector matched, 1 on a mismatch, 2 on a usage or file error.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sgfp4.h"
#include "sgfp4_experimental.h"

static uint8_t *read_file(const char *dir, const char *name, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "test_matvec_golden: cannot open %s\n", path);
        return NULL;
    }
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

static bool same(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

typedef struct vector {
    const char *name;
    sgfp4_profile profile;
    uint64_t rows, cols;
    bool class_a;
    unsigned batch;
    sgfp4_dtype dtype;
    uint8_t *container, *x, *q8, *y;
    size_t container_size, x_size, q8_size, y_size;
} vector;

/* The products of `v` through `o` over rows [r0, r1) into got[n * rows + r]. */
static sgfp4_status product(const vector *v, const sgfp4_matvec_plan *plan, const uint8_t *q8,
                            uint64_t r0, uint64_t r1, float *got,
                            const sgfp4_matvec_options *o)
{
    const size_t capacity = ((v->batch - 1) * v->rows + (r1 - r0)) * sizeof(float);
    if (v->class_a)
        return sgfp4_matvec_q8(plan, q8, v->q8_size, v->batch, r0, r1, got + r0, v->rows,
                               capacity, o);
    return sgfp4_matvec_float(plan, v->x, v->dtype, v->batch, 0, r0, r1, got + r0, v->rows,
                              capacity, o);
}

static bool check_vector(const vector *v)
{
    sgfp4_tensor *t;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(v->container, v->container_size, v->profile, v->rows, v->cols, &t,
                          NULL, &diag) != SGFP4_OK) {
        fprintf(stderr, "%s: the container does not open: %s\n", v->name, diag.message);
        return false;
    }
    sgfp4_matvec_plan *plan;
    const size_t q8_size = sgfp4_matvec_q8_bytes(v->cols, v->batch);
    const size_t floats = (size_t)(v->batch * v->rows);
    uint8_t *q8 = malloc(q8_size ? q8_size : 1);
    float *got = malloc(floats * sizeof *got);
    bool ok = q8 && got && sgfp4_matvec_plan_create(t, &plan) == SGFP4_OK;
    if (!ok) {
        fprintf(stderr, "%s: out of memory\n", v->name);
        free(q8);
        free(got);
        sgfp4_tensor_close(t);
        return false;
    }
    if (v->y_size != floats * sizeof(float) ||
        v->x_size != v->batch * v->cols * sgfp4_dtype_size(v->dtype) ||
        (v->class_a && v->q8_size != q8_size)) {
        fprintf(stderr, "%s: file sizes do not match the manifest\n", v->name);
        ok = false;
    }
    static const sgfp4_backend backends[] = {SGFP4_BACKEND_AUTO,    SGFP4_BACKEND_SCALAR,
                                             SGFP4_BACKEND_GENERIC, SGFP4_BACKEND_AVX2,
                                             SGFP4_BACKEND_AVX512,  SGFP4_BACKEND_NEON};
    for (unsigned b = 0; b < sizeof backends / sizeof backends[0] && ok; b++) {
        if (!sgfp4_matvec_backend_name(backends[b]))
            continue; /* not in this build or on this CPU */
        sgfp4_matvec_options o;
        sgfp4_matvec_options_init(&o);
        o.backend = backends[b];
        const char *name = sgfp4_matvec_backend_name(backends[b]);
        if (v->class_a) {
            memset(q8, 0xEE, q8_size);
            if (sgfp4_matvec_quantize(v->x, v->dtype, v->cols, v->batch, 0, q8, q8_size, &o,
                                      &diag) != SGFP4_OK) {
                fprintf(stderr, "%s (%s): quantize fails: %s\n", v->name, name, diag.message);
                ok = false;
                break;
            }
            for (size_t i = 0; i < q8_size && ok; i++)
                if (q8[i] != v->q8[i]) {
                    fprintf(stderr, "%s (%s): q8 byte %zu is 0x%02x, expected 0x%02x\n",
                            v->name, name, i, q8[i], v->q8[i]);
                    ok = false;
                }
        }
        for (unsigned round = 0; round < 3 && ok; round++) {
            o.threads = round == 1 ? 3 : 1;
            memset(got, 0xEE, floats * sizeof *got);
            sgfp4_status s;
            if (round < 2) {
                s = product(v, plan, v->class_a ? q8 : NULL, 0, v->rows, got, &o);
            } else { /* two calls, cut at a row inside a macroblock row where there is one */
                const uint64_t cut = v->rows > 1 ? 1 + v->rows * 2 / 5 : v->rows;
                s = product(v, plan, q8, 0, cut, got, &o);
                if (s == SGFP4_OK && cut < v->rows)
                    s = product(v, plan, q8, cut, v->rows, got, &o);
            }
            if (s != SGFP4_OK) {
                fprintf(stderr, "%s (%s): the product fails: %s\n", v->name, name,
                        sgfp4_status_str(s));
                ok = false;
                break;
            }
            const float *want = (const float *)(const void *)v->y;
            for (size_t i = 0; i < floats && ok; i++) {
                float w;
                memcpy(&w, want + i, sizeof w);
                if (!same(got[i], w)) {
                    fprintf(stderr,
                            "%s (%s, %u threads%s): vector %zu, row %zu is %a, expected %a\n",
                            v->name, name, o.threads, round == 2 ? ", two calls" : "",
                            i / (size_t)v->rows, i % (size_t)v->rows, (double)got[i],
                            (double)w);
                    ok = false;
                }
            }
        }
    }
    sgfp4_matvec_plan_free(plan);
    sgfp4_tensor_close(t);
    free(q8);
    free(got);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--only") == 0)) {
        fprintf(stderr, "usage: test_matvec_golden GOLDEN_DIR [--only NAME]\n");
        return 2;
    }
    const char *dir = argv[1], *only = argc == 4 ? argv[3] : NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/matvec/manifest.json", dir);
    json_error_t error;
    json_t *manifest = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (!manifest) {
        fprintf(stderr, "test_matvec_golden: %s: %s\n", path, error.text);
        return 2;
    }
    unsigned checked = 0, failed = 0;
    int status = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(manifest, "vectors"), i, e)
    {
        vector v = {0};
        v.name = json_string_value(json_object_get(e, "name"));
        if (!v.name || (only && strcmp(only, v.name) != 0))
            continue;
        v.profile = strcmp(json_string_value(json_object_get(e, "profile")), "v1") == 0
                        ? SGFP4_PROFILE_V1
                        : SGFP4_PROFILE_V2;
        v.rows = (uint64_t)json_integer_value(json_array_get(json_object_get(e, "shape"), 0));
        v.cols = (uint64_t)json_integer_value(json_array_get(json_object_get(e, "shape"), 1));
        v.class_a = strcmp(json_string_value(json_object_get(e, "class")), "a") == 0;
        v.batch = (unsigned)json_integer_value(json_object_get(e, "batch"));
        v.dtype = strcmp(json_string_value(json_object_get(e, "x_dtype")), "f16") == 0
                      ? SGFP4_DTYPE_F16
                      : SGFP4_DTYPE_F32;
        v.container = read_file(dir, json_string_value(json_object_get(e, "container")),
                                &v.container_size);
        v.x = read_file(dir, json_string_value(json_object_get(e, "x")), &v.x_size);
        v.y = read_file(dir, json_string_value(json_object_get(e, "y")), &v.y_size);
        if (v.class_a)
            v.q8 = read_file(dir, json_string_value(json_object_get(e, "q8")), &v.q8_size);
        if (!v.container || !v.x || !v.y || (v.class_a && !v.q8)) {
            status = 2;
        } else if (check_vector(&v)) {
            checked++;
        } else {
            failed++;
        }
        free(v.container);
        free(v.x);
        free(v.y);
        free(v.q8);
    }
    json_decref(manifest);
    if (only && checked + failed == 0 && status == 0) {
        fprintf(stderr, "test_matvec_golden: no vector named %s\n", only);
        return 2;
    }
    printf("golden matvec vectors: %u matched, %u failed\n", checked, failed);
    return failed ? 1 : status;
}
