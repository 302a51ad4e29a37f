/* sgfp4 matvec IN --x X -o Y: Y[n] = W X[n] for a container W (--shape OxI) or a quantized
 * model's tensor (--tensor NAME), straight from the compressed weights with the library's D8
 * products (docs/matvec.md): Class A (--class a, the default) quantizes X with
 * sgfp4_matvec_quantize first, Class B (--class b) uses X as it is. X is a NumPy .npy file
 * ([N][I] or one vector [I], float32 or float16) or raw little-endian float32 [N][I] (N =
 * --batch, or the file's size / 4I); Y is [N][O] float32, .npy when its name ends in .npy
 * (as decode writes), else raw little-endian. Any N: the products take
 * SGFP4_MATVEC_MAX_BATCH vectors a call, and a longer batch is split (each vector is
 * computed alone, so the bits are those of one call).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tool_clock.h"

static const cli_accept options[] = {
    {KEY_OUTPUT, "Y: float32 [N][O], .npy for a name ending in .npy, else raw little-endian "
                 "('-': standard output)"},
    {KEY_X, NULL},
    {KEY_SHAPE, "W's shape (required for a container)"},
    {KEY_PROFILE, NULL},
    {KEY_TENSOR, "with a quantized model: its tensor NAME (the manifest gives the shape)"},
    {KEY_BATCH, "vectors in X, which must hold that many (default: all it holds)"},
    {KEY_CLASS, NULL},
    {KEY_BACKEND, "auto (default), cpu, scalar (the reference), generic, avx2, avx512, neon "
                  "(one CPU kernel set), vulkan (the GPU): every one gives the same bits"},
    {KEY_THREADS, NULL},
    {KEY_FAST, NULL},
    {KEY_FORCE, NULL},
    {0, NULL},
};

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

/* X as float32 [*n][cols], malloc'ed: a .npy of dtype <f4 or <f2 and shape (N, I) or (I,),
 * or raw little-endian float32 holding a whole number of vectors. NULL when X cannot be read
 * or does not fit W (reported). */
static float *read_activations(const cli_args *a, uint64_t cols, uint64_t *n)
{
    char err[FILEIO_ERROR_SIZE];
    fileio_input in;
    if (!fileio_read(a->x, &in, err))
        return cli_error(a->command, "%s", err), NULL;
    float *x = NULL;
    uint64_t rows = 0, width = 0;
    const bool npy = fileio_is_npy(in.data, in.size);
    const uint64_t vector_bytes = 4 * cols;
    if (!npy && cli_ends_with(a->x, ".npy")) {
        cli_error(a->command, "%s: not a NumPy file (no \\x93NUMPY magic)", a->x);
    } else if (npy) {
        if (!(x = fileio_matrix(&in, a->x, &rows, &width, err)))
            cli_error(a->command, "%s", err);
        else if (width != cols || rows == 0)
            cli_error(a->command, "%s: %llu vectors of %llu values: W has %llu columns", a->x,
                      (unsigned long long)rows, (unsigned long long)width,
                      (unsigned long long)cols);
    } else if (in.size == 0 || in.size % vector_bytes != 0) {
        cli_error(a->command, "%s: %zu bytes is not a whole number of vectors of %llu float32 "
                  "(%llu bytes each)",
                  a->x, in.size, (unsigned long long)cols, (unsigned long long)vector_bytes);
    } else {
        rows = in.size / vector_bytes;
        width = cols;
        if (!(x = fileio_matrix(&in, a->x, &rows, &width, err)))
            cli_error(a->command, "%s", err);
    }
    fileio_input_release(&in);
    if (x && (width != cols || rows == 0)) {
        free(x);
        return NULL;
    }
    if (x && a->given[KEY_BATCH] && rows != a->batch) {
        cli_error(a->command, "%s holds %llu vectors of %llu values, --batch says %u", a->x,
                  (unsigned long long)rows, (unsigned long long)cols, a->batch);
        free(x);
        return NULL;
    }
    *n = rows;
    return x;
}

/* Writes y [n][rows] crash-safe to -o (an existing file only with -f; never one of the
 * inputs), with a .npy header for a name ending in .npy. */
static bool write_output(const cli_args *a, const float *y, uint64_t n, uint64_t rows)
{
    char err[FILEIO_ERROR_SIZE];
    fileio_output out;
    fileio_note_input(a->x);
    if (!cli_output_open(a, a->out, &out))
        return false;
    const uint64_t shape[2] = {n, rows};
    if (cli_ends_with(a->out, ".npy"))
        fileio_npy_write_header(&out, "<f4", shape, 2);
    fileio_output_write(&out, y, (size_t)(n * rows) * sizeof *y);
    if (!fileio_output_commit(&out, err)) /* a failed write fails the commit */
        return cli_error(a->command, "%s", err), false;
    return true;
}

/* The CPU products of n vectors, SGFP4_MATVEC_MAX_BATCH a call. */
static bool products(const cli_args *a, const sgfp4_matvec_plan *plan, uint64_t rows,
                     uint64_t cols, const float *x, uint64_t n, float *y)
{
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.backend = a->backend;
    o.threads = a->threads;
    const unsigned most = n < SGFP4_MATVEC_MAX_BATCH ? (unsigned)n : SGFP4_MATVEC_MAX_BATCH;
    const size_t q8_bytes = sgfp4_matvec_q8_bytes(cols, most);
    void *q8 = a->class_b ? NULL : malloc(q8_bytes ? q8_bytes : 1);
    if (!a->class_b && (!q8_bytes || !q8))
        return cli_error(a->command, "out of memory for the quantized activations"), false;
    sgfp4_status s = SGFP4_OK;
    for (uint64_t k = 0; s == SGFP4_OK && k < n; k += most) {
        const unsigned m = n - k < most ? (unsigned)(n - k) : most;
        const float *xk = x + k * cols;
        float *yk = y + k * rows;
        const size_t y_bytes = (size_t)(m * rows) * sizeof *y;
        if (a->class_b) {
            s = sgfp4_matvec_float(plan, xk, SGFP4_DTYPE_F32, m, 0, 0, rows, yk, 0, y_bytes, &o);
            continue;
        }
        sgfp4_diag diag;
        s = sgfp4_matvec_quantize(xk, SGFP4_DTYPE_F32, cols, m, 0, q8, q8_bytes, &o, &diag);
        if (s == SGFP4_ERR_ARGUMENT && diag.offset >= 0) {
            /* the diag's offset is the byte of the value in this call's vectors */
            const uint64_t at = (uint64_t)diag.offset / sizeof *x;
            const float v = xk[at];
            free(q8);
            return cli_error(a->command, "%s: vector %llu, column %llu is %s (Class A needs "
                             "finite activations; --class b takes any float)", a->x,
                             (unsigned long long)(k + at / cols), (unsigned long long)(at % cols),
                             isnan(v) ? "NaN" : "infinite"),
                   false;
        }
        if (s == SGFP4_OK)
            s = sgfp4_matvec_q8(plan, q8, q8_bytes, m, 0, rows, yk, 0, y_bytes, &o);
    }
    free(q8);
    if (s != SGFP4_OK)
        return cli_error(a->command, "the product failed: %s", sgfp4_status_str(s)), false;
    return true;
}

static int run(const cli_args *a)
{
    if (!a->x)
        return cli_usage_error(a->command, "no activations given (--x X.npy or X.f32)");
    if (!a->out)
        return cli_usage_error(a->command, "no output given (-o Y.npy or Y.f32)");
    if (a->given[KEY_FAST] && !a->vulkan)
        return cli_usage_error(a->command, "--fast: the fast products (DECISIONS D9) are not "
                               "offered on the CPU backends; --backend vulkan offers them");
    weights w;
    int rc = weights_open(a, &w);
    if (rc >= 0) {
        weights_close(&w);
        return rc;
    }
    rc = CLI_EXIT_FAIL;
    float *x = NULL, *y = NULL;
    sgfp4_matvec_plan *plan = NULL;
    const uint64_t rows = w.rows, cols = w.cols;
    uint64_t n = 0;
    const char *kernels = a->vulkan ? "vulkan" : sgfp4_matvec_backend_name(a->backend);
    if (!kernels) {
        cli_error(a->command, "the kernel set of --backend cannot run on this machine");
        goto done;
    }
    if (!(x = read_activations(a, cols, &n)))
        goto done;
    const sgfp4_status s = sgfp4_matvec_plan_create(w.t, &plan);
    y = s == SGFP4_OK && n <= SIZE_MAX / sizeof *y / rows ? malloc((size_t)(n * rows) * sizeof *y)
                                                          : NULL;
    if (!y) {
        cli_error(a->command, "out of memory for the %llux%llu product of %llu vectors",
                  (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)n);
        goto done;
    }
    const double t0 = tool_now();
    if (a->vulkan ? !cli_vulkan_matvec(a->command, w.t, rows, cols, a->class_b,
                                       a->given[KEY_FAST], x, n, y)
                  : !products(a, plan, rows, cols, x, n, y))
        goto done;
    const double seconds = tool_now() - t0;
    if (!write_output(a, y, n, rows))
        goto done;
    cli_verbose(a->command, "%s: %llux%llu times %llu vector%s (class %c, %s) by %s on %u "
                "threads in %.3f s, %llu call%s (plan %zu bytes)",
                a->in, (unsigned long long)rows, (unsigned long long)cols,
                (unsigned long long)n, n == 1 ? "" : "s", a->class_b ? 'B' : 'A',
                a->given[KEY_FAST] ? "D9 fast products" : "D8 products", kernels,
                a->threads, seconds,
                (unsigned long long)((n + SGFP4_MATVEC_MAX_BATCH - 1) / SGFP4_MATVEC_MAX_BATCH),
                n > SGFP4_MATVEC_MAX_BATCH ? "s" : "", sgfp4_matvec_plan_bytes(plan));
    rc = CLI_EXIT_OK;
done:
    sgfp4_matvec_plan_free(plan);
    free(x);
    free(y);
    weights_close(&w);
    return rc;
}

const cli_command cli_matvec = {
    "matvec", "multiply compressed weights by activation vectors (DECISIONS D8)",
    "usage: sgfp4 matvec IN --shape OxI [--profile v1|v2] --x X.npy|X.f32 [--batch N]\n"
    "                    [--class a|b] [--backend B] [--threads N] [--fast] [-f]\n"
    "                    -o Y.npy|Y.f32\n"
    "       sgfp4 matvec MODEL.sgfp4.safetensors[.zst] --tensor NAME --x X [options] -o Y\n"
    "\n"
    "Computes Y[n] = W X[n] straight from the compressed weights W (a container, or a quantized\n"
    "model's tensor), bit for bit as DECISIONS D8 defines it: the same bytes with every backend\n"
    "and thread count. X is a NumPy .npy file of N vectors of I values ([N][I], or [I] for one\n"
    "vector; float32 or float16) or raw little-endian float32 [N][I] (N = the file's size /\n"
    "4I); I = W's columns, N any number (16 a call, a longer batch split: the same bits). Y is\n"
    "[N][O] float32: .npy when its name ends in .npy, else raw little-endian. Class A (the\n"
    "default) first quantizes each 64 columns of X to 8-bit integers with a power-of-two scale\n"
    "(it refuses NaN and infinity); Class B multiplies the float activations as they are.\n"
    "--fast (--backend vulkan only) asks for the fast products of DECISIONS D9 instead: the\n"
    "same activations and weights, summed in binary32 with fused multiply-adds, within a\n"
    "stated bound of the D8 result and the same bits run to run, but not bit-exact.\n",
    options, run};
