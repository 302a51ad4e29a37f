/* A small generator of random, valid SGFP4 containers for differential tests and GPU
 * benchmarks (tests/vulkan, cmd_bench_vulkan.c): random
 * layouts, split maps, modes, codes (reserved T158 symbols included), and scales and biases
 * drawn to hit fp16 subnormals, zeros and -0.0. Written from the spec, independently of the
 * library's encoder.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TEST_RANDOM_CONTAINER_H
#define SGFP4_TEST_RANDOM_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

/* Layout mixes for v2 containers. */
typedef enum rc_mix {
    RC_MIX_ANY = 0,   /* every layout, MIXED trees of every depth */
    RC_MIX_U64 = 1,   /* UNIFORM_64 records only */
    RC_MIX_MIXED = 2  /* MIXED records, split deep (mostly 4x4 and 8x8 leaves) */
} rc_mix;

typedef struct rc_rng {
    uint64_t state;
} rc_rng;
uint32_t rc_next(rc_rng *rng);

/* Builds a container of shape rows x cols; returns malloc'ed bytes and *size, or NULL. */
uint8_t *rc_make_v1(rc_rng *rng, uint64_t rows, uint64_t cols, size_t *size);
uint8_t *rc_make_v2(rc_rng *rng, uint64_t rows, uint64_t cols, rc_mix mix, size_t *size);

#endif
