/* The random container corpus of tests/decodecorpus.c: an INDEPENDENT description, writer
 * and expected-value model of SGFP4 containers. Nothing here includes or calls src/: the
 * layouts are written from the spec's words (chapter 22 §22.3-22.8, DECISIONS D2-D5), and
 * the expected float32 tensor is computed from the intended values (fp16 bits, code symbols)
 * in double and rounded once (D1), never by decoding the written bytes.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_CORPUS_H
#define SGFP4_TESTS_CORPUS_H

#include <stddef.h>
#include <stdint.h>

/* ---- deterministic random numbers (splitmix64) ---- */
typedef struct corpus_rng {
    uint64_t state;
} corpus_rng;
uint64_t corpus_next(corpus_rng *r);
/* Uniform in [0, n); n >= 1. */
uint32_t corpus_below(corpus_rng *r, uint32_t n);
/* True with probability num/den. */
int corpus_chance(corpus_rng *r, uint32_t num, uint32_t den);

/* ---- the intended content ---- */
typedef struct corpus_leaf {
    uint8_t y, x, size, mode; /* position in the macroblock, edge, 0 FP4 / 1 T158 */
    uint16_t scale, bias;     /* fp16 bits as intended (v2 stores bias & 0xFFF0) */
    uint32_t first_symbol;    /* index of the leaf's first symbol in the block's sym[] */
} corpus_leaf;

typedef struct corpus_block {
    /* v2 */
    unsigned layout;       /* 0..5 */
    uint32_t split[3];     /* MIXED split map */
    unsigned split_bits;   /* bits the map uses */
    unsigned gap;          /* bytes (multiple of 16) left before this record */
    unsigned leaves_count;
    corpus_leaf leaves[256];
    uint8_t sym[4096];     /* code symbols (nibble or 2-bit), leaf after leaf, row-major */
    /* v1 */
    unsigned hint;         /* ERROR_HINT flag */
    int shares;            /* index of the block whose payload this one reads, or -1 */
    uint32_t base;         /* payload byte offset in the codes blob */
    /* where the writer put things (absolute byte offsets) */
    uint64_t record_at, headers_at, headers_end, payloads_at;
    uint64_t payload_at[256];
} corpus_block;

typedef struct corpus_container {
    int profile;           /* 1 = v1, 2 = v2 (the values of sgfp4_profile) */
    uint64_t rows, cols, tiles_y, tiles_x, blocks;
    corpus_block *block;   /* [blocks] */
    uint8_t *data;         /* the container bytes */
    size_t size;
    uint64_t record_base;  /* v2: align16(16 + 4B) */
} corpus_container;

/* Chooses a random shape and random valid content (every layout, random MIXED trees, both
 * modes, reserved T158 symbols, subnormal / zero / -0 / 65504 scales and biases, shared v1
 * payloads with noise in unreferenced slots, gaps between v2 records) and writes the bytes.
 * profile: 1 or 2. Returns 0, or -1 when out of memory. */
int corpus_generate(corpus_container *c, corpus_rng *r, int profile);
void corpus_free(corpus_container *c);

/* The expected row-major float32 (rows x cols) tensor: w = fl32(S*q + B) from the intended
 * values. out must hold rows * cols floats. */
void corpus_expected(const corpus_container *c, float *out);

/* Count of reserved T158 symbols (0b11) the content holds, counted per block as a decoder
 * walking every block sees them. */
uint64_t corpus_reserved_symbols(const corpus_container *c);

#endif
