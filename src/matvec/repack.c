/* The plan's repacked layout (matvec/repack.h): built from the container layer's leaf
 * listing, block by block in the order the strip loop visits them.
 * SPDX-License-Identifier: MIT */
#include "matvec/repack.h"

#include "format/bits.h"
#include "matvec/strip.h"

/* The code of the weight at (y, x) of a macroblock, inside `leaf` (as the oracle reads it). */
static int code_at(const sgfp4_leaf_ref *leaf, unsigned y, unsigned x)
{
    const unsigned i = (y - leaf->y) * leaf->size + (x - leaf->x);
    return leaf->mode == SGFP4_MODE_T158 ? sgfp4_t158_code(leaf->payload, i)
                                         : sgfp4_fp4_code(leaf->payload, i);
}

static void store_u16le(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* A leaf header's S and B halves (a v2 B with its flag bits masked; D1), little-endian. */
static void store_leaf_halves(uint8_t *s, uint8_t *b, uint32_t header, sgfp4_profile profile)
{
    store_u16le(s, header >> 16);
    store_u16le(b, header & (profile == SGFP4_PROFILE_V2 ? 0xFFF0u : 0xFFFFu));
}

/* Whether each of a group's 8 units (tile indices tile[4 p .. 4 p + 3]) lies in one leaf. */
static bool units_in_one_leaf(const uint8_t tile[SGFP4_RP_TILES])
{
    for (unsigned p = 0; p < 8; p++)
        for (unsigned k = 1; k < 4; k++)
            if (tile[4 * p + k] != tile[4 * p])
                return false;
    return true;
}

/* Lays out block b at out (NULL: only measures it); returns its bytes (a multiple of 64). */
static size_t repack_block(const sgfp4_tensor *t, uint64_t b, uint8_t *out)
{
    sgfp4_leaf_ref leaves[SGFP4_MAX_LEAVES];
    const unsigned n = sgfp4_block_leaf_refs(t, b, leaves);
    uint8_t owner[16][16]; /* the leaf of each 4x4 tile (a validated block's leaves tile it) */
    memset(owner, 0, sizeof owner);
    for (unsigned i = 0; i < n; i++) {
        const sgfp4_leaf_ref *l = &leaves[i];
        for (unsigned ty = l->y / 4u; ty < (l->y + l->size) / 4u; ty++)
            for (unsigned tx = l->x / 4u; tx < (l->x + l->size) / 4u; tx++)
                owner[ty][tx] = (uint8_t)i;
    }
    size_t pos = SGFP4_RP_CODES + SGFP4_RP_DIRECTORY;
    for (unsigned g = 0; g < 8; g++) {
        uint8_t table[SGFP4_RP_MAX_TABLE], tile[SGFP4_RP_TILES];
        unsigned count = 0;
        for (unsigned p = 0; p < 8; p++)
            for (unsigned h = 0; h < 2; h++)
                for (unsigned j = 0; j < 2; j++) {
                    const uint8_t leaf = owner[2 * g + h][2 * p + j];
                    unsigned k = 0;
                    while (k < count && table[k] != leaf)
                        k++;
                    if (k == count)
                        table[count++] = leaf;
                    tile[4 * p + 2 * h + j] = (uint8_t)k;
                }
        if (units_in_one_leaf(tile)) { /* count 0: the units' (S, B) pairs */
            if (out) {
                store_u16le(out + SGFP4_RP_CODES + 2 * g, (unsigned)pos);
                out[SGFP4_RP_CODES + 16 + g] = 0;
                for (unsigned p = 0; p < 8; p++)
                    store_leaf_halves(out + pos + 4 * p, out + pos + 4 * p + 2,
                                      leaves[table[tile[4 * p]]].header, t->profile);
            }
            pos += SGFP4_RP_PAIRS;
            continue;
        }
        if (out) {
            store_u16le(out + SGFP4_RP_CODES + 2 * g, (unsigned)pos);
            out[SGFP4_RP_CODES + 16 + g] = (uint8_t)count;
            memcpy(out + pos, tile, sizeof tile);
            for (unsigned k = 0; k < count; k++)
                store_leaf_halves(out + pos + SGFP4_RP_TILES + 2 * k,
                                  out + pos + SGFP4_RP_TILES + 2 * (count + k),
                                  leaves[table[k]].header, t->profile);
        }
        pos += SGFP4_RP_TILES + 4 * count;
    }
    const size_t bytes = (pos + 63u) & ~(size_t)63u;
    if (!out)
        return bytes;
    memset(out + pos, 0, bytes - pos);
    /* the block's u = code + 8, leaf by leaf (padding columns: code 0) */
    uint8_t u[SGFP4_MB][SGFP4_MB];
    for (unsigned i = 0; i < n; i++) {
        const sgfp4_leaf_ref *l = &leaves[i];
        for (unsigned y = 0; y < l->size; y++) {
            uint8_t *row = u[l->y + y] + l->x;
            if (l->mode == SGFP4_MODE_FP4) { /* nibble ^ 8 = code + 8 (D4) */
                const uint8_t *pairs = l->payload + y * l->size / 2u;
                for (unsigned x = 0; x < l->size; x += 2) {
                    row[x] = (uint8_t)((pairs[x / 2] & 15u) ^ 8u);
                    row[x + 1] = (uint8_t)((pairs[x / 2] >> 4) ^ 8u);
                }
            } else {
                for (unsigned x = 0; x < l->size; x++)
                    row[x] = (uint8_t)(code_at(l, l->y + y, l->x + x) + 8);
            }
        }
    }
    const uint64_t c0 = (b % t->tiles_x) * SGFP4_MB;
    for (unsigned x = 0; x < SGFP4_MB; x++)
        if (c0 + x >= t->cols)
            for (unsigned y = 0; y < SGFP4_MB; y++)
                u[y][x] = 8;
    for (unsigned g = 0; g < 8; g++)
        for (unsigned p = 0; p < 4; p++) {
            uint8_t *line = out + 256 * g + 64 * p; /* units p (low nibbles) and p + 4 */
            for (unsigned lane = 0; lane < 16; lane++) {
                const uint8_t *row = u[8 * g + lane / 2] + 8 * p + 4 * (lane % 2);
                for (unsigned m = 0; m < 4; m++)
                    line[4 * lane + m] = (uint8_t)(row[m] | row[32 + m] << 4);
            }
        }
    return bytes;
}

/* The blocks in the strip loop's order (strip_driver.h): strip by strip, each strip's blocks
 * in bit-reversed order of their column, the indices past the row skipped. */
typedef struct visit_order {
    const sgfp4_tensor *t;
    unsigned levels; /* log2 of the padded block count of a row */
    uint64_t by, k;  /* the next strip, and the next index of its bit-reversed walk */
} visit_order;

static visit_order visit_start(const sgfp4_tensor *t)
{
    visit_order v = {t, 0, 0, 0};
    while ((UINT64_C(1) << v.levels) < t->tiles_x && v.levels < 63)
        v.levels++;
    return v;
}

/* Sets *b to the next block in visit order; false after the last. */
static bool visit_next(visit_order *v, uint64_t *b)
{
    const uint64_t strips = v->t->blocks / v->t->tiles_x;
    while (v->by < strips) {
        if (v->k == UINT64_C(1) << v->levels) {
            v->by++;
            v->k = 0;
            continue;
        }
        const uint64_t bx = sgfp4_bit_reverse(v->k++, v->levels);
        if (bx < v->t->tiles_x) {
            *b = v->by * v->t->tiles_x + bx;
            return true;
        }
    }
    return false;
}

sgfp4_status sgfp4_matvec_repack_build(sgfp4_matvec_plan *plan)
{
    const sgfp4_tensor *t = plan->tensor;
    if (t->blocks > SIZE_MAX / sizeof(uint64_t))
        return SGFP4_ERR_NOMEM;
    uint64_t *offset = sgfp4_alloc_with(&t->allocator, (size_t)t->blocks * sizeof *offset);
    if (!offset)
        return SGFP4_ERR_NOMEM;
    uint64_t total = 0;
    visit_order order = visit_start(t);
    for (uint64_t b; visit_next(&order, &b);) {
        offset[b] = total;
        total += repack_block(t, b, NULL);
    }
    if (total > SIZE_MAX - 64) {
        sgfp4_free_with(&t->allocator, offset);
        return SGFP4_ERR_NOMEM;
    }
    uint8_t *raw = sgfp4_alloc_with(&t->allocator, (size_t)total + 64);
    if (!raw) {
        sgfp4_free_with(&t->allocator, offset);
        return SGFP4_ERR_NOMEM;
    }
    uint8_t *base = raw + (64 - (uintptr_t)raw % 64) % 64;
    order = visit_start(t);
    for (uint64_t b; visit_next(&order, &b);)
        (void)repack_block(t, b, base + offset[b]);
    plan->repack_alloc = raw;
    plan->repack = base;
    plan->repack_offset = offset;
    plan->repack_bytes = (size_t)total;
    plan->bytes += (size_t)total + 64 + (size_t)t->blocks * sizeof *offset;
    return SGFP4_OK;
}

void sgfp4_matvec_repack_free(sgfp4_matvec_plan *plan)
{
    const sgfp4_allocator *a = &plan->tensor->allocator;
    sgfp4_free_with(a, plan->repack_alloc);
    sgfp4_free_with(a, (void *)plan->repack_offset);
    plan->repack_alloc = NULL;
    plan->repack = NULL;
    plan->repack_offset = NULL;
}
