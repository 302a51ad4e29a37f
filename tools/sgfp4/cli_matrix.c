/* Loading float matrices for encode and quality reports.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "cli_encode.h"
#include "sgfp4_model.h"

float *cli_load_matrix(const char *command, const char *path, uint64_t *rows, uint64_t *cols)
{
    cli_input in;
    if (!cli_read_input(command, path, &in))
        return NULL;
    float *m = NULL;
    const uint8_t *data = in.data;
    size_t bytes = in.size;
    int half = 0;
    if (in.size >= 6 && memcmp(in.data, "\x93NUMPY", 6) == 0) {
        char descr[8];
        uint64_t r, c;
        size_t offset;
        const char *error = NULL;
        if (!cli_npy_parse(in.data, in.size, descr, &r, &c, &offset, &error)) {
            cli_error(command, "%s: %s", path, error);
            goto done;
        }
        if (strcmp(descr, "<f4") == 0)
            half = 0;
        else if (strcmp(descr, "<f2") == 0)
            half = 1;
        else {
            cli_error(command, "%s: dtype %s not supported (want <f4 or <f2)", path, descr);
            goto done;
        }
        if (*rows && (*rows != r || *cols != c)) {
            cli_error(command, "%s: shape %llux%llu does not match --shape", path,
                      (unsigned long long)r, (unsigned long long)c);
            goto done;
        }
        *rows = r;
        *cols = c;
        data += offset;
        bytes -= offset;
    } else if (*rows == 0) {
        cli_error(command, "%s: raw float32 input needs --shape OxI", path);
        goto done;
    }
    const uint64_t count = *rows * *cols;
    if (*cols != 0 && count / *cols != *rows) {
        cli_error(command, "%s: shape too large", path);
        goto done;
    }
    const uint64_t want = count * (half ? 2u : 4u);
    if (count > SIZE_MAX / 4 || bytes != want) {
        cli_error(command, "%s: %zu data bytes, shape %llux%llu needs %llu", path, bytes,
                  (unsigned long long)*rows, (unsigned long long)*cols,
                  (unsigned long long)want);
        goto done;
    }
    m = malloc((size_t)count * sizeof *m + 1);
    if (!m) {
        cli_error(command, "out of memory for %llu weights", (unsigned long long)count);
        goto done;
    }
    for (uint64_t i = 0; i < count; i++) {
        if (half) {
            m[i] = sgfp4_half_to_float((uint16_t)(data[2 * i] | data[2 * i + 1] << 8));
        } else {
            const uint32_t bits = (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
                                  (uint32_t)data[4 * i + 2] << 16 |
                                  (uint32_t)data[4 * i + 3] << 24;
            memcpy(&m[i], &bits, 4);
        }
    }
done:
    cli_input_release(&in);
    return m;
}

float *cli_decode_f32(const sgfp4_tensor *t, unsigned threads)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_get_info(t, &info);
    const size_t bytes = (size_t)(info.rows * info.cols) * sizeof(float);
    float *f = malloc(bytes + 1);
    sgfp4_decode_options options;
    sgfp4_decode_options_init(&options);
    options.threads = threads;
    if (f && sgfp4_decode(t, SGFP4_DTYPE_F32, f, 0, bytes, &options) != SGFP4_OK) {
        free(f);
        f = NULL;
    }
    return f;
}

void cli_quality_measure(const float *ref, const float *dec, uint64_t count, cli_quality *q)
{
    memset(q, 0, sizeof *q);
    q->count = count;
    for (uint64_t i = 0; i < count; i++) {
        const double e = (double)ref[i] - dec[i];
        q->sse += e * e;
        q->ref_sq += (double)ref[i] * ref[i];
        const double a = e < 0 ? -e : e;
        if (a > q->max_abs)
            q->max_abs = a;
    }
}

float *cli_load_safetensor(const char *command, const char *path, const char *name,
                           uint64_t *rows, uint64_t *cols)
{
    sgfp4_model *model = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_open(path, &model, NULL, &diag) != SGFP4_OK) {
        cli_error(command, "%s: %s", path, diag.message);
        return NULL;
    }
    float *m = NULL;
    const sgfp4_model_tensor *t = sgfp4_model_tensor_find(model, name);
    if (!t) {
        cli_error(command, "%s: no tensor named '%s'", path, name);
        goto done;
    }
    if (t->dtype != SGFP4_ST_F32 && t->dtype != SGFP4_ST_F16 && t->dtype != SGFP4_ST_BF16) {
        cli_error(command, "%s: tensor '%s' is %s, not F32, F16 or BF16", path, name,
                  sgfp4_st_dtype_name(t->dtype));
        goto done;
    }
    /* Rank 2 as is; rank 1 as one row; higher ranks as [prod(leading dims), last] (D6). */
    const uint64_t c = t->rank == 0 ? 1 : t->shape[t->rank - 1];
    const uint64_t r = c == 0 ? 0 : t->elements / c;
    if (r == 0 || c == 0) {
        cli_error(command, "%s: tensor '%s' is empty", path, name);
        goto done;
    }
    if (*rows && (*rows != r || *cols != c)) {
        cli_error(command, "%s: tensor '%s' is %llux%llu, not the --shape given", path, name,
                  (unsigned long long)r, (unsigned long long)c);
        goto done;
    }
    if (t->elements > SIZE_MAX / 4 || !(m = malloc((size_t)t->elements * 4 + 1))) {
        cli_error(command, "out of memory for tensor '%s'", name);
        goto done;
    }
    if (sgfp4_model_tensor_to_f32(t, 1, m, (size_t)t->elements * 4, &diag) != SGFP4_OK) {
        cli_error(command, "%s: %s", path, diag.message);
        free(m);
        m = NULL;
        goto done;
    }
    *rows = r;
    *cols = c;
done:
    sgfp4_model_close(model);
    return m;
}
