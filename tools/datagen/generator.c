/* Random valid SGFP4 containers with their intended content (see generator.h). Independent
 * of src/: every layout rule is restated here from the spec. The draws for the corpus's
 * parameters are the ones the differential corpus always made, so its seeds keep naming the
 * same containers.
 * SPDX-License-Identifier: MIT */
#include "datagen/generator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datagen/reference_numbers.h"

/* ---- random numbers ---- */

uint64_t gen_next(gen_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

uint32_t gen_below(gen_rng *r, uint32_t n)
{
    return (uint32_t)(gen_next(r) % n);
}

int gen_chance(gen_rng *r, uint32_t num, uint32_t den)
{
    return gen_below(r, den) < num;
}

/* ---- content ---- */

/* LLM-like magnitudes (2^-9 .. 2^-3), or any finite value with many subnormals and zeros. */
static uint16_t llm_half(gen_rng *r)
{
    return (uint16_t)(((6u + gen_below(r, 7)) << 10) | gen_below(r, 1024));
}

static uint16_t any_half(gen_rng *r)
{
    uint16_t h;
    do
        h = (uint16_t)gen_next(r);
    while (((h >> 10) & 0x1Fu) == 0x1Fu); /* not Inf / NaN */
    return gen_chance(r, 1, 4) ? (uint16_t)(h & 0x83FFu) : h;
}

static uint16_t random_scale(gen_rng *r, gen_halves halves)
{
    if (halves != GEN_HALVES_EDGES)
        return (uint16_t)((halves == GEN_HALVES_LLM ? llm_half(r) : any_half(r)) & 0x7FFFu);
    switch (gen_below(r, 16)) {
    case 0: return 0x0000;                                         /* zero */
    case 1: return 0x8000;                                         /* -0 (accepted) */
    case 2: return (uint16_t)(1 + gen_below(r, 0x3FF));         /* subnormal */
    case 3: return 0x7BFF;                                         /* 65504 */
    case 4: return (uint16_t)gen_below(r, 0x7C00);              /* any finite >= 0 */
    default: return (uint16_t)((5 + gen_below(r, 16)) << 10 | gen_below(r, 1024));
    }
}

static uint16_t random_bias(gen_rng *r, gen_halves halves)
{
    if (halves == GEN_HALVES_LLM)
        return (uint16_t)(llm_half(r) | (gen_chance(r, 1, 2) ? 0x8000u : 0));
    if (halves == GEN_HALVES_ANY)
        return any_half(r);
    const uint16_t sign = gen_chance(r, 1, 2) ? 0x8000u : 0;
    switch (gen_below(r, 16)) {
    case 0: return sign;                                           /* +-0 */
    case 1: return (uint16_t)(sign | (1 + gen_below(r, 0x3FF))); /* subnormal */
    case 2: return (uint16_t)(sign | 0x7BFF);                      /* +-65504 */
    case 3: return (uint16_t)(sign | gen_below(r, 0x7C00));     /* any finite */
    default: return (uint16_t)(sign | (5 + gen_below(r, 16)) << 10 | gen_below(r, 1024));
    }
}

static void random_symbols(gen_rng *r, uint8_t *sym, unsigned n, unsigned mode,
                           int reserved_allowed)
{
    for (unsigned i = 0; i < n; i++)
        sym[i] = (uint8_t)(mode == 0 ? gen_below(r, 16)
                                     : gen_below(r, reserved_allowed ? 4 : 3));
}

/* Appends leaf (y, x, size) to the block with random mode, scale, bias and symbols. */
static void add_leaf(gen_block *b, gen_rng *r, const gen_params *p, unsigned y, unsigned x,
                     unsigned size, int record_mode, int reserved_allowed, uint32_t *next_symbol)
{
    gen_leaf *l = &b->leaves[b->leaves_count++];
    l->y = (uint8_t)y;
    l->x = (uint8_t)x;
    l->size = (uint8_t)size;
    l->mode = (uint8_t)(record_mode >= 0 ? (unsigned)record_mode : gen_below(r, 2));
    l->scale = random_scale(r, p->halves);
    l->bias = random_bias(r, p->halves);
    l->first_symbol = *next_symbol;
    random_symbols(r, b->sym + *next_symbol, size * size, l->mode, reserved_allowed);
    *next_symbol += size * size;
}

typedef struct tree_state {
    gen_block *b;
    gen_rng *r;
    const gen_params *p;
    unsigned split_percent; /* 255: the deep trees of GEN_LAYOUTS_MIXED_DEEP */
    int record_mode, reserved_allowed;
    uint32_t next_symbol;
} tree_state;

/* Pre-order DFS, quadrants TL, TR, BL, BR; one map bit per node of size >= 8 (D5). */
static void random_tree(tree_state *t, unsigned y, unsigned x, unsigned size, unsigned depth)
{
    int split = 0;
    if (size >= 8 && t->split_percent == 255) {
        split = gen_below(t->r, 100) < (size >= 16 ? 95u : 70u);
        const unsigned k = t->b->split_bits++;
        if (split)
            t->b->split[k / 32] |= 1u << (k % 32);
    } else if (size >= 8) {
        split = t->split_percent >= 200 /* fully split */
                    || gen_below(t->r, 100) < t->split_percent / (depth + 1) + (depth ? 0 : 30);
        const unsigned k = t->b->split_bits++;
        if (split)
            t->b->split[k / 32] |= 1u << (k % 32);
    }
    if (!split) {
        add_leaf(t->b, t->r, t->p, y, x, size, t->record_mode, t->reserved_allowed,
                 &t->next_symbol);
        return;
    }
    const unsigned h = size / 2;
    random_tree(t, y, x, h, depth + 1);
    random_tree(t, y, x + h, h, depth + 1);
    random_tree(t, y + h, x, h, depth + 1);
    random_tree(t, y + h, x + h, h, depth + 1);
}

static void random_v2_block(gen_block *b, gen_rng *r, const gen_params *p,
                            int reserved_allowed, int gaps)
{
    static const unsigned layouts[10] = {0, 1, 2, 3, 4, 4, 4, 4, 5, 4};
    static const unsigned edge[6] = {64, 32, 16, 8, 0, 4};
    memset(b, 0, sizeof *b);
    b->shares = -1;
    b->layout = p->layouts == GEN_LAYOUTS_UNIFORM_64 ? 0
                : p->layouts == GEN_LAYOUTS_MIXED_DEEP ? 4
                                                       : layouts[gen_below(r, 10)];
    const int record_mode = gen_chance(r, 1, 3) ? (int)gen_below(r, 2) : -1;
    uint32_t next_symbol = 0;
    if (b->layout == 4) {
        const unsigned percent[4] = {0, 40, 80, 200}; /* root leaf .. fully split */
        tree_state t = {b, r, p,
                        p->layouts == GEN_LAYOUTS_MIXED_DEEP ? 255 : percent[gen_below(r, 4)],
                        record_mode, reserved_allowed, 0};
        random_tree(&t, 0, 0, 64, 0);
    } else {
        const unsigned e = edge[b->layout];
        for (unsigned y = 0; y < 64; y += e) /* uniform layouts: raster order (D5) */
            for (unsigned x = 0; x < 64; x += e)
                add_leaf(b, r, p, y, x, e, record_mode, reserved_allowed, &next_symbol);
    }
    b->gap = gaps && gen_chance(r, 1, 3) ? 16 * gen_below(r, 4) : 0;
}

static void random_v1_block(gen_container *c, uint64_t index, gen_rng *r,
                            const gen_params *p, int reserved_allowed)
{
    gen_block *b = &c->block[index];
    b->hint = gen_chance(r, 1, 4);
    b->shares = -1;
    if (p->corners && index > 0 && gen_chance(r, 1, 5)) {
        /* read an earlier block's payload (same mode: a T158 payload's tail is zero, an FP4
         * one is not), with this block's own scale and bias */
        uint64_t a = gen_below(r, (uint32_t)index);
        while (c->block[a].shares >= 0)
            a = (uint64_t)c->block[a].shares;
        b->shares = (int)a;
        b->leaves_count = 1;
        b->leaves[0] = c->block[a].leaves[0];
        b->leaves[0].scale = random_scale(r, p->halves);
        b->leaves[0].bias = random_bias(r, p->halves);
        memcpy(b->sym, c->block[a].sym, 4096);
        return;
    }
    uint32_t next_symbol = 0;
    add_leaf(b, r, p, 0, 0, 64, -1, reserved_allowed, &next_symbol);
}

/* ---- bytes ---- */

typedef struct buffer {
    uint8_t *p;
    size_t size, cap;
    int failed;
} buffer;

static void put(buffer *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (b->size + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->size + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (data)
        memcpy(b->p + b->size, data, n);
    else
        memset(b->p + b->size, 0, n);
    b->size += n;
}

static void put_u32(buffer *b, uint32_t v)
{
    const uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                           (uint8_t)(v >> 24)};
    put(b, le, 4);
}

static void put_u32_at(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Packed codes (§22.6): FP4 code i at bits 4*(i%8) of LE word i/8 = low nibble first in
 * each byte; T158 code i at bits 2*(i%16) of LE word i/16 = lowest pair first. */
static size_t pack_payload(const gen_leaf *l, const uint8_t *sym, uint8_t *out)
{
    const unsigned n = (unsigned)l->size * l->size;
    if (l->mode == 0) {
        for (unsigned i = 0; i < n; i += 2)
            out[i / 2] = (uint8_t)(sym[i] | sym[i + 1] << 4);
        return n / 2;
    }
    for (unsigned i = 0; i < n; i += 4)
        out[i / 4] = (uint8_t)(sym[i] | sym[i + 1] << 2 | sym[i + 2] << 4 | sym[i + 3] << 6);
    return n / 4;
}

static void write_v2(gen_container *c, gen_rng *r, buffer *out)
{
    const uint8_t head[9] = {'S', 'G', 'F', '4', 0x02, (uint8_t)c->blocks,
                             (uint8_t)(c->blocks >> 8), (uint8_t)(c->blocks >> 16),
                             (uint8_t)(c->blocks >> 24)};
    put(out, head, 9);
    put(out, NULL, 7);                 /* pad[7] */
    put(out, NULL, 4 * c->blocks);     /* offsets, filled below */
    c->record_base = align16(16 + 4 * c->blocks);
    put(out, NULL, c->record_base - out->size);
    uint8_t payload[2048];
    for (uint64_t k = 0; k < c->blocks; k++) {
        gen_block *b = &c->block[k];
        for (unsigned i = 0; i < b->gap; i++) { /* gap bytes: zero or noise, ignored */
            const uint8_t noise = (uint8_t)gen_below(r, 256);
            put(out, &noise, 1);
        }
        b->record_at = out->size;
        put_u32(out, b->layout);
        if (b->layout == 4)
            for (int w = 0; w < 3; w++)
                put_u32(out, b->split[w]);
        b->headers_at = out->size;
        for (unsigned i = 0; i < b->leaves_count; i++) {
            const gen_leaf *l = &b->leaves[i]; /* eq. 22.1: low 4 bits = flags */
            put_u32(out, (uint32_t)l->scale << 16 | (l->bias & 0xFFF0u) | l->mode);
        }
        b->headers_end = out->size;
        put(out, NULL, b->record_at + align16(out->size - b->record_at) - out->size);
        b->payloads_at = out->size;
        for (unsigned i = 0; i < b->leaves_count; i++) {
            const gen_leaf *l = &b->leaves[i];
            const size_t n = pack_payload(l, b->sym + l->first_symbol, payload);
            b->payload_at[i] = out->size;
            put(out, payload, n);
            put(out, NULL, align16(n) - n);
        }
        if (!out->failed)
            put_u32_at(out->p + 16 + 4 * k, (uint32_t)(b->record_at - c->record_base));
    }
}

static void write_v1(gen_container *c, gen_rng *r, buffer *out)
{
    const uint64_t B = c->blocks;
    /* payload slots in a random order; blocks that share reuse their owner's slot */
    uint32_t *slot = malloc(B * sizeof *slot);
    uint8_t *used = calloc(B, 1);
    if (!slot || !used) {
        free(slot);
        free(used);
        out->failed = 1;
        return;
    }
    for (uint64_t i = 0; i < B; i++)
        slot[i] = (uint32_t)i;
    for (uint64_t i = B; i > 1; i--) {
        const uint32_t j = gen_below(r, (uint32_t)i);
        const uint32_t t = slot[i - 1];
        slot[i - 1] = slot[j];
        slot[j] = t;
    }
    for (uint64_t k = 0; k < B; k++) {
        gen_block *b = &c->block[k];
        b->base = b->shares >= 0 ? c->block[b->shares].base : slot[k] * 2048u;
        used[b->base / 2048] = 1;
    }
    for (uint64_t k = 0; k < B; k++) {
        const gen_leaf *l = &c->block[k].leaves[0];
        put_u32(out, (uint32_t)l->scale << 16 | l->bias); /* v1: the whole bias (D3) */
    }
    for (uint64_t k = 0; k < B; k++) {
        const gen_block *b = &c->block[k];
        put_u32(out, b->base | b->leaves[0].mode | (b->hint ? 2u : 0u));
    }
    const size_t blob = out->size;
    put(out, NULL, B * 2048);
    if (!out->failed) {
        uint8_t payload[2048];
        for (uint64_t k = 0; k < B; k++) {
            const gen_block *b = &c->block[k];
            memset(payload, 0, sizeof payload); /* T158: words 256..511 zero */
            pack_payload(&b->leaves[0], b->sym, payload);
            memcpy(out->p + blob + b->base, payload, 2048);
        }
        for (uint64_t s = 0; s < B; s++) /* unreferenced slots: noise (accepted, D2) */
            if (!used[s])
                for (unsigned i = 0; i < 2048; i++)
                    out->p[blob + s * 2048 + i] = (uint8_t)gen_below(r, 256);
    }
    free(slot);
    free(used);
}

static void random_shape(gen_container *c, gen_rng *r)
{
    const uint32_t kind = gen_below(r, 10);
    if (kind == 0) {
        c->rows = 1 + gen_below(r, 3);
        c->cols = 1 + gen_below(r, 3);
    } else {
        const uint64_t ty = 1 + gen_below(r, kind == 1 ? 5 : 3);
        const uint64_t tx = 1 + gen_below(r, kind == 2 ? 6 : 3);
        /* edge-heavy: a full tile, one past a tile, or anything */
        const uint32_t pick_y = gen_below(r, 4), pick_x = gen_below(r, 4);
        c->rows = 64 * (ty - 1) + (pick_y == 0 ? 64 : pick_y == 1 ? 1 : 1 + gen_below(r, 64));
        c->cols = 64 * (tx - 1) + (pick_x == 0 ? 64 : pick_x == 1 ? 1 : 1 + gen_below(r, 64));
    }
    c->tiles_y = (c->rows + 63) / 64;
    c->tiles_x = (c->cols + 63) / 64;
    c->blocks = c->tiles_y * c->tiles_x;
}

gen_params gen_corpus_params(int profile)
{
    return (gen_params){profile, 0, 0, GEN_LAYOUTS_ALL, GEN_HALVES_EDGES, 0, 1};
}

gen_params gen_shape_params(int profile, uint64_t rows, uint64_t cols)
{
    return (gen_params){profile, rows, cols, GEN_LAYOUTS_ALL, GEN_HALVES_EDGES, 0, 1};
}

/* Bytes of a v2 record: the sb_header, the split map (MIXED), the leaf headers, then each
 * payload, every part padded to 16 bytes (section 22.5). */
static uint64_t record_bytes(const gen_block *b)
{
    uint64_t n = align16(4 + (b->layout == 4 ? 12u : 0u) + 4 * (uint64_t)b->leaves_count);
    for (unsigned i = 0; i < b->leaves_count; i++) {
        const uint64_t edge = b->leaves[i].size;
        n += align16(edge * edge / (b->leaves[i].mode ? 4 : 2));
    }
    return n;
}

/* Block k of a v2 container aiming at p->target_bpw: of 8 random candidates, the one whose
 * bytes bring the running size (*total, updated) closest to the target's. */
static void rate_v2_block(gen_container *c, uint64_t k, gen_rng *r, const gen_params *p,
                          int reserved_allowed, uint64_t *total, gen_block *candidate)
{
    const double want = p->target_bpw * 4096.0 * (double)(k + 1) / 8.0;
    double best = -1;
    for (int n = 0; n < 8; n++) {
        random_v2_block(candidate, r, p, reserved_allowed, 0);
        const double miss = (double)(*total + record_bytes(candidate)) - want;
        if (best < 0 || miss * miss < best) {
            best = miss * miss;
            c->block[k] = *candidate;
        }
    }
    *total += record_bytes(&c->block[k]);
}

int gen_generate(gen_container *c, gen_rng *r, const gen_params *p)
{
    memset(c, 0, sizeof *c);
    c->profile = p->profile;
    if (p->rows && p->cols) {
        c->rows = p->rows;
        c->cols = p->cols;
        c->tiles_y = (c->rows + 63) / 64;
        c->tiles_x = (c->cols + 63) / 64;
        c->blocks = c->tiles_y * c->tiles_x;
        if (c->tiles_y > UINT32_MAX || c->tiles_x > UINT32_MAX || c->blocks > UINT32_MAX / 2056)
            return -1;
    } else {
        random_shape(c, r);
    }
    gen_block *candidate = p->target_bpw > 0 ? malloc(sizeof *candidate) : NULL;
    c->block = calloc(c->blocks, sizeof *c->block);
    if (!c->block || (p->target_bpw > 0 && !candidate)) {
        free(candidate);
        gen_free(c);
        return -1;
    }
    const int reserved_allowed = p->corners && gen_chance(r, 1, 4);
    const int gaps = p->corners && p->profile == 2 && gen_chance(r, 1, 3);
    uint64_t total = 0;
    for (uint64_t k = 0; k < c->blocks; k++) {
        if (p->profile == 2 && p->target_bpw > 0)
            rate_v2_block(c, k, r, p, reserved_allowed, &total, candidate);
        else if (p->profile == 2)
            random_v2_block(&c->block[k], r, p, reserved_allowed, gaps);
        else
            random_v1_block(c, k, r, p, reserved_allowed);
    }
    free(candidate);
    buffer out = {0};
    if (p->profile == 2)
        write_v2(c, r, &out);
    else
        write_v1(c, r, &out);
    if (out.failed) {
        free(out.p);
        gen_free(c);
        return -1;
    }
    c->data = out.p;
    c->size = out.size;
    return 0;
}

uint8_t *gen_container_bytes(const gen_params *p, uint64_t seed, size_t *size)
{
    gen_rng r = {seed};
    gen_container c;
    if (gen_generate(&c, &r, p) != 0)
        return NULL;
    uint8_t *bytes = c.data;
    *size = c.size;
    c.data = NULL;
    gen_free(&c);
    return bytes;
}

void gen_free(gen_container *c)
{
    free(c->block);
    free(c->data);
    c->block = NULL;
    c->data = NULL;
}

/* ---- expected values ---- */

void gen_expected(const gen_container *c, float *out)
{
    static const int fp4_value[16] = {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1};
    static const int t158_value[4] = {0, 1, -1, 0}; /* 0b11 reserved -> 0 (D4) */
    const uint16_t bias_mask = c->profile == 2 ? 0xFFF0u : 0xFFFFu;
    for (uint64_t k = 0; k < c->blocks; k++) {
        const gen_block *b = &c->block[k];
        const uint64_t y0 = (k / c->tiles_x) * 64, x0 = (k % c->tiles_x) * 64;
        for (unsigned i = 0; i < b->leaves_count; i++) {
            const gen_leaf *l = &b->leaves[i];
            const double S = ref_half_value(l->scale);
            const double B = ref_half_value((uint16_t)(l->bias & bias_mask));
            for (unsigned yy = 0; yy < l->size; yy++) {
                const uint64_t row = y0 + l->y + yy;
                if (row >= c->rows)
                    continue;
                for (unsigned xx = 0; xx < l->size; xx++) {
                    const uint64_t col = x0 + l->x + xx;
                    if (col >= c->cols)
                        continue;
                    const uint8_t s = b->sym[l->first_symbol + yy * l->size + xx];
                    const int q = l->mode == 0 ? fp4_value[s] : t158_value[s];
                    /* exact in double (<= 44 significant bits); one rounding to float */
                    out[row * c->cols + col] = (float)(S * (double)q + B);
                }
            }
        }
    }
}

uint64_t gen_reserved_symbols(const gen_container *c)
{
    uint64_t n = 0;
    for (uint64_t k = 0; k < c->blocks; k++) {
        const gen_block *b = &c->block[k];
        for (unsigned i = 0; i < b->leaves_count; i++) {
            const gen_leaf *l = &b->leaves[i];
            if (l->mode == 1)
                for (unsigned j = 0; j < (unsigned)l->size * l->size; j++)
                    n += b->sym[l->first_symbol + j] == 3;
        }
    }
    return n;
}
