/* The fast decode paths against the scalar oracle, for tests: every kernel set the machine
 * runs, row ranges and gathers (repeats allowed) through sgfp4_tiled_decode_rows/_gather,
 * some thread counts, streaming and plain stores, f32/f16/bf16, row strides wider than the
 * tensor and destinations at odd byte offsets, compared byte for byte with the oracle's
 * output, and the bytes around every output row checked untouched. Plain C and libc only,
 * so that the cmocka test (tests/decode/test_decode_fast.c) and the standalone cross check
 * (tests/cross/cross_decode_check.c) share it. Deterministic for a seed.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_DECODE_PATHS_H
#define SGFP4_TESTS_DECODE_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/kernels.h"

typedef struct decode_rng {
    uint64_t state;
} decode_rng;

/* A pseudo-random number in [0, n), n >= 1. */
unsigned decode_rng_below(decode_rng *r, unsigned n);

#define DECODE_MAX_KERNEL_SETS 4
/* Every kernel set this build and CPU run, of "generic", "neon", "avx2", "avx512" (that
 * order) into out; returns the count (at least 1: generic runs everywhere). */
unsigned decode_kernel_sets(const sgfp4_decode_kernels *out[DECODE_MAX_KERNEL_SETS]);

/* The whole tensor decoded by the oracle, packed (row stride = cols), for each dtype. */
typedef struct decode_reference {
    uint8_t *data[3];
} decode_reference;

/* False (nothing to free) if out of memory. */
bool decode_reference_make(const sgfp4_tensor *t, decode_reference *ref);
void decode_reference_free(decode_reference *ref);

/* One series of checks: the choices to draw from, and what was compared. */
typedef struct decode_check {
    decode_rng rng;
    const unsigned *thread_counts; /* drawn from for each decode */
    unsigned thread_count_n;
    /* what was compared so far */
    uint64_t decodes;          /* tiled decode calls */
    uint64_t rows;             /* output rows compared */
    uint64_t bytes;            /* output bytes compared */
    uint64_t f16_subnormals;   /* subnormal f16 outputs among them */
    char message[512];         /* why the last check failed */
} decode_check;

/* `rounds` rounds through kernel set k on t, ref being t's oracle output: round r decodes
 * as dtype r % 3, with streaming stores if (r % 3 + r / 3) is odd (so any 3 consecutive
 * rounds use both store kinds and any 6 every dtype with each), on a thread count drawn
 * from c->thread_counts, a random row range (the whole tensor half of the time) and then a
 * gather of 1..40 random rows. Returns false with c->message set at the first difference,
 * stray write or allocation failure. */
bool decode_check_paths(decode_check *c, const sgfp4_tensor *t, const decode_reference *ref,
                        const sgfp4_decode_kernels *k, unsigned rounds);

/* A SIMD set's fp16 -> f32 conversion (halves_to_floats(halves, count, out)) against the
 * library's exact one on every finite half. False with `message` set at the first
 * difference. */
bool decode_check_halves(void (*halves_to_floats)(const uint16_t *, size_t, float *),
                         const char *name, char *message, size_t size);

/* A SIMD listing's *list of block b (got_n its return value) against the container layer's
 * sgfp4_block_leaf_refs(): every leaf field for field in storage order, each kind's indices
 * in storage order. False with `message` set at the first difference. */
bool decode_check_leaf_list(const sgfp4_tensor *t, uint64_t b, const sgfp4_leaf_list *list,
                            unsigned got_n, char *message, size_t size);

#endif
