/* The loop every fast matvec kernel set shares: the rows of one macroblock row (a "strip"),
 * block after block in the order of D8's block tree, with a stack of partial sums.
 *
 * D8 sums a row's block partials t_0 .. t_{n-1} with a tree that first pairs block i with
 * block i + P/2, so a left-to-right pass would have to keep every partial. The same tree
 * evaluated depth-first visits the blocks in bit-reversed order (0, P/2, P/4, 3P/4, ... for
 * P a power of two; indices past n are D8's +0 padding) and merges like a binary counter:
 * after the k-th visit, one merge (entry below + top) for every trailing 1 bit of k. Every
 * step of D8's tree but the last adds indices of equal parity, so the tree of v is
 * fl32(tree(even indices) + tree(odd indices)), which is what the counter computes (the
 * scalar oracle evaluates the same recursion, matvec_scalar.c). The stack holds at most
 * log2(P) + 1 entries of 64 rows per vector.
 *
 * Vectors go through in chunks of SGFP4_MATVEC_CHUNK (or a set's MV_WIDE_CHUNK where its
 * mv_wide() allows, strip_driver.h): each chunk is one pass over the strip's blocks (a strip
 * of 4096 columns at 4.5 bits per weight is 147 KB, in L2 for the passes after the first),
 * so that the per-block tiles of a chunk stay in L1, and each block's weights are unpacked
 * once for the chunk's vectors.
 *
 * A kernel set includes this header, defines
 *   MV_FN                       its function attributes (static + target)
 *   mv_work                     its per-strip scratch type (tiles, leaf list), on the stack
 *   mv_block(s, bx, t, work)    block partials t[v][r] = t_bx of row r (rows of the groups
 *                               [s->g0, s->g1)) for vectors s->n0 + v, v < s->nv
 *   mv_add(a, b, count)         a[i] = fl32(a[i] + b[i]) for i < count (a multiple of 8)
 * then includes matvec/strip_driver.h, which defines mv_strip() from them: the body of its
 * rows_q8 / rows_float kernels.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MATVEC_STRIP_H
#define SGFP4_MATVEC_STRIP_H

#include "matvec/matvec_internal.h"

/* Vectors per pass over a strip. */
#define SGFP4_MATVEC_CHUNK 4u
/* Stack entries the driver holds: enough for 2^24 blocks per row (10^9 columns); wider
 * tensors (which no memory holds today) run the scalar oracle instead. */
#define SGFP4_MATVEC_STACK (24u + 1u)

/* What mv_block() computes: one chunk of vectors over 8-row groups [g0, g1) of a strip. */
typedef struct sgfp4_matvec_strip {
    const sgfp4_matvec_plan *plan;
    const sgfp4_tensor *t;
    const sgfp4_matvec_x *x;
    bool class_a;
    uint64_t by;    /* the macroblock row */
    unsigned g0, g1;
    unsigned n0, nv;
} sgfp4_matvec_strip;

/* k's lowest `bits` bits in reverse order. */
static inline uint64_t sgfp4_bit_reverse(uint64_t k, unsigned bits)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < bits; i++, k >>= 1)
        r = r << 1 | (k & 1u);
    return r;
}

/* Reads one byte of every 64-byte line that [p, end) touches (demand loads, in address
 * order, which the hardware prefetchers follow). Only bytes inside [p, end) are read. */
static inline void sgfp4_matvec_touch(const uint8_t *p, const uint8_t *end)
{
    while (p < end) {
        (void)*(const volatile uint8_t *)p; /* a volatile read is never dropped */
        p = (const uint8_t *)(((uintptr_t)p | (uintptr_t)63) + 1);
    }
}

/* Brings strip by's bytes into the caches before its blocks are computed: the loop visits
 * them in bit-reversed order, which the hardware prefetchers cannot follow, and software
 * prefetches alone do not keep up where one sequential pass over the strip does
 * (docs/notes/2026-12-matvec-experiments.md). v2: the record places (the view's copy), the
 * strip's part of the plan's table and its records (one run: records lie in block order); v1: headers, payload
 * offsets (the view's copy) and each payload. */
static inline void sgfp4_matvec_touch_strip(const sgfp4_matvec_plan *plan, uint64_t by)
{
    const sgfp4_tensor *t = plan->tensor;
    const uint8_t *d = t->data;
    const uint64_t b0 = by * t->tiles_x, b1 = b0 + t->tiles_x;
    if (t->profile == SGFP4_PROFILE_V1) {
        sgfp4_matvec_touch(d + 4 * b0, d + 4 * b1);
        sgfp4_matvec_touch((const uint8_t *)(t->v1_offsets + b0),
                           (const uint8_t *)(t->v1_offsets + b1));
        for (uint64_t b = b0; b < b1; b++) {
            const uint8_t *payload = sgfp4_v1_payload(t, b);
            sgfp4_matvec_touch(payload, payload + SGFP4_V1_PAYLOAD);
        }
        return;
    }
    sgfp4_matvec_touch((const uint8_t *)(t->records + b0), (const uint8_t *)(t->records + b1));
    const sgfp4_matvec_block_leaves *first = &plan->blocks[b0];
    sgfp4_matvec_touch((const uint8_t *)first, (const uint8_t *)(first + t->tiles_x));
    const uint64_t e_end = b1 < t->blocks ? first[t->tiles_x].first : plan->entry_count;
    if (plan->entries && first->first < e_end)
        sgfp4_matvec_touch((const uint8_t *)(plan->entries + first->first),
                           (const uint8_t *)(plan->entries + e_end));
    const uint8_t *begin = sgfp4_record_start(t, b0);
    const uint8_t *end = b1 < t->blocks ? sgfp4_record_start(t, b1) : d + t->size;
    if (begin < end)
        sgfp4_matvec_touch(begin, end);
}

/* The bytes of strip by that its touch pass reads, as three runs (v2: its part of the plan's
 * block list, of the plan's leaf table, its records; v1: its headers, its payload offsets
 * (the view's copy), and its payloads from the first block's to the end of the last's when
 * they lie in block order, as the library's writers put them, else an empty run). Every run
 * lies inside the tensor, its copy of the places or the plan. */
#define SGFP4_MATVEC_AHEAD ((size_t)256 << 10)
typedef struct sgfp4_matvec_strip_bytes {
    const uint8_t *begin[3], *end[3];
} sgfp4_matvec_strip_bytes;

static inline void sgfp4_matvec_strip_bytes_get(const sgfp4_matvec_plan *plan, uint64_t by,
                                                sgfp4_matvec_strip_bytes *sb)
{
    const sgfp4_tensor *t = plan->tensor;
    const uint8_t *d = t->data;
    const uint64_t b0 = by * t->tiles_x, b1 = b0 + t->tiles_x;
    if (t->profile == SGFP4_PROFILE_V1) {
        sb->begin[0] = d + 4 * b0;
        sb->end[0] = d + 4 * b1;
        sb->begin[1] = (const uint8_t *)(t->v1_offsets + b0);
        sb->end[1] = (const uint8_t *)(t->v1_offsets + b1);
        const uint32_t first = t->v1_offsets[b0] & ~UINT32_C(0xF);
        const uint32_t last = t->v1_offsets[b1 - 1] & ~UINT32_C(0xF);
        sb->begin[2] = sb->end[2] = d;
        if (first <= last) {
            sb->begin[2] = d + 8 * t->blocks + first;
            const uint64_t end = 8 * t->blocks + (uint64_t)last + SGFP4_V1_PAYLOAD;
            sb->end[2] = d + (end < t->size ? end : t->size);
        }
        return;
    }
    const sgfp4_matvec_block_leaves *bl = &plan->blocks[b0];
    sb->begin[0] = (const uint8_t *)bl;
    sb->end[0] = (const uint8_t *)(bl + t->tiles_x);
    const uint64_t e_end = b1 < t->blocks ? bl[t->tiles_x].first : plan->entry_count;
    sb->begin[1] = sb->end[1] = sb->begin[0];
    if (plan->entries && bl->first < e_end) {
        sb->begin[1] = (const uint8_t *)(plan->entries + bl->first);
        sb->end[1] = (const uint8_t *)(plan->entries + e_end);
    }
    sb->begin[2] = sgfp4_record_start(t, b0);
    sb->end[2] = b1 < t->blocks ? sgfp4_record_start(t, b1) : d + t->size;
    /* nothing for a long strip: the strip being computed and the next one must fit in the
     * L2 together (docs/notes/2026-12-matvec-experiments.md) */
    if (sb->end[2] > sb->begin[2] && (size_t)(sb->end[2] - sb->begin[2]) > SGFP4_MATVEC_AHEAD)
        for (unsigned i = 0; i < 3; i++)
            sb->end[i] = sb->begin[i];
}

/* Software prefetches (into L2 and up) of slice k of 2^levels of each run of sb, one per
 * 64-byte line: spread over a strip's block visits, they bring the next strip in while this
 * one is computed, and its touch pass then finds its lines in the caches. The slice bounds
 * are shifts: a division per slice cost more than the prefetches saved. */
static inline void sgfp4_matvec_prefetch_slice(const sgfp4_matvec_strip_bytes *sb, uint64_t k,
                                               unsigned levels)
{
#if defined(__GNUC__)
    for (unsigned i = 0; i < 3; i++) {
        const uintptr_t a = (uintptr_t)sb->begin[i] & ~(uintptr_t)63;
        if ((uintptr_t)sb->end[i] <= (uintptr_t)sb->begin[i])
            continue;
        const uint64_t lines = ((uintptr_t)sb->end[i] - a + 63) / 64;
        for (uint64_t l = lines * k >> levels; l < lines * (k + 1) >> levels; l++)
            __builtin_prefetch((const void *)(a + 64 * l), 0, 2); /* never faults */
    }
#else
    (void)sb, (void)k, (void)levels;
#endif
}

#endif
