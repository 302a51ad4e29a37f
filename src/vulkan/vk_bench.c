/* Benchmark hooks (experimental API): an operation and its copy ceiling timed back to back in
 * one submission. A benchmark made of synchronous calls leaves the GPU idle between them,
 * and the driver then lowers its clock, which slows memory-bound kernels and copies alike
 * (docs/benchmarks.md); a burst keeps the GPU busy, and each round's operation and copy see
 * the same clock.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "vulkan/vk_internal.h"
#include "common/diag.h"

/* Runs `rounds` rounds of (op[r % n_ops], then the copy if any) and splits the times. */
static sgfp4_status burst(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *ops, unsigned n_ops,
                          const sgfp4_vk_dispatch *copy, unsigned rounds, double *op_seconds,
                          double *copy_seconds, sgfp4_diag *diag)
{
    const unsigned per_round = copy ? 2 : 1;
    if (rounds == 0 || rounds * per_round > SGFP4_VK_BURST_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "rounds must be 1..%d",
                          SGFP4_VK_BURST_MAX / 2);
    sgfp4_vk_dispatch *seq = malloc(sizeof *seq * rounds * per_round);
    double *seconds = malloc(sizeof *seconds * rounds * per_round);
    sgfp4_status s = SGFP4_OK;
    if (!seq || !seconds)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (unsigned r = 0; s == SGFP4_OK && r < rounds; r++) {
        seq[r * per_round] = ops[r % n_ops];
        if (copy)
            seq[r * per_round + 1] = *copy;
    }
    if (s == SGFP4_OK)
        s = sgfp4_vk_run_burst(ctx, seq, rounds * per_round, 1, seconds, diag);
    for (unsigned r = 0; s == SGFP4_OK && r < rounds; r++) {
        op_seconds[r] = seconds[r * per_round];
        if (copy && copy_seconds)
            copy_seconds[r] = seconds[r * per_round + 1];
    }
    free(seq);
    free(seconds);
    return s;
}

sgfp4_status sgfp4_vk_bench_decode_burst(sgfp4_vk_context *ctx, const sgfp4_vk_tensor *tensor,
                                         sgfp4_dtype dtype, VkBuffer dst, VkBuffer copy_src,
                                         VkBuffer copy_dst, uint64_t copy_bytes,
                                         unsigned rounds, double *decode_seconds,
                                         double *copy_seconds, sgfp4_diag *diag)
{
    if (!ctx || !tensor || dst == VK_NULL_HANDLE || !decode_seconds ||
        sgfp4_dtype_size(dtype) == 0 || (copy_bytes && !copy_seconds))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_bench_decode_burst: NULL argument or unknown dtype");
    sgfp4_vk_dispatch op, copy;
    sgfp4_status s = sgfp4_vk_prepare_decode(ctx, tensor, dtype, dst, 0, tensor->cols,
                                             VK_NULL_HANDLE, &op, diag);
    if (s == SGFP4_OK && copy_bytes)
        s = sgfp4_vk_prepare_copy(ctx, copy_src, 0, copy_dst, 0, copy_bytes, &copy, diag);
    if (s != SGFP4_OK)
        return s;
    return burst(ctx, &op, 1, copy_bytes ? &copy : NULL, rounds, decode_seconds, copy_seconds,
                 diag);
}

sgfp4_status sgfp4_vk_bench_gemv_burst(sgfp4_vk_context *ctx, const VkBuffer *w,
                                       unsigned n_weights, VkBuffer x, VkBuffer y,
                                       uint64_t rows, uint64_t cols, unsigned batch,
                                       VkBuffer copy_src, VkBuffer copy_dst, uint64_t copy_bytes,
                                       unsigned rounds, double *gemv_seconds,
                                       double *copy_seconds, sgfp4_diag *diag)
{
    if (!ctx || !w || n_weights < 1 || n_weights > SGFP4_VK_GEMV_SETS || !gemv_seconds ||
        (copy_bytes && !copy_seconds))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_bench_gemv_burst: NULL argument, or not 1..%d weights",
                          SGFP4_VK_GEMV_SETS);
    sgfp4_vk_dispatch ops[SGFP4_VK_GEMV_SETS], copy;
    sgfp4_status s = SGFP4_OK;
    for (unsigned i = 0; s == SGFP4_OK && i < n_weights; i++)
        s = sgfp4_vk_prepare_gemv(ctx, w[i], 0, x, 0, y, 0, rows, cols, batch, i == 0, &ops[i],
                                  diag);
    if (s == SGFP4_OK && copy_bytes)
        s = sgfp4_vk_prepare_copy(ctx, copy_src, 0, copy_dst, 0, copy_bytes, &copy, diag);
    if (s != SGFP4_OK)
        return s;
    return burst(ctx, ops, n_weights, copy_bytes ? &copy : NULL, rounds, gemv_seconds,
                 copy_seconds, diag);
}

/* How a benchmark runs its dispatches: burst or stream (same arguments). */
typedef sgfp4_status (*run_fn)(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *ops,
                               unsigned n_ops, const sgfp4_vk_dispatch *copy, unsigned rounds,
                               double *op_seconds, double *copy_seconds, sgfp4_diag *diag);

/* The prepared operations' benchmark `fn`: checks the arguments (every operation of ctx),
 * takes their dispatches and, where copy_bytes is not 0, the copy's, and runs them by `run`. */
static sgfp4_status run_ops(sgfp4_vk_context *ctx, sgfp4_vk_op *const *ops, unsigned n_ops,
                            VkBuffer copy_src, VkBuffer copy_dst, uint64_t copy_bytes,
                            unsigned rounds, double *op_seconds, double *copy_seconds,
                            const char *fn, run_fn run, sgfp4_diag *diag)
{
    enum { MAX_OPS = 64 };
    if (!ctx || !ops || n_ops < 1 || n_ops > MAX_OPS || !op_seconds || rounds == 0 ||
        (copy_bytes && !copy_seconds))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "%s: NULL argument, no rounds, or not 1..%d operations", fn, MAX_OPS);
    sgfp4_vk_dispatch d[MAX_OPS], copy;
    for (unsigned i = 0; i < n_ops; i++) {
        if (!ops[i] || ops[i]->ctx != ctx)
            return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                              "%s: operation %u is not of this context", fn, i);
        d[i] = ops[i]->dispatch;
    }
    if (copy_bytes) {
        const sgfp4_status s =
            sgfp4_vk_prepare_copy(ctx, copy_src, 0, copy_dst, 0, copy_bytes, &copy, diag);
        if (s != SGFP4_OK)
            return s;
    }
    return run(ctx, d, n_ops, copy_bytes ? &copy : NULL, rounds, op_seconds, copy_seconds, diag);
}

sgfp4_status sgfp4_vk_bench_op_burst(sgfp4_vk_context *ctx, sgfp4_vk_op *const *ops,
                                     unsigned n_ops, VkBuffer copy_src, VkBuffer copy_dst,
                                     uint64_t copy_bytes, unsigned rounds, double *op_seconds,
                                     double *copy_seconds, sgfp4_diag *diag)
{
    return run_ops(ctx, ops, n_ops, copy_src, copy_dst, copy_bytes, rounds, op_seconds,
                   copy_seconds, "sgfp4_vk_bench_op_burst", burst, diag);
}

/* Runs `rounds` rounds of (the n_ops dispatches back to back, then the copy if any) and gives
 * each round's time per dispatch. */
static sgfp4_status stream(sgfp4_vk_context *ctx, const sgfp4_vk_dispatch *ops, unsigned n_ops,
                           const sgfp4_vk_dispatch *copy, unsigned rounds, double *op_seconds,
                           double *copy_seconds, sgfp4_diag *diag)
{
    const unsigned per_round = copy ? 2 : 1;
    double *seconds = malloc(sizeof *seconds * rounds * per_round);
    sgfp4_status s = seconds ? sgfp4_vk_run_stream(ctx, ops, n_ops, copy, rounds, seconds, diag)
                             : sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (unsigned r = 0; s == SGFP4_OK && r < rounds; r++) {
        op_seconds[r] = seconds[r * per_round] / n_ops;
        if (copy && copy_seconds)
            copy_seconds[r] = seconds[r * per_round + 1];
    }
    free(seconds);
    return s;
}

sgfp4_status sgfp4_vk_bench_gemv_stream(sgfp4_vk_context *ctx, const VkBuffer *w,
                                        unsigned n_weights, VkBuffer x, VkBuffer y,
                                        uint64_t y_step, uint64_t rows, uint64_t cols,
                                        unsigned batch, VkBuffer copy_src, VkBuffer copy_dst,
                                        uint64_t copy_bytes, unsigned rounds,
                                        double *gemv_seconds, double *copy_seconds,
                                        sgfp4_diag *diag)
{
    if (!ctx || !w || n_weights < 1 || n_weights > SGFP4_VK_GEMV_SETS || !gemv_seconds ||
        rounds == 0 || (copy_bytes && !copy_seconds))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_bench_gemv_stream: NULL argument, no rounds, or not 1..%d "
                          "weights",
                          SGFP4_VK_GEMV_SETS);
    sgfp4_vk_dispatch ops[SGFP4_VK_GEMV_SETS], copy;
    sgfp4_status s = SGFP4_OK;
    for (unsigned i = 0; s == SGFP4_OK && i < n_weights; i++)
        s = sgfp4_vk_prepare_gemv(ctx, w[i], 0, x, 0, y, i * y_step, rows, cols, batch, i == 0,
                                  &ops[i], diag);
    if (s == SGFP4_OK && copy_bytes)
        s = sgfp4_vk_prepare_copy(ctx, copy_src, 0, copy_dst, 0, copy_bytes, &copy, diag);
    if (s != SGFP4_OK)
        return s;
    return stream(ctx, ops, n_weights, copy_bytes ? &copy : NULL, rounds, gemv_seconds,
                  copy_seconds, diag);
}

sgfp4_status sgfp4_vk_bench_op_stream(sgfp4_vk_context *ctx, sgfp4_vk_op *const *ops,
                                      unsigned n_ops, VkBuffer copy_src, VkBuffer copy_dst,
                                      uint64_t copy_bytes, unsigned rounds, double *op_seconds,
                                      double *copy_seconds, sgfp4_diag *diag)
{
    return run_ops(ctx, ops, n_ops, copy_src, copy_dst, copy_bytes, rounds, op_seconds,
                   copy_seconds, "sgfp4_vk_bench_op_stream", stream, diag);
}

sgfp4_status sgfp4_vk_bench_read_create(sgfp4_vk_context *ctx, VkBuffer buffer,
                                        VkDeviceSize offset, uint64_t bytes, sgfp4_vk_op **out,
                                        sgfp4_diag *diag)
{
    if (out)
        *out = NULL;
    if (!ctx || !out || buffer == VK_NULL_HANDLE || bytes == 0 || offset % 16 != 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "sgfp4_vk_bench_read_create: NULL argument, no bytes, or an offset "
                          "that is not a multiple of 16");
    sgfp4_vk_op *op;
    sgfp4_status s = sgfp4_vk_op_begin(ctx, SGFP4_VK_OP_READ, 3, &op, diag);
    if (s != SGFP4_OK)
        return s;
    s = sgfp4_vk_buffer_init(ctx, 16, 0, &op->scratch, diag); /* the sink */
    if (s == SGFP4_OK)
        s = sgfp4_vk_prepare_read(ctx, buffer, offset, bytes, op->scratch.buffer, op->pool,
                                  &op->dispatch, diag);
    if (s != SGFP4_OK) {
        sgfp4_vk_op_free(op);
        return s;
    }
    *out = op;
    return SGFP4_OK;
}
