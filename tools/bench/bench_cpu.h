/* What the CPU benchmarks of `sgfp4 bench` share (tools/bench).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_BENCH_CPU_H
#define SGFP4_BENCH_CPU_H

#include "cli.h"

/* A synthetic container (malloc'ed) of shape rows x cols: random codes near --bpw
 * (--codes random), or an LLM-like tensor encoded at --bpw (cmd_bench.c). Describes it in
 * source[]; NULL after reporting an error. */
uint8_t *bench_synthetic(const cli_args *a, uint64_t rows, uint64_t cols, sgfp4_profile profile,
                         size_t *size, char *source, size_t source_size);

/* sgfp4 bench --op matvec (bench_matvec.c): the matrix-vector products against a plain read
 * of the same container bytes, in the same run. */
int bench_matvec(const cli_args *a);

#endif
