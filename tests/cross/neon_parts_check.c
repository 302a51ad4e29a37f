/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cross/neon_parts_check.h"
#include "support/decode_paths.h"
#include "decode/kernels.h"
#include "datagen/generator.h"

#ifdef SGFP4_HAVE_NEON_KERNELS

/* Every finite half through the NEON header conversion. */
/* `count` finite floats (bit patterns) through the NEON row writer as `dtype`, against the
 * library's scalar rounding (what the oracle's f16 / bf16 output uses). */
static bool check_rounding(const uint32_t *bits, size_t count, sgfp4_dtype dtype,
                           char *message, size_t size)
{
    float *in = malloc(count * sizeof *in);
    uint16_t *got = malloc(count * sizeof *got);
    if (!in || !got) {
        snprintf(message, size, "out of memory for %zu rounding checks", count);
        free(in);
        free(got);
        return false;
    }
    memcpy(in, bits, count * sizeof *in); /* the patterns as floats */
    sgfp4_neon_floats_to_16bit(in, count, dtype, got);
    bool ok = true;
    for (size_t i = 0; ok && i < count; i++) {
        const uint16_t want = dtype == SGFP4_DTYPE_F16 ? sgfp4_float_to_half(in[i])
                                                       : sgfp4_float_to_bf16(in[i]);
        if (got[i] != want) {
            snprintf(message, size, "neon f32 0x%08x -> %s: got 0x%04x, want 0x%04x", bits[i],
                     dtype == SGFP4_DTYPE_F16 ? "f16" : "bf16", got[i], want);
            ok = false;
        }
    }
    free(in);
    free(got);
    return ok;
}

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A random finite float bit pattern; one in 16 has an exponent near the half subnormals. */
static uint32_t random_finite(uint64_t *state)
{
    for (;;) {
        uint32_t b = (uint32_t)splitmix(state);
        if ((b & 0xFu) == 0) /* exponents 96..127: around and below the half subnormals */
            b = (b & 0x807FFFFFu) | ((96u + ((b >> 4) & 31u)) << 23);
        if ((b & 0x7F800000u) != 0x7F800000u)
            return b;
    }
}

#define RANDOM_PATTERNS (1u << 20)

/* f16: every finite half value, each midpoint between neighbours (the ties, the largest
 * one, 65520, rounding to infinity) and the floats just either side, both signs; then
 * random patterns. bf16: ties and near-ties under random upper halves, then random ones. */
static bool check_output_rounding(char *message, size_t size)
{
    const size_t f16_count = 2u * 0x7C00u * 4u + RANDOM_PATTERNS;
    uint32_t *bits = malloc(f16_count * sizeof *bits);
    if (!bits) {
        snprintf(message, size, "out of memory for the rounding patterns");
        return false;
    }
    size_t n = 0;
    for (uint32_t h = 0; h < 0x7C00u; h++) {
        const float a = sgfp4_half_to_float((uint16_t)h);
        const float b = h + 1 < 0x7C00u ? sgfp4_half_to_float((uint16_t)(h + 1)) : 65536.0f;
        const uint32_t mid = sgfp4_float_to_bits((a + b) / 2); /* exact: 12 significant bits */
        const uint32_t four[4] = {sgfp4_float_to_bits(a), mid - 1, mid, mid + 1};
        for (unsigned k = 0; k < 4; k++) {
            bits[n++] = four[k];
            bits[n++] = four[k] | 0x80000000u;
        }
    }
    uint64_t state = 0x5EED;
    while (n < f16_count)
        bits[n++] = random_finite(&state);
    bool ok = check_rounding(bits, n, SGFP4_DTYPE_F16, message, size);
    static const uint32_t low[6] = {0, 1, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
    n = 0;
    while (ok && n + 6 <= f16_count / 2) {
        const uint32_t high = random_finite(&state) & 0xFFFF0000u; /* still finite */
        for (unsigned k = 0; k < 6; k++)
            bits[n++] = high | low[k];
    }
    while (ok && n < f16_count)
        bits[n++] = random_finite(&state);
    ok = ok && check_rounding(bits, n, SGFP4_DTYPE_BF16, message, size);
    free(bits);
    return ok;
}

static bool check_listing(char *message, size_t size)
{
    for (unsigned i = 0; i < 12; i++) {
        gen_params p = gen_shape_params(i % 4 == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2, 256, 320);
        p.target_bpw = i % 3 == 1 ? 2.5 : 0;
        p.halves = GEN_HALVES_ANY;
        size_t bytes;
        uint8_t *data = gen_container_bytes(&p, 700 + i, &bytes);
        sgfp4_tensor *t = NULL;
        if (!data ||
            sgfp4_tensor_open(data, bytes, p.profile, p.rows, p.cols, &t, NULL, NULL) != SGFP4_OK) {
            snprintf(message, size, "listing check: container %u did not open", i);
            free(data);
            return false;
        }
        static sgfp4_leaf_list list;
        bool ok = true;
        for (uint64_t b = 0; ok && b < t->blocks; b++)
            ok = decode_check_leaf_list(t, b, &list, sgfp4_neon_block_leaves(t, b, &list),
                                        message, size);
        sgfp4_tensor_close(t);
        free(data);
        if (!ok)
            return false;
    }
    return true;
}

bool neon_parts_check(char *message, size_t size)
{
    return decode_check_halves(sgfp4_neon_halves_to_floats, "neon", message, size) && check_output_rounding(message, size) &&
           check_listing(message, size);
}

#endif
