/* Random valid SGFP4 containers (see random_container.h).
 * SPDX-License-Identifier: MIT */
#include "random_container.h"

#include <stdlib.h>
#include <string.h>

uint32_t rc_next(rc_rng *rng)
{
    /* splitmix64 */
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* A finite fp16 value: normal, subnormal, or zero; `negative_ok` allows the sign bit. */
static uint16_t random_half(rc_rng *rng, int negative_ok)
{
    const uint32_t r = rc_next(rng);
    uint16_t h;
    switch (r % 8) {
    case 0: h = (uint16_t)(rc_next(rng) & 0x3FF); break;            /* subnormal or zero */
    case 1: h = 0; break;
    default: h = (uint16_t)(((1 + rc_next(rng) % 30) << 10) | (rc_next(rng) & 0x3FF));
    }
    if (negative_ok ? (r >> 8) & 1 : (r >> 8) % 16 == 0) /* a scale may be -0.0 only */
        h = negative_ok ? (uint16_t)(h | 0x8000) : 0x8000;
    return h;
}

static void random_bytes(rc_rng *rng, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rc_next(rng);
}

uint8_t *rc_make_v1(rc_rng *rng, uint64_t rows, uint64_t cols, size_t *size)
{
    const uint64_t B = ((rows + 63) / 64) * ((cols + 63) / 64);
    *size = (size_t)(B * 2056);
    uint8_t *d = malloc(*size);
    if (!d)
        return NULL;
    uint8_t *blob = d + 8 * B;
    random_bytes(rng, blob, (size_t)(B * 2048));
    for (uint64_t b = 0; b < B; b++) {
        /* Payload slots may be shared between blocks (D3): a T158 block zeroes its slot's
         * upper half, which an FP4 block sharing it then decodes as zeros. */
        const uint64_t slot = rc_next(rng) % 4 == 0 ? rc_next(rng) % B : b;
        const uint32_t mode = rc_next(rng) & 1u;
        if (mode)
            memset(blob + slot * 2048 + 1024, 0, 1024);
        const uint32_t header = (uint32_t)random_half(rng, 0) << 16 | random_half(rng, 1);
        const uint32_t hint = (rc_next(rng) & 1u) << 1; /* ERROR_HINT: informational */
        put32(d + 4 * b, header);
        put32(d + 4 * B + 4 * b, (uint32_t)(slot * 2048) | hint | mode);
    }
    return d;
}

/* MIXED: a random tree; appends bits (DFS) and leaf sizes. */
static void random_tree(rc_rng *rng, unsigned size, int deep, uint32_t words[3], unsigned *bit,
                        unsigned *sizes, unsigned *n)
{
    int split = 0;
    if (size >= 8) {
        const unsigned p = deep ? (size >= 16 ? 95 : 70) : (size == 64 ? 80 : 45);
        split = rc_next(rng) % 100 < p;
        if (split)
            words[*bit / 32] |= 1u << (*bit % 32);
        (*bit)++;
    }
    if (split) {
        for (int q = 0; q < 4; q++)
            random_tree(rng, size / 2, deep, words, bit, sizes, n);
    } else {
        sizes[(*n)++] = size;
    }
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

uint8_t *rc_make_v2(rc_rng *rng, uint64_t rows, uint64_t cols, rc_mix mix, size_t *size)
{
    const uint64_t B = ((rows + 63) / 64) * ((cols + 63) / 64);
    const size_t base = align16(16 + 4 * (size_t)B);
    /* Largest record: 16 + 256 headers + 256 4x4 FP4 payloads padded to 16. */
    const size_t max_record = 16 + 1024 + 256 * 16;
    uint8_t *d = calloc(1, base + (size_t)B * max_record);
    if (!d)
        return NULL;
    memcpy(d, "SGF4", 4);
    d[4] = 2;
    put32(d + 5, (uint32_t)B);
    size_t at = base;
    for (uint64_t b = 0; b < B; b++) {
        put32(d + 16 + 4 * b, (uint32_t)(at - base));
        unsigned layout;
        if (mix == RC_MIX_U64)
            layout = 0;
        else if (mix == RC_MIX_MIXED)
            layout = 4;
        else
            layout = rc_next(rng) % 6;
        unsigned sizes[256], n = 0;
        uint8_t *rec = d + at;
        put32(rec, layout);
        size_t headers = 4;
        if (layout == 4) {
            uint32_t words[3] = {0, 0, 0};
            unsigned bit = 0;
            random_tree(rng, 64, mix == RC_MIX_MIXED, words, &bit, sizes, &n);
            for (int i = 0; i < 3; i++)
                put32(rec + 4 + 4 * i, words[i]);
            headers = 16;
        } else {
            const unsigned s = layout == 5 ? 4 : 64u >> layout;
            n = (64 / s) * (64 / s);
            for (unsigned i = 0; i < n; i++)
                sizes[i] = s;
        }
        size_t payload = align16(headers + 4 * n);
        for (unsigned i = 0; i < n; i++) {
            const uint32_t mode = rc_next(rng) & 1u;
            const uint32_t bias = random_half(rng, 1) & 0xFFF0u;
            put32(rec + headers + 4 * i, (uint32_t)random_half(rng, 0) << 16 | bias | mode);
            const size_t bytes = mode ? sizes[i] * sizes[i] / 4 : sizes[i] * sizes[i] / 2;
            random_bytes(rng, rec + payload, bytes);
            payload += align16(bytes);
        }
        at += payload; /* payload is a multiple of 16 */
    }
    *size = at;
    return d;
}
