/* Synthetic SGFP4 containers with random codes: what `sgfp4 bench` decodes when it is given
 * no file, and what the decode tests compare every fast path on. Deterministic for a seed.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_SYNTH_CONTAINER_H
#define SGFP4_SYNTH_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "sgfp4.h"

typedef struct synth_params {
    sgfp4_profile profile; /* V1 or V2 */
    uint64_t rows, cols;
    uint64_t seed;
    /* v2: the bits per weight to approach by choosing, block by block, among random
     * candidate records (layouts and modes) the one that keeps the running rate closest.
     * 0: every block gets a uniformly random layout and every leaf a random mode. */
    double target_bpw;
    /* Scales and biases drawn over every finite fp16 value (subnormals and signed zeros
     * included) instead of LLM-like magnitudes. */
    int wild_halves;
} synth_params;

/* A malloc'ed valid container (free() it) with its size in *size; NULL if out of memory
 * or the parameters are invalid. */
uint8_t *synth_container(const synth_params *params, size_t *size);

/* A malloc'ed rows x cols float32 matrix that looks like an LLM weight matrix: heavy-tailed
 * values (Student t, 4 degrees of freedom), a log-normal scale per row, and a few outlier
 * columns (1 in 200, 8x larger). Deterministic for a seed; NULL if out of memory. */
float *synth_llm_weights(uint64_t rows, uint64_t cols, uint64_t seed);

#endif
