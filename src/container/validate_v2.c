/* v2 (`.sgfp4`) acceptance: the stream framing of spec §22.8.1 and every record of §22.8.2,
 * checked against the rules of DECISIONS D2 in stream order.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "common/compiler.h"
#include "container/affine.h"
#include "common/diag.h"
#include "container/validate.h"
#include "format/leaf_geometry.h"

typedef unsigned long long ull;

/* Returns the index of the first non-zero byte in [p, p + n), or n if all are zero. */
static uint64_t first_nonzero(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i])
            return i;
    return n;
}

static sgfp4_status validate_stream_header(sgfp4_tensor *t, sgfp4_diag *diag)
{
    const uint8_t *d = t->data;
    if (t->size < SGFP4_V2_FIXED_HEADER)
        return sgfp4_fail(diag, SGFP4_ERR_TRUNCATED, (int64_t)t->size, -1, -1,
                          "v2 stream of %llu bytes is shorter than its 16-byte header",
                          (ull)t->size);
    if (d[0] != 'S' || d[1] != 'G' || d[2] != 'F' || d[3] != '4')
        return sgfp4_fail(diag, SGFP4_ERR_V2_MAGIC, 0, -1, -1,
                          "v2 magic at byte 0 is %02x %02x %02x %02x, not 'SGF4'", d[0], d[1],
                          d[2], d[3]);
    if (d[4] != SGFP4_V2_VERSION)
        return sgfp4_fail(diag, SGFP4_ERR_V2_VERSION, 4, -1, -1,
                          "v2 version at byte 4 is 0x%02x, not 0x02", d[4]);
    const uint64_t pad_at = 9 + first_nonzero(d + 9, 7);
    if (pad_at < 16)
        return sgfp4_fail(diag, SGFP4_ERR_V2_HEADER_PAD, (int64_t)pad_at, -1, -1,
                          "v2 header pad byte %llu is 0x%02x, not zero", (ull)pad_at, d[pad_at]);
    const uint32_t B = sgfp4_load_u32le(d + 5);
    if (B != t->blocks)
        return sgfp4_fail(diag, SGFP4_ERR_V2_BLOCK_COUNT, 5, -1, -1,
                          "v2 block count at byte 5 is %u; shape %llux%llu needs %llu", B,
                          (ull)t->rows, (ull)t->cols, (ull)t->blocks);
    const uint64_t table_end = SGFP4_V2_FIXED_HEADER + 4 * (uint64_t)B;
    t->record_base = sgfp4_align16(table_end);
    if (t->size < t->record_base)
        return sgfp4_fail(diag, SGFP4_ERR_TRUNCATED, (int64_t)t->size, -1, -1,
                          "v2 stream of %llu bytes ends inside its offset table (needs %llu)",
                          (ull)t->size, (ull)t->record_base);
    const uint64_t table_pad_at =
        table_end + first_nonzero(d + table_end, t->record_base - table_end);
    if (table_pad_at < t->record_base)
        return sgfp4_fail(diag, SGFP4_ERR_V2_TABLE_PAD, (int64_t)table_pad_at, -1, -1,
                          "v2 offset-table pad byte %llu is 0x%02x, not zero",
                          (ull)table_pad_at, d[table_pad_at]);
    return SGFP4_OK;
}

/* The leaves of v2 record b: each header at `headers` (flags, affine fields) and its padded
 * payload, the first at *payload; on success *payload is the end of the last one, and the
 * leaves are counted into t->info. */
static sgfp4_status leaves_check(sgfp4_tensor *t, uint64_t b, const sgfp4_leaf_pos *leaves,
                                 unsigned n, uint64_t headers, sgfp4_record_form *form,
                                 uint64_t *payload_at, sgfp4_diag *diag)
{
    const uint8_t *d = t->data;
    const uint64_t size = t->size;
    const int64_t blk = (int64_t)b;
    uint64_t payload = *payload_at;
    for (unsigned i = 0; i < n; i++) {
        const uint64_t at = headers + 4 * (uint64_t)i;
        const uint32_t h = sgfp4_load_u32le(d + at);
        if (h & 0xEu)
            return sgfp4_fail(diag, SGFP4_ERR_V2_LEAF_FLAGS, (int64_t)at, blk, (int32_t)i,
                              "v2 record %llu leaf %u: header 0x%08x at byte %llu has "
                              "reserved flag bits 1-3 set",
                              (ull)b, i, h, (ull)at);
        const sgfp4_status s = sgfp4_affine_check(h, 0xFFF0u);
        if (s != SGFP4_OK) {
            char where[64];
            snprintf(where, sizeof where, "v2 record %llu leaf %u:", (ull)b, i);
            return sgfp4_affine_fail(s, h, 0xFFF0u, (int64_t)at, blk, (int32_t)i, where, diag);
        }
        const unsigned mode = h & 1u;
        form->t158[i / 32] |= (uint32_t)mode << (i % 32);
        form->any_t158 = form->any_t158 || mode;
        const uint64_t bytes = sgfp4_payload_bytes(leaves[i].size, mode);
        const uint64_t padded = sgfp4_align16(bytes);
        if (size - payload < padded)
            return sgfp4_fail(diag, SGFP4_ERR_V2_RECORD_BOUNDS, (int64_t)payload, blk,
                              (int32_t)i,
                              "v2 record %llu leaf %u: %llu-byte payload at byte %llu runs "
                              "past the end of the %llu-byte stream",
                              (ull)b, i, (ull)padded, (ull)payload, (ull)size);
        const uint64_t pad_at = bytes + first_nonzero(d + payload + bytes, padded - bytes);
        if (pad_at < padded)
            return sgfp4_fail(diag, SGFP4_ERR_V2_PAYLOAD_PAD, (int64_t)(payload + pad_at), blk,
                              (int32_t)i,
                              "v2 record %llu leaf %u: payload pad byte %llu is 0x%02x, not "
                              "zero",
                              (ull)b, i, (ull)(payload + pad_at), d[payload + pad_at]);
        const unsigned si = sgfp4_size_index(leaves[i].size);
        t->info.leaves_by_size[si]++;
        t->info.leaves_by_size_mode[si][mode]++;
        t->info.leaves_by_mode[mode]++;
        payload += padded;
    }
    *payload_at = payload;
    return SGFP4_OK;
}

/* The split map of MIXED record b at rec + 4: walked into leaves[0..*n), kept in form->map. */
static sgfp4_status split_map_check(const sgfp4_tensor *t, uint64_t b, uint64_t rec,
                                    sgfp4_leaf_pos *leaves, unsigned *n,
                                    sgfp4_record_form *form, sgfp4_diag *diag)
{
    const uint8_t *d = t->data;
    const uint64_t size = t->size;
    const int64_t blk = (int64_t)b;
    if (size - rec < 16)
        return sgfp4_fail(diag, SGFP4_ERR_V2_RECORD_BOUNDS, (int64_t)rec + 4, blk, -1,
                          "v2 record %llu: split map at byte %llu lies past the end of "
                          "the stream",
                          (ull)b, (ull)rec + 4);
    const uint32_t words[3] = {sgfp4_load_u32le(d + rec + 4), sgfp4_load_u32le(d + rec + 8),
                               sgfp4_load_u32le(d + rec + 12)};
    unsigned bits_used;
    const sgfp4_split_result r = sgfp4_split_walk(words, leaves, n, &bits_used);
    if (r == SGFP4_SPLIT_OVERRUN)
        return sgfp4_fail(diag, SGFP4_ERR_V2_SPLIT_OVERRUN, (int64_t)rec + 4, blk, -1,
                          "v2 record %llu: split map at byte %llu reads past bit 84",
                          (ull)b, (ull)rec + 4);
    if (r == SGFP4_SPLIT_TRAILING)
        return sgfp4_fail(diag, SGFP4_ERR_V2_SPLIT_TRAILING, (int64_t)rec + 4, blk, -1,
                          "v2 record %llu: split map at byte %llu (%08x %08x %08x) has "
                          "bits set after bit %u, the last one used",
                          (ull)b, (ull)rec + 4, words[0], words[1], words[2],
                          bits_used ? bits_used - 1 : 0);
    memcpy(form->map, words, sizeof words);
    return SGFP4_OK;
}

sgfp4_status sgfp4_v2_record_check(sgfp4_tensor *t, uint64_t b, uint64_t rec, uint64_t *end,
                                   sgfp4_record_form *form, sgfp4_diag *diag)
{
    sgfp4_record_form unused;
    if (!form)
        form = &unused;
    memset(form, 0, sizeof *form);
    const uint8_t *d = t->data;
    const uint64_t size = t->size;
    const int64_t blk = (int64_t)b;
    if (rec > size || size - rec < 4) {
        /* The offending field is the record's entry in the offset table: `rec` itself may
         * lie far past the end, and diag offsets always point into the container. */
        const uint64_t entry = SGFP4_V2_FIXED_HEADER + 4 * b;
        return sgfp4_fail(diag, SGFP4_ERR_V2_RECORD_BOUNDS, (int64_t)entry, blk, -1,
                          "v2 record %llu (offset-table entry at byte %llu) starts at byte "
                          "%llu: its sb_header lies past the end of the %llu-byte stream",
                          (ull)b, (ull)entry, (ull)rec, (ull)size);
    }
    const uint32_t sb = sgfp4_load_u32le(d + rec);
    if (sb >> 3)
        return sgfp4_fail(diag, SGFP4_ERR_V2_SB_RESERVED, (int64_t)rec, blk, -1,
                          "v2 record %llu at byte %llu: sb_header 0x%08x has reserved bits "
                          "3-31 set",
                          (ull)b, (ull)rec, sb);
    const unsigned layout = sb & 7u;
    if (layout > 5)
        return sgfp4_fail(diag, SGFP4_ERR_V2_LAYOUT, (int64_t)rec, blk, -1,
                          "v2 record %llu at byte %llu: layout %u is not 0..5", (ull)b,
                          (ull)rec, layout);
    form->layout = layout;

    sgfp4_leaf_pos leaves[SGFP4_MAX_LEAVES];
    unsigned n;
    uint64_t headers = rec + 4;
    if (layout == SGFP4_LAYOUT_MIXED) {
        const sgfp4_status s = split_map_check(t, b, rec, leaves, &n, form, diag);
        if (s != SGFP4_OK)
            return s;
        headers += 12;
    } else {
        n = sgfp4_uniform_leaves(layout, leaves);
    }

    const uint64_t headers_end = headers + 4 * (uint64_t)n;
    const uint64_t payloads = rec + sgfp4_align16(headers_end - rec);
    if (payloads > size)
        return sgfp4_fail(diag, SGFP4_ERR_V2_RECORD_BOUNDS, (int64_t)headers, blk, -1,
                          "v2 record %llu: %u leaf headers at byte %llu (with pad to byte "
                          "%llu) run past the end of the %llu-byte stream",
                          (ull)b, n, (ull)headers, (ull)payloads, (ull)size);

    uint64_t payload = payloads;
    const sgfp4_status s = leaves_check(t, b, leaves, n, headers, form, &payload, diag);
    if (s != SGFP4_OK)
        return s;
    const uint64_t pad_at = headers_end + first_nonzero(d + headers_end, payloads - headers_end);
    if (pad_at < payloads)
        return sgfp4_fail(diag, SGFP4_ERR_V2_LEAF_HEADER_PAD, (int64_t)pad_at, blk, -1,
                          "v2 record %llu: pad byte %llu after the leaf headers is 0x%02x, "
                          "not zero",
                          (ull)b, (ull)pad_at, d[pad_at]);
    t->info.leaves += n;
    t->info.records_by_layout[layout]++;
    *end = payload;
    return SGFP4_OK;
}

/* The fast path runs its first stage this many records ahead of its second, and requests
 * the bytes of a record's head (sb_header, split map, leaf headers) this many records ahead
 * of the first stage: in a large tensor a record's headers sit kilobytes apart, so each
 * would otherwise wait for memory in turn. */
#define SHAPE_AHEAD 4
#define HEAD_LINES 4

/* Where record b starts, from its offset-table entry (checked only when b is reached). */
static inline uint64_t record_at(const sgfp4_tensor *t, uint64_t b)
{
    return t->record_base + sgfp4_load_u32le(t->data + SGFP4_V2_FIXED_HEADER + 4 * b);
}

/* The leaves of the records that passed the screen, summed in the loop (not in t->info, which
 * the compiler must keep in memory) and added to t->info at the end. */
typedef struct screened {
    uint64_t by_size[5], t158_by_size[5], records_by_layout[6];
} screened;

static void screened_add(screened *sum, const sgfp4_record_stats *r)
{
    for (unsigned s = 0; s < 5; s++)
        sum->by_size[s] += SGFP4_RECORD_COUNT(r->counts, s);
    if (r->t158_counts)
        for (unsigned s = 0; s < 5; s++)
            sum->t158_by_size[s] += SGFP4_RECORD_COUNT(r->t158_counts, s);
    sum->records_by_layout[r->layout]++;
}

/* Adds the screened records' leaves to t->info, as sgfp4_v2_record_check() counts them. */
static void screened_count(sgfp4_tensor *t, const screened *sum)
{
    sgfp4_tensor_info *info = &t->info;
    for (unsigned s = 0; s < 5; s++) {
        const uint64_t all = sum->by_size[s], t158 = sum->t158_by_size[s];
        info->leaves += all;
        info->leaves_by_size[s] += all;
        info->leaves_by_size_mode[s][SGFP4_MODE_FP4] += all - t158;
        info->leaves_by_size_mode[s][SGFP4_MODE_T158] += t158;
        info->leaves_by_mode[SGFP4_MODE_FP4] += all - t158;
        info->leaves_by_mode[SGFP4_MODE_T158] += t158;
    }
    for (unsigned l = 0; l < 6; l++)
        info->records_by_layout[l] += sum->records_by_layout[l];
}

/* The view's copy of the record places (tensor.h): t->records, and t->modes, which holds
 * `count` entries of `capacity` and grows as records with T158 leaves come. */
typedef struct mode_pool {
    uint64_t count, capacity;
} mode_pool;

static sgfp4_status places_begin(sgfp4_tensor *t, mode_pool *pool, sgfp4_diag *diag)
{
    pool->count = 1;
    /* room for every record of a tensor of up to 4096 blocks (128 KiB); larger ones grow */
    pool->capacity = (t->blocks <= 4096 ? t->blocks : 4096) + 1;
    t->records = sgfp4_alloc_with(&t->allocator, (size_t)t->blocks * sizeof *t->records);
    t->modes = sgfp4_alloc_with(&t->allocator, (size_t)pool->capacity * sizeof *t->modes);
    if (!t->records || !t->modes)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "cannot allocate the copy of %llu record places", (ull)t->blocks);
    memset(&t->modes[0], 0, sizeof t->modes[0]); /* every leaf FP4 */
    return SGFP4_OK;
}

/* Keeps record b's place: its offset (as validated) and form. */
static sgfp4_status keep_place(sgfp4_tensor *t, uint64_t b, uint32_t offset,
                               const sgfp4_record_form *form, mode_pool *pool,
                               sgfp4_diag *diag)
{
    sgfp4_record_place *place = &t->records[b];
    place->at = offset | form->layout;
    memcpy(place->map, form->map, sizeof place->map);
    place->modes = 0;
    if (!form->any_t158)
        return SGFP4_OK;
    if (pool->count > UINT32_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, (int64_t)b, -1,
                          "more than 2^32 v2 records with T158 leaves");
    if (pool->count == pool->capacity) {
        const uint64_t capacity = 2 * pool->capacity;
        sgfp4_leaf_modes *grown =
            capacity <= SIZE_MAX / sizeof *grown
                ? sgfp4_alloc_with(&t->allocator, (size_t)capacity * sizeof *grown)
                : NULL;
        if (!grown)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, (int64_t)b, -1,
                              "cannot allocate the copy of the leaf modes of %llu records",
                              (ull)capacity);
        memcpy(grown, t->modes, (size_t)pool->count * sizeof *grown);
        sgfp4_free_with(&t->allocator, t->modes);
        t->modes = grown;
        pool->capacity = capacity;
    }
    memcpy(t->modes[pool->count].t158, form->t158, sizeof form->t158);
    place->modes = (uint32_t)pool->count++;
    return SGFP4_OK;
}

sgfp4_status sgfp4_validate_v2(sgfp4_tensor *t, sgfp4_diag *diag)
{
    sgfp4_status s = validate_stream_header(t, diag);
    if (s != SGFP4_OK)
        return s;
    mode_pool pool;
    if ((s = places_begin(t, &pool, diag)) != SGFP4_OK)
        return s;
    uint64_t furthest = t->record_base;
    uint32_t previous = 0;
    screened sum;
    memset(&sum, 0, sizeof sum);
    sgfp4_record_shape ahead[SHAPE_AHEAD];
    for (uint64_t b = 0; b < SHAPE_AHEAD && b < t->blocks; b++)
        sgfp4_v2_record_shape(t, record_at(t, b), &ahead[b]);
    for (uint64_t b = 0; b < t->blocks; b++) {
        const uint64_t at = SGFP4_V2_FIXED_HEADER + 4 * b;
        const uint32_t offset = sgfp4_load_u32le(t->data + at);
        if (offset % 16)
            return sgfp4_fail(diag, SGFP4_ERR_V2_OFFSET_ALIGN, (int64_t)at, (int64_t)b, -1,
                              "v2 record %llu: offset %u (at byte %llu) is not a multiple of "
                              "16",
                              (ull)b, offset, (ull)at);
        if (b > 0 && offset <= previous)
            return sgfp4_fail(diag, SGFP4_ERR_V2_OFFSET_ORDER, (int64_t)at, (int64_t)b, -1,
                              "v2 record %llu: offset %u (at byte %llu) is not greater than "
                              "the previous record's %u",
                              (ull)b, offset, (ull)at, previous);
        previous = offset;
        const uint64_t rec = t->record_base + offset;
        sgfp4_record_shape *shape = &ahead[b % SHAPE_AHEAD];
        uint64_t end;
        sgfp4_record_stats stats;
        const sgfp4_record_form *form = &stats.form;
        if (shape->rec == rec && sgfp4_v2_record_screen(t, shape, &stats)) {
            screened_add(&sum, &stats);
            end = stats.end;
        } else if ((s = sgfp4_v2_record_check(t, b, rec, &end, &stats.form, diag)) !=
                   SGFP4_OK) {
            return s;
        }
        if ((s = keep_place(t, b, offset, form, &pool, diag)) != SGFP4_OK)
            return s;
        if (b + SHAPE_AHEAD < t->blocks)
            sgfp4_v2_record_shape(t, record_at(t, b + SHAPE_AHEAD), shape);
        if (b + 2 * SHAPE_AHEAD < t->blocks) {
            const uint64_t head = record_at(t, b + 2 * SHAPE_AHEAD);
            if (head < t->size && t->size - head >= 64 * HEAD_LINES)
                for (unsigned line = 0; line < HEAD_LINES; line++)
                    SGFP4_PREFETCH(t->data + head + 64 * line);
        }
        if (end > furthest)
            furthest = end;
    }
    screened_count(t, &sum);
    if (pool.count < pool.capacity) { /* the view keeps exactly what it needs */
        sgfp4_leaf_modes *fitted =
            sgfp4_alloc_with(&t->allocator, (size_t)pool.count * sizeof *fitted);
        if (fitted) {
            memcpy(fitted, t->modes, (size_t)pool.count * sizeof *fitted);
            sgfp4_free_with(&t->allocator, t->modes);
            t->modes = fitted;
        }
    }
    if (furthest != t->size)
        return sgfp4_fail(diag, SGFP4_ERR_V2_TRAILING_BYTES, (int64_t)furthest, -1, -1,
                          "v2 stream has %llu bytes after the end of its last record at byte "
                          "%llu",
                          (ull)(t->size - furthest), (ull)furthest);
    return SGFP4_OK;
}
