/* The matvec paths against the scalar oracle, for tests: every kernel set the machine runs
 * (matvec/matvec_dispatch.c lists them; a new set is checked as soon as it is listed), thread
 * counts, row ranges cut into pieces that are computed by separate calls, result strides
 * wider than the rows (the gaps checked untouched), both classes, every batch size; and each
 * set's quantizer against the reference quantizer. Plain C and libc only, so that a
 * standalone cross check (qemu-user for another architecture) can share it with the cmocka
 * test. Deterministic for a seed.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_MATVEC_PATHS_H
#define SGFP4_TESTS_MATVEC_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "matvec/matvec_internal.h"

typedef struct matvec_rng {
    uint64_t state;
} matvec_rng;

/* A pseudo-random number in [0, n), n >= 1. */
uint64_t matvec_rng_below(matvec_rng *r, uint64_t n);

#define MATVEC_MAX_KERNEL_SETS 8
/* Every kernel set this build and CPU run, the scalar reference first; returns the count. */
unsigned matvec_kernel_sets(const sgfp4_matvec_kernels *out[MATVEC_MAX_KERNEL_SETS]);

/* The activations of one series and the oracle's results for them. */
typedef struct matvec_inputs {
    bool class_a;
    sgfp4_matvec_x x;     /* A: a q8 buffer made by sgfp4_matvec_quantize; B: floats */
    const float *oracle;  /* [batch][rows]: matvec_oracle() of x */
} matvec_inputs;

/* The scalar reference over the whole tensor on the calling thread: out[batch][rows]. */
void matvec_oracle(const sgfp4_matvec_plan *plan, bool class_a, const sgfp4_matvec_x *x,
                   float *out);

/* One series of checks: the choices to draw from, and what was compared. */
typedef struct matvec_check {
    matvec_rng rng;
    const unsigned *thread_counts; /* drawn from for each call */
    unsigned thread_count_n;
    sgfp4_thread_pool *pool; /* when set, half the calls run on it instead of their own threads */
    uint64_t calls;         /* kernel runs */
    uint64_t results;       /* floats compared */
    char message[512];      /* why the last check failed */
} matvec_check;

/* `rounds` rounds through kernel set k: each takes a random row range (the whole tensor half
 * of the time), cuts it into 1..5 pieces at random rows, and runs each piece as its own call
 * on a thread count drawn from c->thread_counts (on c->pool for half of them, where set), into a buffer whose stride leaves a guarded
 * gap after every vector's rows. Every result must equal in->oracle (NaN equal to any NaN,
 * all else bit for bit) and every gap byte stay untouched. False with c->message set at the
 * first difference or allocation failure. */
bool matvec_check_paths(matvec_check *c, const sgfp4_matvec_plan *plan,
                        const matvec_inputs *in, const sgfp4_matvec_kernels *k,
                        unsigned rounds);

/* Kernel set k's quantizer against the scalar reference on one vector of `cols` elements
 * of dtype (F32 / F16; finite): the q and d bytes identical. */
bool matvec_check_quantizer(matvec_check *c, const sgfp4_matvec_kernels *k, const void *x,
                            sgfp4_dtype dtype, uint64_t cols);

#endif
