/* One tensor of a model: `decode MODEL --tensor NAME -o OUT` writes its values (.npy with
 * its shape, or raw), `info MODEL --tensor NAME` describes it (its container as `info` does
 * for a file, --map draws its leaves).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* NumPy's name for a dtype that is not converted to floats; NULL where NumPy has none. */
static const char *numpy_descr(sgfp4_st_dtype dt)
{
    switch (dt) {
    case SGFP4_ST_BOOL: return "|b1";
    case SGFP4_ST_U8: return "|u1";
    case SGFP4_ST_I8: return "|i1";
    case SGFP4_ST_I16: return "<i2";
    case SGFP4_ST_U16: return "<u2";
    case SGFP4_ST_I32: return "<i4";
    case SGFP4_ST_U32: return "<u4";
    case SGFP4_ST_I64: return "<i8";
    case SGFP4_ST_U64: return "<u8";
    case SGFP4_ST_F64: return "<f8";
    case SGFP4_ST_C64: return "<c8";
    default: return NULL;
    }
}

/* Opens the model and finds --tensor NAME; false after reporting why. */
static bool find_tensor(const cli_args *a, sgfp4_model **m, const sgfp4_model_tensor **t)
{
    *m = NULL;
    if (!cli_model_open(a, a->in, m))
        return false;
    if (!(*t = sgfp4_model_tensor_find(*m, a->tensor))) {
        cli_error(a->command, "%s: no tensor named '%s'", a->in, a->tensor);
        sgfp4_model_close(*m);
        *m = NULL;
        return false;
    }
    return true;
}

/* The float values of t in `dtype`: a container decoded, a float tensor converted exactly
 * (then rounded to nearest even for f16/bf16). Returns a malloc'ed buffer of *size bytes. */
static void *float_values(const cli_args *a, const sgfp4_model *m, const sgfp4_model_tensor *t,
                          size_t *size)
{
    const uint64_t n = t->quant ? t->quant->rows * t->quant->cols : t->elements;
    const size_t elem = sgfp4_dtype_size(a->dtype);
    if (n > SIZE_MAX / 4 / elem)
        return cli_error(a->command, "tensor '%s': too large", t->name), NULL;
    *size = (size_t)n * elem;
    float *v = malloc((size_t)n * 4 + 4);
    if (!v)
        return cli_error(a->command, "tensor '%s': out of memory", t->name), NULL;
    sgfp4_diag diag;
    sgfp4_status s;
    if (t->quant) {
        sgfp4_tensor *view = NULL;
        const sgfp4_decode_options d = cli_decode_options(a);
        if ((s = sgfp4_model_tensor_verify(m, t, &diag)) == SGFP4_OK &&
            (s = sgfp4_model_tensor_open(m, t, &view, NULL, &diag)) == SGFP4_OK &&
            (s = sgfp4_decode(view, a->dtype, v, 0, *size, &d)) != SGFP4_OK)
            snprintf(diag.message, sizeof diag.message, "cannot decode: %s",
                     sgfp4_status_str(s));
        sgfp4_tensor_close(view);
        if (s == SGFP4_OK)
            return v;
    } else if ((s = sgfp4_model_tensor_to_f32(t, 0, v, (size_t)n * 4, &diag)) == SGFP4_OK) {
        uint16_t *half = (uint16_t *)(void *)v;
        for (uint64_t k = 0; a->dtype != SGFP4_DTYPE_F32 && k < n; k++)
            half[k] = a->dtype == SGFP4_DTYPE_F16 ? sgfp4_float_to_half(v[k])
                                                  : sgfp4_float_to_bf16(v[k]);
        return v;
    }
    cli_error(a->command, "%s: tensor '%s': %s [%s]", a->in, t->name, diag.message,
              sgfp4_status_name(s));
    free(v);
    return NULL;
}

int cmd_decode_model_tensor(const cli_args *a)
{
    static const int container_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_ZSTD_LEVEL, 0};
    int rc = cli_reject(a, "--tensor NAME", container_only);
    if (rc >= 0)
        return rc;
    if (!a->out)
        return cli_usage_error(a->command, "no output given (-o OUT)");
    if (a->vulkan)
        return cli_usage_error(a->command, "--tensor NAME decodes on the CPU");
    const bool npy = cli_ends_with(a->out, ".npy");
    sgfp4_model *m;
    const sgfp4_model_tensor *t;
    if (!find_tensor(a, &m, &t))
        return CLI_EXIT_FAIL;
    if ((rc = cli_check_output_elements(a, m, t)) >= 0) {
        sgfp4_model_close(m);
        return rc;
    }
    const bool floats = t->quant || sgfp4_st_dtype_is_quantizable(t->dtype);
    const char *descr = floats ? (a->dtype == SGFP4_DTYPE_F32 ? "<f4" : "<f2")
                               : numpy_descr(t->dtype);
    rc = CLI_EXIT_FAIL;
    if (!floats && a->given[KEY_DTYPE])
        rc = cli_usage_error(a->command, "tensor '%s' is %s: --dtype applies to float tensors",
                             t->name, sgfp4_st_dtype_name(t->dtype));
    else if (npy && (a->dtype == SGFP4_DTYPE_BF16 || !descr))
        rc = cli_usage_error(a->command, "NumPy has no %s dtype: write tensor '%s' as a raw file",
                             floats ? "bfloat16" : sgfp4_st_dtype_name(t->dtype), t->name);
    fileio_output out;
    if (rc != CLI_EXIT_FAIL || !cli_output_open(a, a->out, &out)) {
        sgfp4_model_close(m);
        return rc;
    }
    size_t size = (size_t)t->nbytes;
    void *values = floats ? float_values(a, m, t, &size) : NULL;
    const uint64_t *shape = t->quant ? t->quant->original_shape : t->shape;
    const size_t rank = t->quant ? t->quant->original_rank : t->rank;
    char err[FILEIO_ERROR_SIZE];
    if (floats && !values) {
        /* reported */
    } else if (((npy && !fileio_npy_write_header(&out, descr, shape, rank)) ||
                !fileio_output_write(&out, floats ? values : t->data, size)) &&
               snprintf(err, sizeof err, "%s: cannot write", a->out)) {
        cli_error(a->command, "%s", err);
    } else if (!fileio_output_commit(&out, err)) {
        cli_error(a->command, "%s", err);
    } else {
        rc = CLI_EXIT_OK;
        cli_verbose(a->command, "%s: tensor '%s' (%s) written to %s", a->in, t->name,
                    t->quant ? "decoded from its container" : sgfp4_st_dtype_name(t->dtype),
                    a->out);
    }
    fileio_output_abort(&out);
    free(values);
    sgfp4_model_close(m);
    return rc;
}

/* A tensor without a container: what it is. */
static void describe_plain(const cli_args *a, const sgfp4_model *m, const sgfp4_model_tensor *t)
{
    const char *shard = sgfp4_model_shard_name(m, t->shard);
    if (a->given[KEY_JSON]) {
        json_t *root = json_pack("{s:s,s:s,s:s,s:[],s:I,s:b}", "file", a->in, "tensor", t->name,
                                 "dtype", sgfp4_st_dtype_name(t->dtype), "shape", "bytes",
                                 (json_int_t)t->nbytes, "quantized", 0);
        if (shard)
            json_object_set_new(root, "shard", json_string(shard));
        for (size_t d = 0; d < t->rank; d++)
            json_array_append_new(json_object_get(root, "shape"),
                                  json_integer((json_int_t)t->shape[d]));
        cli_print_json(root);
        return;
    }
    printf("file: %s\n", a->in);
    if (shard)
        printf("shard: %s\n", shard);
    printf("tensor: %s\ndtype: %s\nshape: [", t->name, sgfp4_st_dtype_name(t->dtype));
    for (size_t d = 0; d < t->rank; d++)
        printf("%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    printf("]\nbytes: %llu\nquantized: no (passed through)\n", (unsigned long long)t->nbytes);
}

int cmd_info_model_tensor(const cli_args *a)
{
    static const int container_only[] = {KEY_SHAPE, KEY_PROFILE, 0};
    int rc = cli_reject(a, "--tensor NAME", container_only);
    if (rc >= 0)
        return rc;
    sgfp4_model *m;
    const sgfp4_model_tensor *t;
    if (!find_tensor(a, &m, &t))
        return CLI_EXIT_FAIL;
    sgfp4_tensor *view = NULL;
    sgfp4_diag diag;
    sgfp4_status s;
    if (!t->quant && (a->map || a->against)) {
        rc = cli_error(a->command, "%s: tensor '%s' is not quantized: no container to %s", a->in,
                       t->name, a->map ? "map" : "compare");
    } else if (!t->quant) {
        describe_plain(a, m, t);
        rc = CLI_EXIT_OK;
    } else if ((s = sgfp4_model_tensor_open(m, t, &view, NULL, &diag)) != SGFP4_OK) {
        rc = cli_error(a->command, "%s: tensor '%s': %s [%s]", a->in, t->name, diag.message,
                       sgfp4_status_name(s));
    } else {
        char name[4200];
        snprintf(name, sizeof name, "%s, tensor %s", a->in, t->name);
        rc = cli_info_container(a, name, view);
    }
    sgfp4_tensor_close(view);
    sgfp4_model_close(m);
    return rc;
}
