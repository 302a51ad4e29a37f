/* Acceptance checks of the two profiles (DECISIONS D2). Each validator reads only inside
 * [t->data, t->data + t->size), fills the statistics in t->info, and returns the status of
 * the first violated rule (with *diag filled) or SGFP4_OK.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CONTAINER_VALIDATE_H
#define SGFP4_CONTAINER_VALIDATE_H

#include <stdbool.h>

#include "container/tensor.h"
#include "format/leaf_geometry.h"

sgfp4_status sgfp4_validate_v1(sgfp4_tensor *t, sgfp4_diag *diag);
sgfp4_status sgfp4_validate_v2(sgfp4_tensor *t, sgfp4_diag *diag);

/* What places the leaves and payloads of a v2 record, as its check read it: the view keeps
 * a copy (tensor.h), so that no later change of the bytes moves a read. Each field is taken
 * from the one read of those bytes that the check's bounds were computed from. */
typedef struct sgfp4_record_form {
    unsigned layout;
    uint32_t map[3];  /* MIXED: the split map; zero otherwise */
    bool any_t158;    /* some leaf is T158: */
    uint32_t t158[8]; /* bit i % 32 of word i / 32: leaf i is T158 (all zero if none) */
} sgfp4_record_form;

/* The full check of v2 record b, which starts at absolute byte `rec` (validate_v2.c): every
 * rule of spec 22.8.2, in stream order, the first broken one named in *diag. On success *end
 * is the byte after its last payload, *form what places its leaves (form may be NULL) and
 * its leaves are counted in t->info. */
sgfp4_status sgfp4_v2_record_check(sgfp4_tensor *t, uint64_t b, uint64_t rec, uint64_t *end,
                                   sgfp4_record_form *form, sgfp4_diag *diag);

/* The most bytes a v2 record can span: sb_header, split map and 256 leaf headers (1040 with
 * their pad), then 256 4x4 FP4 payloads of 8 bytes padded to 16. */
#define SGFP4_V2_RECORD_MAX (1040u + 4096u)

/* What a v2 record that passed the screen holds. Leaf counts per size index (64x64 ... 4x4)
 * are packed in 9-bit fields (a record has at most 256 leaves). */
typedef struct sgfp4_record_stats {
    uint64_t end; /* absolute byte after its last payload */
    unsigned layout, leaves;
    uint64_t counts;      /* leaves per size index, packed */
    uint64_t t158_counts; /* of those, in T158 mode, packed */
    sgfp4_record_form form;
} sgfp4_record_stats;
#define SGFP4_RECORD_COUNT_FIELD(size_index, n) ((uint64_t)(n) << (9 * (size_index)))
#define SGFP4_RECORD_COUNT(packed, size_index) ((unsigned)((packed) >> (9 * (size_index))) & 511u)

/* The v2 fast path (screen_v2.c), in two stages so that a loop over records can run the
 * first a few records ahead of the second: the memory the second reads is then on its way.
 * Together they prove that a record keeps every rule that the full check of that record
 * applies, or say that they cannot (a broken rule, or a record that starts less than
 * SGFP4_V2_RECORD_MAX bytes before the stream's end): then the full check decides and names
 * the first broken rule. They read only inside the container. */
typedef struct sgfp4_record_shape {
    uint64_t rec;        /* where the record starts (absolute byte) */
    bool screenable;     /* false: the full check decides */
    /* its first bytes as read once: the sb_header and split map, which both stages work on
     * (and the next 8 bytes, which the walks' 8-byte loads reach and ignore) */
    uint8_t head[24];
    unsigned layout, leaves;
    uint64_t headers, payloads; /* where its leaf headers and payloads start */
    uint64_t counts;     /* leaves per size index, packed */
    uint32_t fp4_bytes;  /* its payload bytes if every leaf is FP4 */
    unsigned quad_nodes; /* 16x16 nodes with 4x4 leaves: */
    struct {
        uint16_t at;      /* their payloads' offset from `payloads` if all leaves are FP4 */
        uint8_t children; /* bit c: 8x8 child c is four 4x4 leaves */
    } quad_node[16];
} sgfp4_record_shape;

/* Stage 1: the sb_header and split map of the record at absolute byte `rec` (any value).
 * Requests the cache lines stage 2 will read. */
void sgfp4_v2_record_shape(const sgfp4_tensor *t, uint64_t rec, sgfp4_record_shape *shape);
/* Stage 2: true when the record of `shape` keeps every rule, with *stats filled. */
bool sgfp4_v2_record_screen(const sgfp4_tensor *t, const sgfp4_record_shape *shape,
                            sgfp4_record_stats *stats);

#endif
