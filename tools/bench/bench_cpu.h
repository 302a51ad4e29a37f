/* What the CPU benchmarks of `sgfp4 bench` share (tools/bench): the container they time,
 * and the operations besides decode (cmd_bench.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_BENCH_CPU_H
#define SGFP4_BENCH_CPU_H

#include "cli.h"

/* The container a CPU benchmark times: FILE (with --shape) or, without one, a synthetic
 * container of --shape (default 4096x4096): an LLM-like tensor encoded at --bpw, or random
 * codes near it (--codes random), for --seed (bench_input.c). */
typedef struct bench_input {
    cli_container c;  /* c.tensor: the open tensor */
    uint8_t *owned;   /* the synthetic container's bytes */
    const void *data; /* the container's bytes */
    size_t size;
    sgfp4_profile profile; /* resolved */
    char source[300];      /* what it is, for the report */
} bench_input;
/* Checks --shape and --bpw, gives *a its default shape and opens the container. Returns -1
 * when *in is open, else the exit code (the error is reported; nothing to close). */
int bench_input_open(cli_args *a, bench_input *in);
void bench_input_close(bench_input *in);

/* sgfp4 bench --op open (cmd_bench_open.c): sgfp4_tensor_open (every acceptance rule)
 * against a decode of the same container. */
int bench_open(const cli_args *a, const bench_input *in);
/* sgfp4 bench --op matvec (bench_matvec.c): the matrix-vector products against a plain read
 * of the same container bytes, in the same run. */
int bench_matvec(const cli_args *a);

#endif
