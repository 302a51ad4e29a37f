/* sgfp4 matvec IN --x X.f32 -o Y.f32: Y[n] = W X[n] for a container W (--shape OxI) or a
 * quantized model's tensor (--tensor NAME), straight from the compressed weights with the
 * library's D8 products (docs/matvec.md): Class A (--class a, the default) quantizes X with
 * sgfp4_matvec_quantize first, Class B (--class b) uses X as it is. X is raw float32 [N][I]
 * (N = --batch, or the file's size / 4I), Y raw float32 [N][O], both little-endian.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const cli_accept options[] = {
    {KEY_OUTPUT, "Y: raw float32 [N][O], little-endian ('-': standard output)"},
    {KEY_X, NULL},
    {KEY_SHAPE, "W's shape (required for a container)"},
    {KEY_PROFILE, NULL},
    {KEY_TENSOR, "with a quantized model: its tensor NAME (the manifest gives the shape)"},
    {KEY_BATCH, "vectors in X, 1..16 (default: X's size / (4 I))"},
    {KEY_CLASS, NULL},
    {KEY_BACKEND, "auto (default), cpu, scalar (the reference), generic, avx2, avx512, neon "
                  "(one CPU kernel set), vulkan (the GPU): every one gives the same bits"},
    {KEY_THREADS, NULL},
    {KEY_FORCE, NULL},
    {0, NULL},
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* W: a container opened with --shape, or a model's quantized tensor. */
typedef struct weights {
    cli_container container;
    sgfp4_model *model;
    sgfp4_tensor *model_tensor;
    const sgfp4_tensor *t;
    uint64_t rows, cols;
} weights;

static int weights_open(const cli_args *a, weights *w)
{
    memset(w, 0, sizeof *w);
    if (cli_is_model_input(a)) {
        static const int container_only[] = {KEY_SHAPE, KEY_PROFILE, 0};
        int rc = cli_reject(a, "a quantized model (the manifest gives shape and profile)",
                            container_only);
        if (rc >= 0)
            return rc;
        if (!a->tensor)
            return cli_usage_error(a->command, "%s is a model: name the tensor (--tensor NAME)",
                                   a->in);
        if (!cli_model_open(a, a->in, &w->model))
            return CLI_EXIT_FAIL;
        const sgfp4_model_tensor *mt = sgfp4_model_tensor_find(w->model, a->tensor);
        if (!mt)
            return cli_error(a->command, "%s: no tensor '%s'", a->in, a->tensor);
        if (!mt->quant)
            return cli_error(a->command, "%s: tensor '%s' is not quantized (%s): matvec needs "
                             "an SGFP4 tensor",
                             a->in, a->tensor, sgfp4_st_dtype_name(mt->dtype));
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_model_tensor_open(w->model, mt, &w->model_tensor, NULL, &diag);
        if (s != SGFP4_OK)
            return cli_error(a->command, "%s: tensor '%s': %s [%s]", a->in, a->tensor,
                             diag.message, sgfp4_status_name(s));
        w->t = w->model_tensor;
        w->rows = mt->quant->rows;
        w->cols = mt->quant->cols;
        return -1;
    }
    if (a->tensor)
        return cli_usage_error(a->command, "--tensor names a tensor of a quantized model; %s "
                               "is a container",
                               a->in);
    const int rc = cli_container_open(a, &w->container);
    if (rc >= 0)
        return rc;
    w->t = w->container.tensor;
    w->rows = a->rows;
    w->cols = a->cols;
    return -1;
}

static void weights_close(weights *w)
{
    sgfp4_tensor_close(w->model_tensor);
    sgfp4_model_close(w->model);
    if (w->container.tensor || w->container.in.data)
        cli_container_close(&w->container);
}

/* Writes y crash-safe to -o (an existing file only with -f; never one of the inputs). */
static bool write_output(const cli_args *a, const float *y, size_t bytes)
{
    char err[FILEIO_ERROR_SIZE];
    fileio_output out;
    fileio_note_input(a->x);
    if (!cli_output_open(a, a->out, &out))
        return false;
    if (!fileio_output_write(&out, y, bytes)) {
        fileio_output_abort(&out);
        return cli_error(a->command, "%s: cannot write", a->out), false;
    }
    if (!fileio_output_commit(&out, err))
        return cli_error(a->command, "%s", err), false;
    return true;
}

static int run(const cli_args *a)
{
    if (!a->x)
        return cli_usage_error(a->command, "no activations given (--x X.f32)");
    if (!a->out)
        return cli_usage_error(a->command, "no output given (-o Y.f32)");
    weights w;
    int rc = weights_open(a, &w);
    if (rc >= 0) {
        weights_close(&w);
        return rc;
    }
    rc = CLI_EXIT_FAIL;
    char err[FILEIO_ERROR_SIZE];
    fileio_input xin = {0};
    void *q8 = NULL;
    float *y = NULL;
    sgfp4_matvec_plan *plan = NULL;
    const uint64_t rows = w.rows, cols = w.cols;
    if (!fileio_read(a->x, &xin, err)) {
        cli_error(a->command, "%s", err);
        goto done;
    }
    /* X holds N whole vectors of I float32 */
    const uint64_t vector_bytes = 4 * cols;
    if (xin.size == 0 || xin.size % vector_bytes != 0) {
        cli_error(a->command, "%s: %zu bytes is not a whole number of vectors of %llu float32 "
                  "(%llu bytes each)",
                  a->x, xin.size, (unsigned long long)cols, (unsigned long long)vector_bytes);
        goto done;
    }
    const uint64_t batch = xin.size / vector_bytes;
    if (a->given[KEY_BATCH] && batch != a->batch) {
        cli_error(a->command, "%s holds %llu vectors of %llu float32, --batch says %u", a->x,
                  (unsigned long long)batch, (unsigned long long)cols, a->batch);
        goto done;
    }
    if (batch > SGFP4_MATVEC_MAX_BATCH) {
        cli_error(a->command, "%s holds %llu vectors of %llu float32: at most %d per call", a->x,
                  (unsigned long long)batch, (unsigned long long)cols, SGFP4_MATVEC_MAX_BATCH);
        goto done;
    }
    const unsigned n = (unsigned)batch;
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.backend = a->backend;
    o.threads = a->threads;
    const char *kernels = a->vulkan ? "vulkan" : sgfp4_matvec_backend_name(a->backend);
    if (!kernels) {
        cli_error(a->command, "the kernel set of --backend cannot run on this machine");
        goto done;
    }
    sgfp4_status s = sgfp4_matvec_plan_create(w.t, &plan);
    const size_t y_bytes = (size_t)(n * rows) * sizeof *y;
    if (s != SGFP4_OK || !(y = malloc(y_bytes))) {
        cli_error(a->command, "out of memory for the %llux%llu product", (unsigned long long)rows,
                  (unsigned long long)cols);
        goto done;
    }
    const double t0 = now();
    if (a->vulkan) {
        if (!cli_vulkan_matvec(a->command, w.t, rows, cols, a->class_b, xin.data, n, y))
            goto done;
    } else if (!a->class_b) {
        const size_t q8_bytes = sgfp4_matvec_q8_bytes(cols, n);
        sgfp4_diag diag;
        if (!q8_bytes || !(q8 = malloc(q8_bytes))) {
            cli_error(a->command, "out of memory for the quantized activations");
            goto done;
        }
        s = sgfp4_matvec_quantize(xin.data, SGFP4_DTYPE_F32, cols, n, 0, q8, q8_bytes, &o, &diag);
        if (s != SGFP4_OK) {
            cli_error(a->command, "%s: %s (Class A; --class b takes any float)", a->x,
                      diag.message);
            goto done;
        }
        s = sgfp4_matvec_q8(plan, q8, q8_bytes, n, 0, rows, y, 0, y_bytes, &o);
    } else {
        s = sgfp4_matvec_float(plan, xin.data, SGFP4_DTYPE_F32, 0, n, 0, rows, y, 0, y_bytes, &o);
    }
    if (s != SGFP4_OK) {
        cli_error(a->command, "the product failed: %s", sgfp4_status_str(s));
        goto done;
    }
    const double seconds = now() - t0;
    if (!write_output(a, y, y_bytes))
        goto done;
    cli_verbose(a->command, "%s: %llux%llu times %u vector%s (class %c) by %s on %u threads in "
                "%.3f s (plan %zu bytes)",
                a->in, (unsigned long long)rows, (unsigned long long)cols, n, n == 1 ? "" : "s",
                a->class_b ? 'B' : 'A', kernels, a->threads, seconds,
                sgfp4_matvec_plan_bytes(plan));
    rc = CLI_EXIT_OK;
done:
    sgfp4_matvec_plan_free(plan);
    free(q8);
    free(y);
    fileio_input_release(&xin);
    weights_close(&w);
    return rc;
}

const cli_command cli_matvec = {
    "matvec", "multiply compressed weights by activation vectors (DECISIONS D8)",
    "usage: sgfp4 matvec IN --shape OxI [--profile v1|v2] --x X.f32 [--batch N] [--class a|b]\n"
    "                    [--backend B] [--threads N] [-f] -o Y.f32\n"
    "       sgfp4 matvec MODEL.sgfp4.safetensors[.zst] --tensor NAME --x X.f32 [options] -o Y.f32\n"
    "\n"
    "Computes Y[n] = W X[n] straight from the compressed weights W (a container, or a quantized\n"
    "model's tensor), bit for bit as DECISIONS D8 defines it: the same bytes with every backend\n"
    "and thread count. X is row-major [N][I] float32 (I = W's columns; N = the file's size /\n"
    "4I, 1..16), Y row-major [N][O] float32, both raw little-endian. Class A (the default)\n"
    "first quantizes each 64 columns of X to 8-bit integers with a power-of-two scale (it\n"
    "refuses NaN and infinity); Class B multiplies the float activations as they are.\n",
    options, run};
