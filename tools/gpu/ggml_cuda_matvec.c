/* ggml's CUDA mat-vec, the peer of sgfp4's Vulkan products: ggml_mul_mat of Q4_0 / Q4_K /
 * F16 weights by F32 activations on the CUDA backend, activation quantization included (the
 * op a llama.cpp runtime runs). tools/gpu/gpu_peers.sh builds it against a ggml
 * snapshot outside this repository. Weights: Gaussian values quantized by ggml itself. Timed
 * two ways:
 *  stream:   a graph of K independent mul_mat nodes over K weight copies (together more than
 *            512 MiB, so no copy stays in L2), computed as one graph (ggml replays it as a
 *            CUDA graph); time / K per product.
 *  isolated: a one-node graph computed and synchronized per call (host wall clock: what a
 *            runtime that submits one product at a time pays), rotating over the copies.
 * Median, min and max of ROUNDS (argv[1], default 30). One JSON line per type, shape, batch.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cuda.h"
#include "ggml.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static uint64_t rng = 88172645463325252ull;
static float gauss(void)
{
    double u1, u2;
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; u1 = ((rng >> 11) + 0.5) / 9007199254740992.0;
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; u2 = ((rng >> 11) + 0.5) / 9007199254740992.0;
    return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 30;
    const int shapes[][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {8192, 8192}};
    const enum ggml_type types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_F16};
    const int batches[] = {1, 4, 8};
    ggml_backend_t be = ggml_backend_cuda_init(0);
    if (!be) { fprintf(stderr, "no CUDA backend\n"); return 1; }
    char desc[256];
    ggml_backend_cuda_get_device_description(0, desc, sizeof desc);
    fprintf(stderr, "device: %s\n", desc);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int rows = shapes[s][0], cols = shapes[s][1];
        float *w = malloc((size_t)rows * cols * sizeof *w);
        for (size_t i = 0; i < (size_t)rows * cols; i++) w[i] = gauss() * 0.02f;
        for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
            const enum ggml_type type = types[t];
            const size_t wbytes = ggml_row_size(type, cols) * rows;
            void *q = malloc(wbytes);
            if (type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(w, q, (int64_t)rows * cols);
            else ggml_quantize_chunk(type, w, q, 0, rows, cols, NULL);
            int copies = (int)((512u << 20) / wbytes) + 1;
            if (copies < 4) copies = 4;
            if (copies > 64) copies = 64;
            struct ggml_init_params wp = {ggml_tensor_overhead() * (copies + 1), NULL, true};
            struct ggml_context *wctx = ggml_init(wp);
            struct ggml_tensor **wt = malloc(copies * sizeof *wt);
            for (int k = 0; k < copies; k++) wt[k] = ggml_new_tensor_2d(wctx, type, cols, rows);
            ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, be);
            for (int k = 0; k < copies; k++) ggml_backend_tensor_set(wt[k], q, 0, wbytes);
            for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
                const int batch = batches[b];
                /* the stream graph: copies nodes; the isolated graphs: one node each */
                struct ggml_init_params gp = {ggml_tensor_overhead() * (3 * copies + 4) +
                                                  ggml_graph_overhead() * (copies + 1),
                                              NULL, true};
                struct ggml_context *ctx = ggml_init(gp);
                struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cols, batch);
                struct ggml_cgraph *gs = ggml_new_graph(ctx);
                struct ggml_cgraph **gi = malloc(copies * sizeof *gi);
                for (int k = 0; k < copies; k++) {
                    struct ggml_tensor *y = ggml_mul_mat(ctx, wt[k], x);
                    ggml_build_forward_expand(gs, y);
                    gi[k] = ggml_new_graph(ctx);
                    ggml_build_forward_expand(gi[k], y);
                }
                ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors(ctx, be);
                float *xv = malloc((size_t)cols * batch * sizeof *xv);
                for (int i = 0; i < cols * batch; i++) xv[i] = gauss();
                ggml_backend_tensor_set(x, xv, 0, ggml_nbytes(x));
                double *ts = malloc(rounds * sizeof *ts), *ti = malloc(rounds * sizeof *ti);
                for (int r = -3; r < rounds; r++) { /* 3 warm-up rounds (graph capture) */
                    double t0 = now();
                    if (ggml_backend_graph_compute(be, gs) != GGML_STATUS_SUCCESS) return 2;
                    double t1 = now();
                    if (r >= 0) ts[r] = (t1 - t0) / copies;
                }
                for (int r = -3; r < rounds; r++) {
                    const int k = (r + 3) % copies;
                    double t0 = now();
                    if (ggml_backend_graph_compute(be, gi[k]) != GGML_STATUS_SUCCESS) return 2;
                    double t1 = now();
                    if (r >= 0) ti[r] = t1 - t0;
                }
                qsort(ts, rounds, sizeof *ts, cmpd);
                qsort(ti, rounds, sizeof *ti, cmpd);
                printf("{\"peer\":\"ggml-cuda\",\"type\":\"%s\",\"rows\":%d,\"cols\":%d,\"batch\":%d,"
                       "\"bytes\":%zu,\"copies\":%d,\"stream_us\":%.3f,\"stream_min_us\":%.3f,"
                       "\"stream_max_us\":%.3f,\"isolated_us\":%.3f,\"isolated_min_us\":%.3f,"
                       "\"isolated_max_us\":%.3f}\n",
                       ggml_type_name(type), rows, cols, batch, wbytes, copies,
                       ts[rounds / 2] * 1e6, ts[0] * 1e6, ts[rounds - 1] * 1e6,
                       ti[rounds / 2] * 1e6, ti[0] * 1e6, ti[rounds - 1] * 1e6);
                fflush(stdout);
                free(ts); free(ti); free(xv); free(gi);
                ggml_backend_buffer_free(xbuf);
                ggml_free(ctx);
            }
            ggml_backend_buffer_free(wbuf);
            ggml_free(wctx);
            free(wt); free(q);
        }
        free(w);
    }
    ggml_backend_free(be);
    return 0;
}
