/* The one generator of test data: random valid SGFP4 containers for the tests (the
 * differential corpus of tests/conformance/decodecorpus.c, the fast-path, cross-architecture and Vulkan
 * checks) and the benchmarks (`sgfp4 bench --codes random`, `sgfp4 bench --backend vulkan`),
 * and LLM-like weight matrices (datagen/llm_weights.c). It is an INDEPENDENT description,
 * writer and expected-value model of the format: nothing here includes or calls src/; the
 * layouts are written from the spec's words (chapter 22 sections 22.3-22.8, DECISIONS D2-D5),
 * and the expected float32 tensor is computed from the intended values (fp16 bits, code
 * symbols) in double and rounded once (D1), never by decoding the written bytes.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_GENERATOR_H
#define SGFP4_TESTS_GENERATOR_H

#include <stddef.h>
#include <stdint.h>

/* ---- deterministic random numbers (splitmix64) ---- */
typedef struct gen_rng {
    uint64_t state;
} gen_rng;
uint64_t gen_next(gen_rng *r);
/* Uniform in [0, n); n >= 1. */
uint32_t gen_below(gen_rng *r, uint32_t n);
/* True with probability num/den. */
int gen_chance(gen_rng *r, uint32_t num, uint32_t den);

/* ---- the intended content ---- */
typedef struct gen_leaf {
    uint8_t y, x, size, mode; /* position in the macroblock, edge, 0 FP4 / 1 T158 */
    uint16_t scale, bias;     /* fp16 bits as intended (v2 stores bias & 0xFFF0) */
    uint32_t first_symbol;    /* index of the leaf's first symbol in the block's sym[] */
} gen_leaf;

typedef struct gen_block {
    /* v2 */
    unsigned layout;       /* 0..5 */
    uint32_t split[3];     /* MIXED split map */
    unsigned split_bits;   /* bits the map uses */
    unsigned gap;          /* bytes (multiple of 16) left before this record */
    unsigned leaves_count;
    gen_leaf leaves[256];
    uint8_t sym[4096];     /* code symbols (nibble or 2-bit), leaf after leaf, row-major */
    /* v1 */
    unsigned hint;         /* ERROR_HINT flag */
    int shares;            /* index of the block whose payload this one reads, or -1 */
    uint32_t base;         /* payload byte offset in the codes blob */
    /* where the writer put things (absolute byte offsets) */
    uint64_t record_at, headers_at, headers_end, payloads_at;
    uint64_t payload_at[256];
} gen_block;

typedef struct gen_container {
    int profile;           /* 1 = v1, 2 = v2 (the values of sgfp4_profile) */
    uint64_t rows, cols, tiles_y, tiles_x, blocks;
    gen_block *block;   /* [blocks] */
    uint8_t *data;         /* the container bytes */
    size_t size;
    uint64_t record_base;  /* v2: align16(16 + 4B) */
} gen_container;

/* ---- what to generate ---- */

/* Which v2 layouts the records take. */
typedef enum gen_layouts {
    GEN_LAYOUTS_ALL = 0,    /* every layout, MIXED the most often, MIXED trees of every depth */
    GEN_LAYOUTS_UNIFORM_64, /* UNIFORM_64 records only */
    GEN_LAYOUTS_MIXED_DEEP  /* MIXED records split deep: mostly 4x4 and 8x8 leaves */
} gen_layouts;

/* How scales and biases are drawn. */
typedef enum gen_halves {
    GEN_HALVES_EDGES = 0, /* often zero, -0 (scales), subnormal, 65504, any finite value */
    GEN_HALVES_LLM,       /* magnitudes of trained weights: 2^-9 .. 2^-3 */
    GEN_HALVES_ANY        /* any finite fp16 value, a quarter subnormal or zero */
} gen_halves;

typedef struct gen_params {
    int profile;          /* 1 = v1, 2 = v2 (the values of sgfp4_profile) */
    uint64_t rows, cols;  /* 0: a random shape (edge-heavy: tiny, one past a tile, ...) */
    gen_layouts layouts;
    gen_halves halves;
    /* v2: > 0 chooses, block by block, among 8 random candidate records the one that keeps
     * the running size closest to this many bits per weight (a benchmark-like container). */
    double target_bpw;
    /* The format's corners: reserved T158 symbols (in a quarter of the containers), gaps
     * between v2 records (a third), v1 blocks sharing an earlier block's payload, noise in
     * unreferenced v1 payload slots. Off for benchmarks. */
    int corners;
} gen_params;

/* Random shape, every layout, edge-case halves, the corners: the differential corpus. */
gen_params gen_corpus_params(int profile);
/* A given shape with every layout, edge-case halves and the corners. */
gen_params gen_shape_params(int profile, uint64_t rows, uint64_t cols);

/* Draws the content (with `r`) and writes the bytes. Returns 0, or -1 when out of memory or
 * for a shape beyond 2^32 blocks. */
int gen_generate(gen_container *c, gen_rng *r, const gen_params *p);
void gen_free(gen_container *c);

/* A malloc'ed rows x cols float32 matrix that looks like an LLM weight matrix (llm_weights.c):
 * heavy-tailed values (Student t, 4 degrees of freedom), a log-normal scale per row, and a
 * few outlier columns (1 in 200, 8x larger). Deterministic for a seed; NULL if out of memory.
 * What `sgfp4 bench` encodes by default. */
float *gen_llm_weights(uint64_t rows, uint64_t cols, uint64_t seed);

/* The bytes only, of the container of seed `seed` (malloc'ed; free() them); NULL if out of
 * memory. */
uint8_t *gen_container_bytes(const gen_params *p, uint64_t seed, size_t *size);

/* The expected row-major float32 (rows x cols) tensor: w = fl32(S*q + B) from the intended
 * values. out must hold rows * cols floats. */
void gen_expected(const gen_container *c, float *out);

/* Count of reserved T158 symbols (0b11) the content holds, counted per block as a decoder
 * walking every block sees them. */
uint64_t gen_reserved_symbols(const gen_container *c);

#endif
