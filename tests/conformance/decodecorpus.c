/* decodecorpus: a random differential corpus for libsgfp4 (in the spirit of zstd's
 * tests/decodecorpus.c).
 *
 * For each of --count containers (seeded: container i of seed S is always the same), an
 * independent writer (tools/datagen/generator.c, which never touches src/) makes a random valid v1 or v2
 * container and the expected float32 tensor from the intended values. The library must:
 *   - open it, and report the blocks, leaves, layouts, modes, ERROR_HINT blocks and reserved
 *     symbols the writer put there;
 *   - decode it bit for bit: sgfp4_decode (SCALAR, AUTO; 1..4 threads), sgfp4_decode_rows
 *     on a random row range with a random stride (stride padding untouched),
 *     sgfp4_decode_gather on a random row list, and F16 / BF16 outputs equal to an independent
 *     round-to-nearest-even of the expected floats;
 *   - reject one deliberate single-rule corruption of it with that rule's status, and no view.
 *
 * usage: decodecorpus [--seed S] [--count N] [--first I] [--write-dir DIR] [-v]
 *   --write-dir DIR  also writes each container (cNNNNN.fp4|.sgfp4 + cNNNNN.f32) and its
 *                    corruption (rNNNNN.*) with DIR/index.tsv, for the CLI tests.
 * Exit 0 when everything matched, 1 on the first failures (each printed with how to
 * reproduce it), 2 on bad arguments.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgfp4.h"
#include "sgfp4_experimental.h"
#include "datagen/generator.h"
#include "datagen/reference_numbers.h"
#include "support/options.h"

/* ---- failure reporting ---- */

static uint64_t g_seed;
static uint64_t g_failures;
static int g_verbose;

#define MAX_FAILURES 10

static int failf(uint64_t index, const gen_container *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failf(uint64_t index, const gen_container *c, const char *fmt, ...)
{
    g_failures++;
    fprintf(stderr, "decodecorpus: FAIL container %" PRIu64 " (v%d %" PRIu64 "x%" PRIu64
                    ", %zu bytes; reproduce: decodecorpus --seed %" PRIu64 " --first %" PRIu64
                    " --count 1): ",
            index, c->profile, c->rows, c->cols, c->size, g_seed, index);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 0;
}

/* ---- decode checks ---- */

/* A random backend among those this machine runs (the oracle, AUTO and every kernel set,
 * forced), thread count and store kind. AUTO is listed twice, where the retired second name
 * of AUTO was, so that a seed draws what it drew before. */
static sgfp4_decode_options random_options(gen_rng *r)
{
    static const sgfp4_backend all[] = {
        SGFP4_BACKEND_SCALAR, SGFP4_BACKEND_AUTO,   SGFP4_BACKEND_AUTO, SGFP4_BACKEND_GENERIC,
        SGFP4_BACKEND_AVX2,   SGFP4_BACKEND_AVX512, SGFP4_BACKEND_NEON};
    sgfp4_backend runs[sizeof all / sizeof all[0]];
    unsigned n = 0;
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
        if (sgfp4_decode_backend_name(all[i]))
            runs[n++] = all[i];
    /* three draws, in this order */
    const sgfp4_backend backend = runs[gen_below(r, n)];
    const unsigned threads = 1 + gen_below(r, 4);
    const sgfp4_store store = (sgfp4_store)gen_below(r, 3);
    return decode_options(backend, threads, store);
}

static const char *backend_name(sgfp4_backend b)
{
    if (b == SGFP4_BACKEND_AUTO)
        return "auto";
    return sgfp4_decode_backend_name(b);
}

/* Compares output row k (cols elements of dtype at out + k*stride) with expected row `row`. */
static int row_matches(const uint8_t *out, size_t stride_bytes, sgfp4_dtype dtype, size_t k,
                       const float *expected, uint64_t row, uint64_t cols, uint64_t *bad_col)
{
    const uint8_t *p = out + k * stride_bytes;
    for (uint64_t x = 0; x < cols; x++) {
        const float want = expected[row * cols + x];
        if (dtype == SGFP4_DTYPE_F32) {
            if (memcmp(p + 4 * x, &want, 4) != 0)
                return *bad_col = x, 0;
        } else {
            const uint16_t h = dtype == SGFP4_DTYPE_F16 ? ref_float_to_half(want)
                                                        : ref_float_to_bf16(want);
            uint16_t got;
            memcpy(&got, p + 2 * x, 2);
            if (got != h)
                return *bad_col = x, 0;
        }
    }
    return 1;
}

static const char *dtype_name(sgfp4_dtype d)
{
    return d == SGFP4_DTYPE_F32 ? "f32" : d == SGFP4_DTYPE_F16 ? "f16" : "bf16";
}

/* Decodes output rows via `call` (0 whole, 1 rows, 2 gather) and compares every row; the
 * bytes between rows (stride padding) must keep their 0xA5 fill. */
static int check_decode(uint64_t index, const gen_container *c, const sgfp4_tensor *t,
                        const float *expected, gen_rng *r, int call, sgfp4_dtype dtype,
                        sgfp4_decode_options o)
{
    const size_t elem = dtype == SGFP4_DTYPE_F32 ? 4 : 2;
    const uint64_t cols = c->cols;
    const size_t stride = call == 0 && gen_chance(r, 1, 2) ? 0
                                                             : (size_t)cols + gen_below(r, 9);
    const size_t stride_bytes = (stride ? stride : cols) * elem;
    uint64_t r0 = 0, r1 = c->rows, count = c->rows;
    uint64_t *rows = NULL;
    if (call == 1) {
        r0 = gen_below(r, (uint32_t)c->rows);
        r1 = r0 + 1 + gen_below(r, (uint32_t)(c->rows - r0));
        count = r1 - r0;
    } else if (call == 2) {
        count = 1 + gen_below(r, (uint32_t)(c->rows < 40 ? 2 * c->rows : 80));
        rows = malloc(count * sizeof *rows);
        if (!rows)
            return failf(index, c, "out of memory");
        for (uint64_t k = 0; k < count; k++)
            rows[k] = gen_below(r, (uint32_t)c->rows);
    }
    const size_t capacity = (size_t)((count - 1) * stride_bytes + cols * elem);
    uint8_t *out = malloc(capacity);
    if (!out) {
        free(rows);
        return failf(index, c, "out of memory");
    }
    memset(out, 0xA5, capacity);
    sgfp4_status s;
    const char *what = call == 0 ? "sgfp4_decode" : call == 1 ? "sgfp4_decode_rows"
                                                              : "sgfp4_decode_gather";
    if (call == 0)
        s = sgfp4_decode(t, dtype, out, stride, capacity, &o);
    else if (call == 1)
        s = sgfp4_decode_rows(t, r0, r1, dtype, out, stride, capacity, &o);
    else
        s = sgfp4_decode_gather(t, rows, (size_t)count, dtype, out, stride, capacity, &o);
    int ok = 1;
    if (s != SGFP4_OK) {
        ok = failf(index, c, "%s (%s, %s, %u threads) returned %s", what, dtype_name(dtype),
                   backend_name(o.backend), o.threads, sgfp4_status_name(s));
    } else {
        for (uint64_t k = 0; k < count && ok; k++) {
            const uint64_t row = call == 2 ? rows[k] : r0 + k;
            uint64_t x = 0;
            if (!row_matches(out, stride_bytes, dtype, (size_t)k, expected, row, cols, &x))
                ok = failf(index, c,
                           "%s (%s, %s, %u threads, rows %" PRIu64 "..%" PRIu64
                           ", stride %zu): output row %" PRIu64 " (tensor row %" PRIu64
                           ") differs at column %" PRIu64 " (expected %.9g)",
                           what, dtype_name(dtype), backend_name(o.backend), o.threads, r0, r1,
                           stride, k, row, x, (double)expected[row * cols + x]);
            if (ok && k + 1 < count)
                for (size_t b = (size_t)(k * stride_bytes + cols * elem);
                     b < (k + 1) * stride_bytes; b++)
                    if (out[b] != 0xA5) {
                        ok = failf(index, c, "%s wrote into the stride padding after row %" PRIu64,
                                   what, k);
                        break;
                    }
        }
    }
    free(out);
    free(rows);
    return ok;
}

/* Compares what sgfp4_tensor_get_info() and the leaf queries report with the intent. */
static int check_info(uint64_t index, const gen_container *c, const sgfp4_tensor *t)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    uint64_t leaves = 0, by_mode[2] = {0, 0}, by_layout[6] = {0}, hints = 0;
    for (uint64_t k = 0; k < c->blocks; k++) {
        const gen_block *b = &c->block[k];
        leaves += b->leaves_count;
        for (unsigned i = 0; i < b->leaves_count; i++)
            by_mode[b->leaves[i].mode]++;
        if (c->profile == 2)
            by_layout[b->layout]++;
        hints += b->hint;
    }
    if (info.blocks != c->blocks || info.leaves != leaves || info.leaves_by_mode[0] != by_mode[0] ||
        info.leaves_by_mode[1] != by_mode[1] || info.container_bytes != c->size)
        return failf(index, c, "info: blocks %" PRIu64 " leaves %" PRIu64 " (fp4 %" PRIu64
                               ", t158 %" PRIu64 "), want %" PRIu64 " / %" PRIu64 " (%" PRIu64
                               ", %" PRIu64 ")",
                     info.blocks, info.leaves, info.leaves_by_mode[0], info.leaves_by_mode[1],
                     c->blocks, leaves, by_mode[0], by_mode[1]);
    for (int l = 0; l < 6; l++)
        if (info.records_by_layout[l] != by_layout[l])
            return failf(index, c, "info: %" PRIu64 " records of layout %d, want %" PRIu64,
                         info.records_by_layout[l], l, by_layout[l]);
    if (c->profile == 1 && info.error_hint_blocks != hints)
        return failf(index, c, "info: %" PRIu64 " ERROR_HINT blocks, want %" PRIu64,
                     info.error_hint_blocks, hints);
    const uint64_t reserved = sgfp4_tensor_reserved_symbols(t);
    if (reserved != gen_reserved_symbols(c))
        return failf(index, c, "%" PRIu64 " reserved symbols reported, want %" PRIu64,
                     reserved, gen_reserved_symbols(c));
    /* the leaf list of one random block: positions, sizes, modes, exact S and Bias */
    const uint64_t k = gen_next(&(gen_rng){index}) % c->blocks;
    const gen_block *b = &c->block[k];
    sgfp4_leaf got[256];
    if (sgfp4_tensor_block_leaves(t, k, got, 256) != b->leaves_count)
        return failf(index, c, "block %" PRIu64 ": wrong leaf count", k);
    for (unsigned i = 0; i < b->leaves_count; i++) {
        const gen_leaf *l = &b->leaves[i];
        const float S = (float)ref_half_value(l->scale);
        const float B = (float)ref_half_value(
            (uint16_t)(l->bias & (c->profile == 2 ? 0xFFF0u : 0xFFFFu)));
        if (got[i].y != l->y || got[i].x != l->x || got[i].size != l->size ||
            got[i].mode != l->mode || memcmp(&got[i].scale, &S, 4) != 0 ||
            memcmp(&got[i].bias, &B, 4) != 0)
            return failf(index, c, "block %" PRIu64 " leaf %u: reported %u@(%u,%u) mode %u "
                                   "S %.9g B %.9g, want %u@(%u,%u) mode %u S %.9g B %.9g",
                         k, i, got[i].size, got[i].y, got[i].x, got[i].mode,
                         (double)got[i].scale, (double)got[i].bias, l->size, l->y, l->x,
                         l->mode, (double)S, (double)B);
    }
    return 1;
}

/* ---- corruptions: each breaks exactly one acceptance rule (DECISIONS D2) ---- */

typedef struct corruption {
    uint8_t *data;
    size_t size;
    uint64_t rows, cols;
    sgfp4_status want;
    const char *what;
} corruption;

static uint32_t load_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint8_t nonzero_byte(gen_rng *r) { return (uint8_t)(1 + gen_below(r, 255)); }

/* A random leaf: its block k and index i. */
static const gen_leaf *pick_leaf(const gen_container *c, gen_rng *r, uint64_t *k,
                                    unsigned *i)
{
    *k = gen_below(r, (uint32_t)c->blocks);
    *i = gen_below(r, c->block[*k].leaves_count);
    return &c->block[*k].leaves[*i];
}

/* Position of the packed header word of a leaf. */
static uint64_t header_at(const gen_container *c, uint64_t k, unsigned i)
{
    return c->profile == 1 ? 4 * k : c->block[k].headers_at + 4 * i;
}

/* Rewrites a leaf's affine header to (scale, bias) keeping the v2 mode flag. */
static void set_affine(const gen_container *c, corruption *x, uint64_t k, unsigned i,
                       uint16_t scale, uint16_t bias)
{
    const uint64_t at = header_at(c, k, i);
    const uint32_t mode = c->block[k].leaves[i].mode;
    const uint32_t low = c->profile == 1 ? bias : (uint32_t)(bias & 0xFFF0u) | mode;
    store_u32(x->data + at, (uint32_t)scale << 16 | low);
}

/* Tries rule `rule` on x (a copy of the container); returns 0 if it does not apply. */
static int apply_rule(const gen_container *c, gen_rng *r, unsigned rule, corruption *x)
{
    const uint64_t B = c->blocks;
    uint64_t k;
    unsigned i;
    const gen_leaf *l;
    switch (rule) {
    case 0: /* SHAPE */
        if (gen_chance(r, 1, 2))
            x->rows = 0;
        else
            x->cols = 0;
        x->want = SGFP4_ERR_SHAPE, x->what = "zero dimension";
        return 1;
    case 1: /* SCALE_NONFINITE: exponent 31, sign clear (inf or NaN) */
        l = pick_leaf(c, r, &k, &i);
        set_affine(c, x, k, i, (uint16_t)(0x7C00u | gen_below(r, 1024)), l->bias);
        x->want = SGFP4_ERR_SCALE_NONFINITE, x->what = "scale inf/NaN";
        return 1;
    case 2: /* SCALE_NEGATIVE: sign set, finite, not -0 */
        l = pick_leaf(c, r, &k, &i);
        set_affine(c, x, k, i, (uint16_t)(0x8000u | (1 + gen_below(r, 0x7BFF))), l->bias);
        x->want = SGFP4_ERR_SCALE_NEGATIVE, x->what = "negative scale";
        return 1;
    case 3: /* BIAS_NONFINITE (v2: after the 0xFFF0 mask) */
        l = pick_leaf(c, r, &k, &i);
        set_affine(c, x, k, i, l->scale,
                   (uint16_t)((gen_below(r, 2) << 15) | 0x7C00u | gen_below(r, 1024)));
        x->want = SGFP4_ERR_BIAS_NONFINITE, x->what = "bias inf/NaN";
        return 1;
    }
    if (c->profile == 1) {
        const uint64_t blob = 8 * B;
        switch (rule) {
        case 4: /* V1_LENGTH */
            if (gen_chance(r, 1, 2))
                x->size = gen_below(r, (uint32_t)x->size);
            else
                x->size += 1 + gen_below(r, 4000); /* the buffer has room */
            x->want = SGFP4_ERR_V1_LENGTH, x->what = "length";
            return 1;
        case 5: /* V1_RESERVED_FLAGS */
            k = gen_below(r, (uint32_t)B);
            store_u32(x->data + 4 * B + 4 * k,
                      load_u32(x->data + 4 * B + 4 * k) | (uint32_t)(4 << gen_below(r, 2)) |
                          (uint32_t)(gen_below(r, 2) * 12));
            x->want = SGFP4_ERR_V1_RESERVED_FLAGS, x->what = "reserved flags";
            return 1;
        case 6: { /* V1_OFFSET_RANGE */
            k = gen_below(r, (uint32_t)B);
            const uint64_t low = (B - 1) * 2048 + 16;
            const uint32_t steps = (uint32_t)((0xFFFFFFF0u - low) / 16 + 1);
            const uint64_t base =
                low + 16 * (uint64_t)gen_below(r, gen_chance(r, 1, 2) ? 200 : steps);
            const uint32_t old = load_u32(x->data + 4 * B + 4 * k);
            store_u32(x->data + 4 * B + 4 * k, (uint32_t)base | (old & 0x3u));
            x->want = SGFP4_ERR_V1_OFFSET_RANGE, x->what = "payload offset out of range";
            return 1;
        }
        case 7: /* V1_T158_TAIL */
            k = gen_below(r, (uint32_t)B);
            if (c->block[k].leaves[0].mode != 1)
                return 0;
            x->data[blob + c->block[k].base + 1024 + gen_below(r, 1024)] = nonzero_byte(r);
            x->want = SGFP4_ERR_V1_T158_TAIL, x->what = "T158 tail";
            return 1;
        }
        return 0;
    }
    const uint64_t table_end = 16 + 4 * B;
    switch (rule) {
    case 4: /* V2_MAGIC */
        x->data[gen_below(r, 4)] ^= nonzero_byte(r);
        x->want = SGFP4_ERR_V2_MAGIC, x->what = "magic";
        return 1;
    case 5: /* V2_VERSION */
        x->data[4] = (uint8_t)(2 + nonzero_byte(r));
        x->want = SGFP4_ERR_V2_VERSION, x->what = "version";
        return 1;
    case 6: /* V2_HEADER_PAD */
        x->data[9 + gen_below(r, 7)] = nonzero_byte(r);
        x->want = SGFP4_ERR_V2_HEADER_PAD, x->what = "header pad";
        return 1;
    case 7: /* V2_BLOCK_COUNT */
        store_u32(x->data + 5,
                  (uint32_t)(B + 1 + gen_below(r, gen_chance(r, 1, 4) ? 0xFFFFu : 3)));
        x->want = SGFP4_ERR_V2_BLOCK_COUNT, x->what = "block count";
        return 1;
    case 8: /* V2_TABLE_PAD */
        if (c->record_base == table_end)
            return 0;
        x->data[table_end + gen_below(r, (uint32_t)(c->record_base - table_end))] =
            nonzero_byte(r);
        x->want = SGFP4_ERR_V2_TABLE_PAD, x->what = "offset-table pad";
        return 1;
    case 9: /* TRUNCATED: ends before the record region */
        x->size = gen_below(r, (uint32_t)c->record_base);
        x->want = SGFP4_ERR_TRUNCATED, x->what = "truncated header/table";
        return 1;
    case 10: /* V2_OFFSET_ALIGN */
        k = gen_below(r, (uint32_t)B);
        store_u32(x->data + 16 + 4 * k, load_u32(x->data + 16 + 4 * k) + 1 + gen_below(r, 15));
        x->want = SGFP4_ERR_V2_OFFSET_ALIGN, x->what = "offset alignment";
        return 1;
    case 11: { /* V2_OFFSET_ORDER */
        if (B < 2)
            return 0;
        k = 1 + gen_below(r, (uint32_t)(B - 1));
        const uint32_t previous = load_u32(x->data + 16 + 4 * (k - 1));
        store_u32(x->data + 16 + 4 * k, previous - 16 * gen_below(r, previous / 16 + 1));
        x->want = SGFP4_ERR_V2_OFFSET_ORDER, x->what = "offset order";
        return 1;
    }
    case 12: /* V2_RECORD_BOUNDS: cut inside the record region */
        x->size = (size_t)(c->record_base + gen_below(r, (uint32_t)(c->size - c->record_base)));
        x->want = SGFP4_ERR_V2_RECORD_BOUNDS, x->what = "truncated record";
        return 1;
    case 13: /* V2_SB_RESERVED */
        k = gen_below(r, (uint32_t)B);
        store_u32(x->data + c->block[k].record_at,
                  c->block[k].layout | 1u << (3 + gen_below(r, 29)));
        x->want = SGFP4_ERR_V2_SB_RESERVED, x->what = "sb_header reserved bits";
        return 1;
    case 14: /* V2_LAYOUT */
        k = gen_below(r, (uint32_t)B);
        store_u32(x->data + c->block[k].record_at, 6 + gen_below(r, 2));
        x->want = SGFP4_ERR_V2_LAYOUT, x->what = "layout 6/7";
        return 1;
    case 15: { /* V2_SPLIT_TRAILING */
        k = gen_below(r, (uint32_t)B);
        const gen_block *b = &c->block[k];
        if (b->layout != 4 || b->split_bits >= 96)
            return 0;
        const unsigned bit = b->split_bits + gen_below(r, 96 - b->split_bits);
        uint8_t *w = x->data + b->record_at + 4 + 4 * (bit / 32);
        store_u32(w, load_u32(w) | 1u << (bit % 32));
        x->want = SGFP4_ERR_V2_SPLIT_TRAILING, x->what = "split map trailing bit";
        return 1;
    }
    case 16: { /* V2_LEAF_FLAGS */
        pick_leaf(c, r, &k, &i);
        uint8_t *h = x->data + header_at(c, k, i);
        store_u32(h, load_u32(h) | (1 + gen_below(r, 7)) << 1);
        x->want = SGFP4_ERR_V2_LEAF_FLAGS, x->what = "leaf flag bits 1-3";
        return 1;
    }
    case 17: { /* V2_LEAF_HEADER_PAD */
        k = gen_below(r, (uint32_t)B);
        const gen_block *b = &c->block[k];
        if (b->payloads_at == b->headers_end)
            return 0;
        x->data[b->headers_end + gen_below(r, (uint32_t)(b->payloads_at - b->headers_end))] =
            nonzero_byte(r);
        x->want = SGFP4_ERR_V2_LEAF_HEADER_PAD, x->what = "pad after leaf headers";
        return 1;
    }
    case 18: { /* V2_PAYLOAD_PAD: only 4x4 leaves have payload pad */
        l = pick_leaf(c, r, &k, &i);
        if (l->size != 4)
            return 0;
        const unsigned n = l->mode ? 4 : 8;
        x->data[c->block[k].payload_at[i] + n + gen_below(r, 16 - n)] = nonzero_byte(r);
        x->want = SGFP4_ERR_V2_PAYLOAD_PAD, x->what = "payload pad";
        return 1;
    }
    case 19: /* V2_TRAILING_BYTES */
        for (unsigned n = 1 + gen_below(r, 40); n > 0; n--)
            x->data[x->size++] = (uint8_t)gen_below(r, 256);
        x->want = SGFP4_ERR_V2_TRAILING_BYTES, x->what = "bytes after the last record";
        return 1;
    }
    return 0;
}

/* Makes a corrupted copy of c in *x (x->data allocated with room to grow). */
static int make_corruption(const gen_container *c, gen_rng *r, corruption *x)
{
    const unsigned rules = c->profile == 1 ? 8 : 20;
    x->data = malloc(c->size + 4096);
    if (!x->data)
        return 0;
    for (;;) {
        memcpy(x->data, c->data, c->size);
        memset(x->data + c->size, 0, 4096); /* what a lengthened v1 file gains */
        x->size = c->size;
        x->rows = c->rows;
        x->cols = c->cols;
        if (apply_rule(c, r, gen_below(r, rules), x))
            return 1;
    }
}

static int check_corruption(uint64_t index, const gen_container *c, const corruption *x)
{
    sgfp4_tensor *t = (sgfp4_tensor *)&t; /* must be set to NULL on failure */
    sgfp4_diag diag;
    const sgfp4_profile profile = c->profile == 1 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
    const sgfp4_status s = sgfp4_tensor_open(x->data, x->size, profile, x->rows, x->cols,
                                             &t, NULL, &diag);
    if (s == SGFP4_OK) {
        sgfp4_tensor_close(t);
        return failf(index, c, "corruption '%s' accepted (want %s)", x->what,
                     sgfp4_status_name(x->want));
    }
    if (t != NULL)
        return failf(index, c, "corruption '%s': rejected but *out not NULL", x->what);
    if (s != x->want || diag.status != s)
        return failf(index, c, "corruption '%s': rejected with %s (diag %s), want %s: %s",
                     x->what, sgfp4_status_name(s), sgfp4_status_name(diag.status),
                     sgfp4_status_name(x->want), diag.message);
    if (g_verbose)
        printf("  %" PRIu64 ": %s -> %s: %s\n", index, x->what, sgfp4_status_name(s),
               diag.message);
    return 1;
}

/* ---- files for the CLI tests ---- */

static int write_file(const char *dir, const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "decodecorpus: cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

static int write_case(const char *dir, FILE *index_file, uint64_t index,
                      const gen_container *c, const float *expected, const corruption *x)
{
    const char *ext = c->profile == 1 ? "fp4" : "sgfp4";
    const char *prof = c->profile == 1 ? "v1" : "v2";
    char name[64], exp_name[64];
    snprintf(name, sizeof name, "c%05" PRIu64 ".%s", index, ext);
    snprintf(exp_name, sizeof exp_name, "c%05" PRIu64 ".f32", index);
    if (!write_file(dir, name, c->data, c->size) ||
        !write_file(dir, exp_name, expected, (size_t)(c->rows * c->cols * 4)))
        return 0;
    fprintf(index_file, "%s\t%s\t%" PRIu64 "\t%" PRIu64 "\tdecode\t%s\n", name, prof, c->rows,
            c->cols, exp_name);
    snprintf(name, sizeof name, "r%05" PRIu64 ".%s", index, ext);
    if (!write_file(dir, name, x->data, x->size))
        return 0;
    fprintf(index_file, "%s\t%s\t%" PRIu64 "\t%" PRIu64 "\treject\t%s\n", name, prof, x->rows,
            x->cols, sgfp4_status_name(x->want));
    return 1;
}

/* ---- one container ---- */

static int run_one(uint64_t index, const char *write_dir, FILE *index_file, uint64_t *stats)
{
    gen_rng r = {g_seed ^ (index * 0xD1B54A32D192ED03u)};
    (void)gen_next(&r);
    const int profile = gen_chance(&r, 1, 2) ? 1 : 2;
    gen_container c;
    const gen_params params = gen_corpus_params(profile);
    if (gen_generate(&c, &r, &params) != 0) {
        fprintf(stderr, "decodecorpus: out of memory\n");
        g_failures++;
        return 0;
    }
    stats[profile - 1]++;
    float *expected = malloc((size_t)(c.rows * c.cols) * sizeof *expected);
    int ok = expected != NULL;
    if (ok)
        gen_expected(&c, expected);

    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_profile open_profile =
        profile == 1 ? SGFP4_PROFILE_V1 : gen_chance(&r, 1, 2) ? SGFP4_PROFILE_AUTO
                                                                    : SGFP4_PROFILE_V2;
    const sgfp4_status s =
        ok ? sgfp4_tensor_open(c.data, c.size, open_profile, c.rows, c.cols, &t, NULL, &diag)
           : SGFP4_ERR_NOMEM;
    if (s != SGFP4_OK) {
        ok = failf(index, &c, "valid container rejected: %s [%s]", diag.message,
                   sgfp4_status_name(s));
    } else {
        const sgfp4_decode_options scalar =
            decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
        ok = check_info(index, &c, t) &&
             check_decode(index, &c, t, expected, &r, 0, SGFP4_DTYPE_F32, scalar) &&
             check_decode(index, &c, t, expected, &r, 0, SGFP4_DTYPE_F32, random_options(&r)) &&
             check_decode(index, &c, t, expected, &r, 1, SGFP4_DTYPE_F32, random_options(&r)) &&
             check_decode(index, &c, t, expected, &r, 2, SGFP4_DTYPE_F32, random_options(&r)) &&
             check_decode(index, &c, t, expected, &r, (int)gen_below(&r, 3),
                          gen_chance(&r, 1, 2) ? SGFP4_DTYPE_F16 : SGFP4_DTYPE_BF16,
                          random_options(&r));
    }
    sgfp4_tensor_close(t);

    corruption x = {0};
    if (ok && make_corruption(&c, &r, &x)) {
        ok = check_corruption(index, &c, &x);
        stats[2]++;
        if (ok && write_dir)
            ok = write_case(write_dir, index_file, index, &c, expected, &x) ||
                 (g_failures++, 0);
    }
    free(x.data);
    free(expected);
    gen_free(&c);
    return ok;
}

static int parse_u64(const char *text, uint64_t *v)
{
    char *end;
    errno = 0;
    const unsigned long long n = strtoull(text, &end, 0);
    if (errno || end == text || *end)
        return 0;
    *v = n;
    return 1;
}

int main(int argc, char **argv)
{
    uint64_t count = 2000, first = 0;
    const char *write_dir = NULL;
    g_seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-v") == 0) {
            g_verbose = 1;
        } else if (strcmp(a, "--seed") == 0 && v && parse_u64(v, &g_seed)) {
            i++;
        } else if (strcmp(a, "--count") == 0 && v && parse_u64(v, &count)) {
            i++;
        } else if (strcmp(a, "--first") == 0 && v && parse_u64(v, &first)) {
            i++;
        } else if (strcmp(a, "--write-dir") == 0 && v) {
            write_dir = v;
            i++;
        } else {
            fprintf(stderr, "usage: decodecorpus [--seed S] [--count N] [--first I] "
                            "[--write-dir DIR] [-v]\n");
            return 2;
        }
    }
    FILE *index_file = NULL;
    if (write_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/index.tsv", write_dir);
        index_file = fopen(path, "w");
        if (!index_file) {
            fprintf(stderr, "decodecorpus: cannot write %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    uint64_t stats[3] = {0, 0, 0}; /* v1, v2, corruptions */
    for (uint64_t n = 0; n < count && g_failures < MAX_FAILURES; n++)
        run_one(first + n, write_dir, index_file, stats);
    if (index_file)
        fclose(index_file);
    printf("decodecorpus: seed %" PRIu64 ", containers %" PRIu64 "..%" PRIu64 ": %" PRIu64
           " v1 + %" PRIu64 " v2 decoded bit for bit, %" PRIu64
           " corruptions rejected with the right status, %" PRIu64 " failures\n",
           g_seed, first, first + count - 1, stats[0], stats[1], stats[2], g_failures);
    return g_failures ? 1 : 0;
}
