/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_container.h"

typedef struct rng {
    uint64_t state;
} rng;

static uint64_t next_u64(rng *r) /* splitmix64 */
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned below(rng *r, unsigned n) { return (unsigned)(next_u64(r) % n); }

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint64_t align16(uint64_t n) { return (n + 15u) & ~(uint64_t)15u; }

/* A finite fp16 bit pattern: any (wild) or LLM-like (|x| around 2^-9..2^-3). */
static uint16_t random_half(rng *r, int wild, int non_negative)
{
    uint16_t h;
    if (wild) {
        do
            h = (uint16_t)next_u64(r);
        while (((h >> 10) & 0x1Fu) == 0x1Fu); /* not Inf / NaN */
        if (below(r, 4) == 0)                 /* plenty of subnormals and zeros */
            h &= 0x83FFu;
    } else {
        h = (uint16_t)(((6u + below(r, 7)) << 10) | below(r, 1024)); /* 2^-9 .. 2^-3 */
        h |= (uint16_t)(below(r, 2) << 15);
    }
    return non_negative ? (uint16_t)(h & 0x7FFFu) : h;
}

/* ---- v1 ---- */

static uint8_t *synth_v1(const synth_params *p, rng *r, uint64_t blocks, size_t *size)
{
    const size_t bytes = (size_t)blocks * 2056u;
    uint8_t *d = calloc(1, bytes);
    if (!d)
        return NULL;
    uint8_t *blob = d + 8 * blocks;
    for (uint64_t b = 0; b < blocks; b++) {
        const unsigned mode = p->target_bpw > 0 ? 0 : below(r, 2);
        const uint32_t header = (uint32_t)random_half(r, p->wild_halves, 1) << 16 |
                                random_half(r, p->wild_halves, 0);
        put_u32(d + 4 * b, header);
        put_u32(d + 4 * (blocks + b), (uint32_t)(b * 2048u) | mode | (below(r, 2) << 1));
        uint8_t *payload = blob + b * 2048u;
        const unsigned used = mode ? 1024u : 2048u; /* T158 words 256..511 stay zero */
        for (unsigned i = 0; i < used; i += 8) {
            const uint64_t v = next_u64(r);
            memcpy(payload + i, &v, 8);
        }
    }
    *size = bytes;
    return d;
}

/* ---- v2 ---- */

typedef struct leaf_spec {
    uint8_t size, mode;
} leaf_spec;

/* One v2 record being built: layout, split map, leaves in storage order. */
typedef struct record_spec {
    unsigned layout;
    uint32_t split[3];
    unsigned bits, count;
    leaf_spec leaves[256];
} record_spec;

/* Random quadtree in pre-order DFS (D5): nodes >= 8 take one bit (1 = split). */
static void random_tree(rng *r, record_spec *s, unsigned size, unsigned split_percent,
                        unsigned t158_percent)
{
    int split = 0;
    if (size >= 8) {
        split = below(r, 100) < split_percent;
        if (split)
            s->split[s->bits / 32] |= 1u << (s->bits % 32);
        s->bits++;
    }
    if (!split) {
        s->leaves[s->count++] = (leaf_spec){(uint8_t)size, (uint8_t)(below(r, 100) < t158_percent)};
        return;
    }
    for (int q = 0; q < 4; q++)
        random_tree(r, s, size / 2, split_percent, t158_percent);
}

static void random_record(rng *r, record_spec *s, unsigned t158_percent)
{
    memset(s, 0, sizeof *s);
    s->layout = below(r, 6);
    if (s->layout == 4) {
        random_tree(r, s, 64, 30 + below(r, 60), t158_percent);
        return;
    }
    static const unsigned edge[6] = {64, 32, 16, 8, 0, 4};
    const unsigned e = edge[s->layout];
    const int one_mode = below(r, 2); /* often the whole record in one mode */
    const unsigned mode = below(r, 100) < t158_percent;
    for (unsigned i = 0; i < (64 / e) * (64 / e); i++)
        s->leaves[s->count++] =
            (leaf_spec){(uint8_t)e, (uint8_t)(one_mode ? mode : below(r, 100) < t158_percent)};
}

static uint64_t payload_bytes(leaf_spec l)
{
    return (uint64_t)l.size * l.size / (l.mode ? 4u : 2u);
}

static uint64_t record_bytes(const record_spec *s)
{
    uint64_t n = align16(4 + (s->layout == 4 ? 12 : 0) + 4 * (uint64_t)s->count);
    for (unsigned i = 0; i < s->count; i++)
        n += align16(payload_bytes(s->leaves[i]));
    return n;
}

static void write_record(const synth_params *p, rng *r, const record_spec *s, uint8_t *rec)
{
    put_u32(rec, s->layout);
    uint8_t *h = rec + 4;
    if (s->layout == 4) {
        for (int w = 0; w < 3; w++)
            put_u32(rec + 4 + 4 * w, s->split[w]);
        h += 12;
    }
    uint8_t *payload = rec + align16((uint64_t)(h - rec) + 4 * (uint64_t)s->count);
    for (unsigned i = 0; i < s->count; i++) {
        const uint16_t bias = (uint16_t)(random_half(r, p->wild_halves, 0) & 0xFFF0u);
        put_u32(h + 4 * i, (uint32_t)random_half(r, p->wild_halves, 1) << 16 | bias |
                               s->leaves[i].mode);
        const uint64_t n = payload_bytes(s->leaves[i]);
        for (uint64_t k = 0; k < n; k++)
            payload[k] = (uint8_t)next_u64(r);
        payload += align16(n);
    }
}

static uint8_t *synth_v2(const synth_params *p, rng *r, uint64_t blocks, size_t *size)
{
    record_spec *specs = malloc(blocks * sizeof *specs);
    if (!specs)
        return NULL;
    const uint64_t base = align16(16 + 4 * blocks);
    uint64_t total = base;
    const double weights_per_block = 4096.0;
    for (uint64_t b = 0; b < blocks; b++) {
        if (p->target_bpw <= 0) {
            random_record(r, &specs[b], 50);
        } else {
            /* Among a few random candidates, keep the one whose bytes bring the running
             * rate closest to the target. */
            const unsigned t158 = p->target_bpw < 4.0 ? (unsigned)((4.2 - p->target_bpw) * 50) : 0;
            const double want = p->target_bpw * weights_per_block * (double)(b + 1) / 8.0 +
                                (double)base;
            double best = 1e300;
            for (int c = 0; c < 8; c++) {
                record_spec cand;
                do
                    random_record(r, &cand, t158 > 100 ? 100 : t158);
                while (cand.layout == 5 && below(r, 4) != 0); /* 10 bpw: rare in real files */
                const double miss = (double)(total + record_bytes(&cand)) - want;
                if (miss * miss < best) {
                    best = miss * miss;
                    specs[b] = cand;
                }
            }
        }
        total += record_bytes(&specs[b]);
    }
    uint8_t *d = calloc(1, (size_t)total);
    if (!d) {
        free(specs);
        return NULL;
    }
    memcpy(d, "SGF4\x02", 5);
    put_u32(d + 5, (uint32_t)blocks);
    uint64_t at = base;
    for (uint64_t b = 0; b < blocks; b++) {
        put_u32(d + 16 + 4 * b, (uint32_t)(at - base));
        write_record(p, r, &specs[b], d + at);
        at += record_bytes(&specs[b]);
    }
    free(specs);
    *size = (size_t)total;
    return d;
}

uint8_t *synth_container(const synth_params *p, size_t *size)
{
    if (!p || !size || p->rows == 0 || p->cols == 0)
        return NULL;
    const uint64_t blocks = ((p->rows + 63) / 64) * ((p->cols + 63) / 64);
    if (blocks > UINT32_MAX / 2056u)
        return NULL;
    rng r = {p->seed};
    return p->profile == SGFP4_PROFILE_V1 ? synth_v1(p, &r, blocks, size)
                                          : synth_v2(p, &r, blocks, size);
}

/* ---- LLM-like weights ---- */

static double uniform01(rng *r) { return ((double)(next_u64(r) >> 11) + 0.5) * 0x1p-53; }

static double normal(rng *r) /* Box-Muller; one value per call is plenty here */
{
    return sqrt(-2.0 * log(uniform01(r))) * cos(6.283185307179586 * uniform01(r));
}

float *synth_llm_weights(uint64_t rows, uint64_t cols, uint64_t seed)
{
    if (rows == 0 || cols == 0 || rows > SIZE_MAX / sizeof(float) / cols)
        return NULL;
    float *w = malloc((size_t)(rows * cols) * sizeof *w);
    uint8_t *outlier = calloc((size_t)cols, 1);
    if (!w || !outlier) {
        free(w);
        free(outlier);
        return NULL;
    }
    rng r = {seed ^ 0x5EEDu};
    for (uint64_t c = 0; c < cols; c++)
        outlier[c] = below(&r, 200) == 0;
    for (uint64_t i = 0; i < rows; i++) {
        const double row_scale = 0.02 * exp(0.3 * normal(&r));
        for (uint64_t c = 0; c < cols; c++) {
            double chi2 = 0;
            for (int k = 0; k < 4; k++) {
                const double z = normal(&r);
                chi2 += z * z;
            }
            const double t = normal(&r) / sqrt(chi2 / 4.0);
            w[i * cols + c] = (float)(row_scale * t * (outlier[c] ? 8.0 : 1.0));
        }
    }
    free(outlier);
    return w;
}
