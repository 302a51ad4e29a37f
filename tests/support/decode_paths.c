/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/decode_paths.h"

/* What output buffers are filled with, so that stray writes show. */
#define FILL 0xA5u
/* Bytes checked untouched after the last output row. */
#define TRAILER 64u

unsigned decode_rng_below(decode_rng *r, unsigned n)
{
    r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((r->state >> 33) % n);
}

unsigned decode_kernel_sets(const sgfp4_decode_kernels *out[DECODE_MAX_KERNEL_SETS])
{
    static const char *const names[DECODE_MAX_KERNEL_SETS] = {"generic", "neon", "avx2",
                                                              "avx512"};
    unsigned n = 0;
    for (unsigned i = 0; i < DECODE_MAX_KERNEL_SETS; i++) {
        const sgfp4_decode_kernels *k = sgfp4_decode_kernels_named(names[i]);
        if (k)
            out[n++] = k;
    }
    return n;
}

bool decode_reference_make(const sgfp4_tensor *t, decode_reference *ref)
{
    memset(ref, 0, sizeof *ref);
    for (int d = 0; d < 3; d++) {
        const size_t elem = sgfp4_dtype_size((sgfp4_dtype)d);
        ref->data[d] = malloc((size_t)(t->rows * t->cols) * elem);
        if (!ref->data[d]) {
            decode_reference_free(ref);
            return false;
        }
        const sgfp4_output out = {ref->data[d], (size_t)t->cols * elem, (sgfp4_dtype)d};
        sgfp4_scalar_decode_rows(t, 0, t->rows, &out);
    }
    return true;
}

void decode_reference_free(decode_reference *ref)
{
    for (int d = 0; d < 3; d++) {
        free(ref->data[d]);
        ref->data[d] = NULL;
    }
}

/* An output buffer: `rows` rows of a stride at least cols, at a random byte offset from a
 * 64-byte boundary (odd ones included), everything else FILL. */
typedef struct buffer {
    uint8_t *alloc, *base;
    size_t bytes, stride_bytes, row_bytes, rows;
    unsigned offset;
} buffer;

static bool buffer_make(decode_check *c, buffer *b, const sgfp4_tensor *t, sgfp4_dtype dtype,
                        size_t rows)
{
    static const unsigned offsets[] = {0, 0, 1, 2, 3, 4, 6, 8, 16, 32, 33, 63};
    const size_t elem = sgfp4_dtype_size(dtype);
    b->offset = offsets[decode_rng_below(&c->rng, sizeof offsets / sizeof offsets[0])];
    const size_t stride =
        (size_t)t->cols + (decode_rng_below(&c->rng, 3) ? 0 : decode_rng_below(&c->rng, 40));
    b->stride_bytes = stride * elem;
    b->row_bytes = (size_t)t->cols * elem;
    b->rows = rows;
    b->bytes = rows * b->stride_bytes;
    const size_t total = b->offset + b->bytes + TRAILER;
    b->alloc = aligned_alloc(64, (total + 63) / 64 * 64);
    if (!b->alloc) {
        snprintf(c->message, sizeof c->message, "out of memory for a %zu-byte output", total);
        return false;
    }
    memset(b->alloc, FILL, total);
    b->base = b->alloc + b->offset;
    return true;
}

static unsigned f16_subnormals(const uint8_t *halves, size_t bytes)
{
    unsigned n = 0;
    for (size_t i = 0; i + 1 < bytes; i += 2) {
        const unsigned h = halves[i] | (unsigned)halves[i + 1] << 8;
        n += (h & 0x7C00u) == 0 && (h & 0x3FFu) != 0;
    }
    return n;
}

/* Output row k must hold tensor row src_rows[k] of the reference; the bytes before the
 * first row, between rows and after the last one keep FILL. */
static bool buffer_check(decode_check *c, const buffer *b, const sgfp4_tensor *t,
                         const decode_reference *ref, sgfp4_dtype dtype,
                         const uint64_t *src_rows, const char *what)
{
    const char *const dtype_names[3] = {"f32", "f16", "bf16"};
    for (size_t k = 0; k < b->rows; k++) {
        const uint8_t *want = ref->data[dtype] + src_rows[k] * b->row_bytes;
        const uint8_t *got = b->base + k * b->stride_bytes;
        if (memcmp(want, got, b->row_bytes) != 0) {
            size_t i = 0;
            while (want[i] == got[i])
                i++;
            snprintf(c->message, sizeof c->message,
                     "%s: %llux%llu %s, stride %zu bytes, offset %u: output row %zu (tensor "
                     "row %llu) differs from the oracle at byte %zu (column %zu): got 0x%02x, "
                     "want 0x%02x",
                     what, (unsigned long long)t->rows, (unsigned long long)t->cols,
                     dtype_names[dtype], b->stride_bytes, b->offset, k,
                     (unsigned long long)src_rows[k], i, i / sgfp4_dtype_size(dtype), got[i],
                     want[i]);
            return false;
        }
        const size_t gap = k + 1 < b->rows ? b->stride_bytes - b->row_bytes : TRAILER;
        for (size_t i = 0; i < gap; i++)
            if (got[b->row_bytes + i] != FILL) {
                snprintf(c->message, sizeof c->message,
                         "%s: %llux%llu %s: write past output row %zu, at byte %zu after it",
                         what, (unsigned long long)t->rows, (unsigned long long)t->cols,
                         dtype_names[dtype], k, i);
                return false;
            }
        if (dtype == SGFP4_DTYPE_F16)
            c->f16_subnormals += f16_subnormals(got, b->row_bytes);
        c->bytes += b->row_bytes;
    }
    for (const uint8_t *p = b->alloc; p < b->base; p++)
        if (*p != FILL) {
            snprintf(c->message, sizeof c->message, "%s: write before output row 0", what);
            return false;
        }
    c->rows += b->rows;
    c->decodes++;
    return true;
}

bool decode_check_paths(decode_check *c, const sgfp4_tensor *t, const decode_reference *ref,
                        const sgfp4_decode_kernels *k, unsigned rounds)
{
    const size_t most = t->rows > 40 ? (size_t)t->rows : 40;
    uint64_t *rows = malloc(sizeof(uint64_t) * most);
    if (!rows) {
        snprintf(c->message, sizeof c->message, "out of memory for the row list");
        return false;
    }
    bool ok = true;
    for (unsigned round = 0; round < rounds && ok; round++) {
        const sgfp4_dtype dtype = (sgfp4_dtype)(round % 3);
        const bool streaming = (round % 3 + round / 3) % 2;
        const unsigned threads = c->thread_counts[decode_rng_below(&c->rng, c->thread_count_n)];
        char what[128];
        /* a row range: the whole tensor half of the time */
        uint64_t r0 = 0, r1 = t->rows;
        if (decode_rng_below(&c->rng, 2)) {
            r0 = decode_rng_below(&c->rng, (unsigned)t->rows);
            r1 = r0 + 1 + decode_rng_below(&c->rng, (unsigned)(t->rows - r0));
        }
        snprintf(what, sizeof what, "%s rows [%llu, %llu) threads=%u streaming=%d", k->name,
                 (unsigned long long)r0, (unsigned long long)r1, threads, (int)streaming);
        buffer b;
        if (!buffer_make(c, &b, t, dtype, (size_t)(r1 - r0))) {
            ok = false;
            break;
        }
        const sgfp4_output out = {b.base, b.stride_bytes, dtype};
        sgfp4_tiled_decode_rows(t, r0, r1, &out, k, threads, streaming);
        for (uint64_t r = r0; r < r1; r++)
            rows[r - r0] = r;
        ok = buffer_check(c, &b, t, ref, dtype, rows, what);
        free(b.alloc);
        if (!ok)
            break;

        /* a gather of random rows, repeats allowed */
        const size_t count = 1 + decode_rng_below(&c->rng, 40);
        for (size_t i = 0; i < count; i++)
            rows[i] = decode_rng_below(&c->rng, (unsigned)t->rows);
        snprintf(what, sizeof what, "%s gather of %zu rows threads=%u streaming=%d", k->name,
                 count, threads, (int)streaming);
        if (!buffer_make(c, &b, t, dtype, count)) {
            ok = false;
            break;
        }
        const sgfp4_output gout = {b.base, b.stride_bytes, dtype};
        sgfp4_tiled_decode_gather(t, rows, count, &gout, k, threads, streaming);
        ok = buffer_check(c, &b, t, ref, dtype, rows, what);
        free(b.alloc);
    }
    free(rows);
    return ok;
}

bool decode_check_leaf_list(const sgfp4_tensor *t, uint64_t b, const sgfp4_leaf_list *list,
                            unsigned got_n, char *message, size_t size)
{
    sgfp4_leaf_ref want[SGFP4_MAX_LEAVES];
    const unsigned n = sgfp4_block_leaf_refs(t, b, want);
    if (got_n != n || list->count != n) {
        snprintf(message, size, "block %llu: %u leaves listed, the container has %u",
                 (unsigned long long)b, got_n, n);
        return false;
    }
    for (unsigned k = 0; k < n; k++) {
        const unsigned cls = (unsigned)__builtin_ctz(want[k].size) - 2u;
        if (list->desc[k] != (cls << 16 | (want[k].y * 64u + want[k].x)) ||
            list->mode[k] != want[k].mode ||
            memcmp(&list->scale[k], &want[k].scale, 4) != 0 ||
            memcmp(&list->bias[k], &want[k].bias, 4) != 0 ||
            list->payload + list->offset[k] != want[k].payload) {
            snprintf(message, size, "block %llu leaf %u: listed otherwise than the container's",
                     (unsigned long long)b, k);
            return false;
        }
    }
    for (unsigned kind = 0; kind < SGFP4_LEAF_KINDS; kind++) {
        unsigned g = 0;
        for (unsigned k = 0; k < n; k++) {
            if (want[k].size != 4u << (kind / 2) || want[k].mode != kind % 2)
                continue;
            if (g >= list->kind_count[kind] || list->by_kind[kind][g++] != k) {
                snprintf(message, size, "block %llu kind %u: leaf %u not listed in order",
                         (unsigned long long)b, kind, k);
                return false;
            }
        }
        if (g != list->kind_count[kind]) {
            snprintf(message, size, "block %llu kind %u: %u listed, %u in the container",
                     (unsigned long long)b, kind, list->kind_count[kind], g);
            return false;
        }
    }
    return true;
}

bool decode_check_halves(void (*halves_to_floats)(const uint16_t *, size_t, float *),
                         const char *name, char *message, size_t size)
{
    static uint16_t halves[0x10000];
    static float got[0x10000];
    size_t count = 0;
    for (uint32_t h = 0; h < 0x10000u; h++)
        if (((h >> 10) & 0x1Fu) != 0x1Fu) /* Inf / NaN never reach decode */
            halves[count++] = (uint16_t)h;
    halves_to_floats(halves, count, got);
    for (size_t i = 0; i < count; i++) {
        const float want = sgfp4_half_to_float(halves[i]);
        if (memcmp(&want, &got[i], 4) != 0) {
            snprintf(message, size, "%s half 0x%04x -> f32: got 0x%08x, want 0x%08x", name,
                     halves[i], sgfp4_float_to_bits(got[i]), sgfp4_float_to_bits(want));
            return false;
        }
    }
    return true;
}
