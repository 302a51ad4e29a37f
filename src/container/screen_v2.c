/* The fast path of v2 acceptance: proving that a record keeps every rule of the full check
 * (sgfp4_v2_record_check) without locating failures. Open runs it once per record of every
 * tensor a runtime loads, so the work per leaf is a few vector bit tests of its header, and
 * the payload sizes come from the split map's 16x16 nodes, not leaf by leaf, when a record
 * has no T158 leaf (the common case). It runs in two stages (validate.h), the split map ahead
 * of the rest, so that the 4x4 leaves' pads it reads are on their way from memory. Whenever
 * anything looks wrong it answers "not proven" and the full check, which names the first
 * broken rule in stream order, decides. It reads only inside the container.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/compiler.h"
#include "container/validate.h"

/* Padded payload bytes per size index (64x64 ... 4x4) and mode (FP4, T158). */
static const uint16_t padded_bytes[5][2] = {{2048, 1024}, {512, 256}, {128, 64}, {32, 16},
                                            {16, 16}};

#define COUNT(size_index, n) SGFP4_RECORD_COUNT_FIELD(size_index, n)
/* A node's leaves and payload bytes in one word, so that a walk sums them with one add: its
 * leaves per size index in COUNT fields (bits 0..44), its payload bytes / 16 if all are FP4
 * (bits 45..53) and its leaves in all (bits 54..62). A record's sums fit: at most 256 leaves
 * and 4096 bytes. */
#define BYTES(n) ((uint64_t)(n) / 16 << 45)
#define LEAVES(n) ((uint64_t)(n) << 54)
#define SUM_COUNTS(sum) ((sum) & ((UINT64_C(1) << 45) - 1))
#define SUM_BYTES(sum) ((uint32_t)((sum) >> 45 & 511u) * 16)
#define SUM_LEAVES(sum) ((unsigned)((sum) >> 54) & 511u)

/* A 16x16 node and its four 8x8 children are 5 map bits p: bit 0 splits the node, bits 1..4
 * split its TL, TR, BL and BR children into 4x4 leaves. Per p, what the node holds. */
#define SPLITS_(p) (((p) >> 1 & 1) + ((p) >> 2 & 1) + ((p) >> 3 & 1) + ((p) >> 4 & 1))
#define NODE16_(p)                                                                             \
    ((p) & 1 ? COUNT(3, 4 - SPLITS_(p)) + COUNT(4, 4 * SPLITS_(p)) +                           \
                   BYTES(128 + 32 * SPLITS_(p)) + LEAVES(4 + 3 * SPLITS_(p))                   \
             : COUNT(2, 1) + BYTES(128) + LEAVES(1))
#define NODE16x4_(p) NODE16_(p), NODE16_((p) + 1), NODE16_((p) + 2), NODE16_((p) + 3)
static const uint64_t node16[32] = {NODE16x4_(0),  NODE16x4_(4),  NODE16x4_(8),  NODE16x4_(12),
                                    NODE16x4_(16), NODE16x4_(20), NODE16x4_(24), NODE16x4_(28)};

/* The pad bytes (8..15 of each 16) of four FP4 4x4 leaves whose payloads start at p. */
static inline uint64_t quad_pad(const uint8_t *p)
{
    return sgfp4_load_u64le(p + 8) | sgfp4_load_u64le(p + 24) | sgfp4_load_u64le(p + 40) |
           sgfp4_load_u64le(p + 56);
}

/* The pads of a split 16x16 node's 4x4 leaves, its payloads starting at p if all are FP4:
 * child c (of `children`, bit c = child c splits) starts after c 8x8 children of 32 bytes,
 * plus 32 more for each split one before it. */
static uint64_t node16_pad(const uint8_t *p, unsigned children)
{
    uint64_t pad = 0;
    unsigned at = 0;
    for (unsigned c = 0; c < 4; c++) {
        const unsigned split = children >> c & 1u;
        if (split)
            pad |= quad_pad(p + at);
        at += 32 + 32 * split;
    }
    return pad;
}

/* Bits k, k + 1, ... of the split map at `map` (bit k = bit k % 8 of map[k / 8]): at least
 * the 57 from k on, from an unaligned load (the record's bytes after the map are readable). */
static inline uint64_t map_window(const uint8_t *map, unsigned k)
{
    return sgfp4_load_u64le(map + k / 8) >> (k % 8);
}

/* Walks the MIXED split map at `map` (96 bits) in pre-order DFS (D5). A 32x32 node's bits (at
 * most 21) lie in one 57-bit window, loaded once per node; its 16x16 nodes take 1 or 5 bits
 * each (their split bit and their 8x8 children's). False when a bit after the last one the
 * walk uses is set (at most 85 are used, so none is read past bit 84). */
static bool walk_split_map(const uint8_t *map, sgfp4_record_shape *r)
{
    unsigned k = 1, quads = 0;
    uint64_t sum = 0; /* COUNT fields, BYTES and LEAVES */
    const bool root_split = map[0] & 1u;
    if (!root_split)
        sum = COUNT(0, 1) + BYTES(2048) + LEAVES(1);
    for (unsigned c32 = 0; c32 < 4 && root_split; c32++) {
        uint64_t window = map_window(map, k++);
        if (!(window & 1u)) {
            sum += COUNT(1, 1) + BYTES(512) + LEAVES(1);
            continue;
        }
        window >>= 1;
        for (unsigned c16 = 0; c16 < 4; c16++) {
            const unsigned p = (unsigned)window & 31u, bits = 1 + 4 * (p & 1u);
            if ((p & 1u) && p > 1) { /* 4x4 leaves: where their pads are, if all are FP4 */
                r->quad_node[quads].at = (uint16_t)SUM_BYTES(sum);
                r->quad_node[quads++].children = (uint8_t)(p >> 1);
            }
            sum += node16[p];
            window >>= bits;
            k += bits;
        }
    }
    r->quad_nodes = quads;
    r->counts = SUM_COUNTS(sum);
    r->leaves = SUM_LEAVES(sum);
    r->fp4_bytes = SUM_BYTES(sum);
    /* bits k..95 must be zero */
    const uint64_t lo = sgfp4_load_u64le(map), hi = sgfp4_load_u32le(map + 8);
    return !((k < 64 ? lo >> k : 0) | (k <= 64 ? hi : hi >> (k - 64)));
}

/* The leaves of uniform layout `layout` (not MIXED). */
static void uniform_shape(unsigned layout, sgfp4_record_shape *r)
{
    const unsigned edge = sgfp4_uniform_leaf_size(layout), s = sgfp4_size_index(edge);
    const unsigned n = (SGFP4_MB / edge) * (SGFP4_MB / edge);
    r->leaves = n;
    r->counts = COUNT(s, n);
    r->fp4_bytes = n * padded_bytes[s][SGFP4_MODE_FP4];
    r->quad_nodes = 0;
}

/* True when the pads of an all-FP4 record's 4x4 leaves are zero (bytes 8..15 of each 16). */
static bool fp4_pads_clean(unsigned layout, const uint8_t *payloads,
                           const sgfp4_record_shape *r)
{
    uint64_t pad = 0;
    if (layout == SGFP4_LAYOUT_FULL_4X4)
        for (unsigned q = 0; q < 64; q++)
            pad |= quad_pad(payloads + 64 * q);
    for (unsigned i = 0; i < r->quad_nodes; i++)
        pad |= node16_pad(payloads + r->quad_node[i].at, r->quad_node[i].children);
    return !pad;
}

/* Non-zero when a leaf header breaks a rule: reserved flag bits 1-3 set, a scale that is
 * infinite, NaN or negative (other than -0), a bias that is infinite or NaN (v2's flags lie
 * outside the bias's exponent). Only masks and adds, so the loop over headers is vectorised:
 * an exponent field of y = ~h is zero (all ones in h) exactly when adding 0x7C00 to it leaves
 * its sign bit clear, and the scale's magnitude bits are non-zero exactly when adding
 * 0x7FFF0000 sets bit 31. */
static inline uint32_t header_bad(uint32_t h)
{
    const uint32_t exponents_ok = (~h & 0x7C007C00u) + 0x7C007C00u; /* bits 15, 31: finite */
    const uint32_t negative = h & ((h & 0x7FFF0000u) + 0x7FFF0000u) & 0x80000000u;
    return (h & 0xEu) | (~exponents_ok & 0x80008000u) | negative;
}

/* header_bad() of 8 headers at h, with each header's mode bit (bit 0, which header_bad() does
 * not use), ORed into acc[]. */
static inline void scan8(const uint8_t *h, uint32_t acc[8])
{
    for (size_t j = 0; j < 8; j++) {
        const uint32_t w = sgfp4_load_u32le(h + 4 * j);
        acc[j] |= header_bad(w) | (w & 1u);
    }
}

/* header_bad() of the n headers at h ORed together, with bit 0 set when a leaf is in T158
 * mode. Eight lanes; the last eight headers are read again rather than one by one (an OR does
 * not mind). */
SGFP4_VECTOR_CLONES
static uint32_t scan_headers(const uint8_t *h, size_t n)
{
    uint32_t acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        scan8(h + 4 * i, acc);
    if (i < n && n >= 8)
        scan8(h + 4 * (n - 8), acc);
    for (; i < n && n < 8; i++) {
        const uint32_t w = sgfp4_load_u32le(h + 4 * i);
        acc[0] |= header_bad(w) | (w & 1u);
    }
    for (size_t j = 0; j < 4; j++)
        acc[j] |= acc[j + 4];
    return acc[0] | acc[1] | acc[2] | acc[3];
}

/* The size index of every leaf of a MIXED record in storage order, into si (256 + 3 bytes),
 * from the split map at `map` that walk_split_map() accepted. */
static void split_size_indices(const uint8_t *map, uint8_t *si)
{
    unsigned k = 1, n = 0;
    const bool root_split = map[0] & 1u;
    if (!root_split)
        si[n++] = 0;
    for (unsigned c32 = 0; c32 < 4 && root_split; c32++) {
        if (!(map_window(map, k++) & 1u)) {
            si[n++] = 1;
            continue;
        }
        for (unsigned c16 = 0; c16 < 4; c16++) {
            const unsigned p = (unsigned)map_window(map, k) & 31u;
            k += 1 + 4 * (p & 1u);
            if (!(p & 1u)) {
                si[n++] = 2;
                continue;
            }
            for (unsigned c8 = 0; c8 < 4; c8++) { /* four 4x4 leaves, or one 8x8 */
                const unsigned quad = p >> (1 + c8) & 1u;
                memset(si + n, (int)(3 + quad), 4);
                n += 1 + 3 * quad;
            }
        }
    }
}

/* The modes of the n leaf headers at h (their bit 0), read once: one byte per leaf (0 or 1)
 * into modes[0..n) for the walks below, and as bits into t158 (sgfp4_record_form.t158);
 * true when some leaf is T158. Eight bytes of 0 or 1 become eight bits in one multiply: byte
 * j times 2^(7 - j) of each byte of the constant lands on bit 56 + j, and no two products
 * meet. */
static bool read_modes(const uint8_t *h, unsigned n, uint8_t modes[SGFP4_MAX_LEAVES + 8],
                       uint32_t t158[8])
{
    for (unsigned i = 0; i < n; i++)
        modes[i] = h[4 * i] & 1u; /* bit 0 of the little-endian word */
    memset(modes + n, 0, 8); /* the last group of eight */
    uint8_t bits[32] = {0};
    for (unsigned k = 0; 8 * k < n; k++)
        bits[k] = (uint8_t)((sgfp4_load_u64le(modes + 8 * k) * UINT64_C(0x0102040810204080)) >> 56);
    uint32_t any = 0;
    for (unsigned w = 0; w < 8; w++)
        any |= t158[w] = sgfp4_load_u32le(bits + 4 * w);
    return any != 0;
}

/* The T158 leaves of a MIXED record per size index (COUNT fields): the split map at `map`
 * (accepted by walk_split_map()) walked again, each leaf's mode from modes[]. */
static uint64_t mixed_t158_counts(const uint8_t *map, const uint8_t *modes)
{
    unsigned k = 1, i = 0;
    uint64_t t158 = 0;
    if (!(map[0] & 1u))
        return COUNT(0, modes[0]);
    for (unsigned c32 = 0; c32 < 4; c32++) {
        if (!(map_window(map, k++) & 1u)) {
            t158 += COUNT(1, modes[i++]);
            continue;
        }
        for (unsigned c16 = 0; c16 < 4; c16++) {
            const unsigned p = (unsigned)map_window(map, k) & 31u;
            k += 1 + 4 * (p & 1u);
            if (!(p & 1u)) {
                t158 += COUNT(2, modes[i++]);
                continue;
            }
            for (unsigned c8 = 0; c8 < 4; c8++) {
                if (!(p >> (1 + c8) & 1u)) {
                    t158 += COUNT(3, modes[i++]);
                    continue;
                }
                t158 += COUNT(4, modes[i] + modes[i + 1] + modes[i + 2] + modes[i + 3]);
                i += 4;
            }
        }
    }
    return t158;
}

/* A record with T158 leaves (leaf i's mode in modes[i], n = r->leaves): *t158_counts its
 * T158 leaves per size index (COUNT fields) and *bytes its payload bytes (a T158 leaf's
 * payload is smaller than an FP4 one's of its size by fp4_saving); true when every 4x4
 * leaf's pad is zero. Only a record with 4x4 leaves needs the leaves' payload places, found
 * leaf by leaf. */
static bool mixed_modes(unsigned layout, const uint8_t *map, const sgfp4_record_shape *r,
                        const uint8_t *modes, const uint8_t *payloads, uint64_t *bytes,
                        uint64_t *t158_counts)
{
    static const uint16_t fp4_saving[5] = {1024, 256, 64, 16, 0};
    uint64_t t158 = 0;
    if (layout == SGFP4_LAYOUT_MIXED) {
        t158 = mixed_t158_counts(map, modes);
    } else {
        unsigned n = 0;
        for (unsigned i = 0; i < r->leaves; i++)
            n += modes[i];
        t158 = COUNT(sgfp4_size_index(sgfp4_uniform_leaf_size(layout)), n);
    }
    *t158_counts = t158;
    *bytes = r->fp4_bytes;
    for (unsigned s = 0; s < 5; s++)
        *bytes -= (uint64_t)SGFP4_RECORD_COUNT(t158, s) * fp4_saving[s];
    if (!SGFP4_RECORD_COUNT(r->counts, 4))
        return true;
    uint8_t si[SGFP4_MAX_LEAVES + 3];
    if (layout == SGFP4_LAYOUT_MIXED)
        split_size_indices(map, si);
    else
        memset(si, 4, r->leaves);
    uint64_t pad = 0, at = 0;
    for (unsigned i = 0; i < r->leaves; i++) {
        const unsigned size = si[i], mode = modes[i];
        if (size == 4) { /* codes: 8 FP4 or 4 T158 bytes, then zeros to 16 */
            pad |= sgfp4_load_u64le(payloads + at + 8);
            pad |= mode ? sgfp4_load_u32le(payloads + at + 4) : 0;
        }
        at += padded_bytes[size][mode];
    }
    return !pad;
}

void sgfp4_v2_record_shape(const sgfp4_tensor *t, uint64_t rec, sgfp4_record_shape *r)
{
    const uint8_t *d = t->data;
    r->rec = rec;
    r->screenable = false;
    /* Records within SGFP4_V2_RECORD_MAX of the end go to the full check: everything this one
     * can span is then readable, with no bounds test of its own. */
    if (rec > t->size || t->size - rec < SGFP4_V2_RECORD_MAX)
        return;
    memcpy(r->head, d + rec, sizeof r->head); /* readable: see above */
    const uint32_t sb = sgfp4_load_u32le(r->head);
    r->layout = sb & 7u;
    if (sb >> 3 || r->layout > 5)
        return;
    r->headers = rec + 4;
    if (r->layout == SGFP4_LAYOUT_MIXED) {
        if (!walk_split_map(r->head + 4, r))
            return;
        r->headers += 12;
    } else {
        uniform_shape(r->layout, r);
    }
    r->payloads = rec + sgfp4_align16(r->headers + 4 * (uint64_t)r->leaves - rec);
    /* the lines of the pads that the screen will read, if all leaves are FP4 */
    for (unsigned i = 0; i < r->quad_nodes; i++) {
        const uint8_t *node = d + r->payloads + r->quad_node[i].at;
        SGFP4_PREFETCH(node);
        SGFP4_PREFETCH(node + 255); /* a 16x16 node's payloads span at most 256 bytes */
    }
    r->screenable = true;
}

bool sgfp4_v2_record_screen(const sgfp4_tensor *t, const sgfp4_record_shape *r,
                            sgfp4_record_stats *stats)
{
    if (!r->screenable)
        return false;
    const uint8_t *d = t->data;
    const uint64_t headers_end = r->headers + 4 * (uint64_t)r->leaves, payloads = r->payloads;
    /* The headers of a MIXED record, and the zero words after them, fill whole 16-byte groups;
     * scanning those words too costs nothing (header_bad(0) is 0) and leaves no tail. */
    const uint32_t scanned = scan_headers(
        d + r->headers, r->layout == SGFP4_LAYOUT_MIXED ? (payloads - r->headers) / 4 : r->leaves);
    const uint32_t bad = scanned & ~1u;
    const bool t158 = scanned & 1u;
    /* the pad after the headers: the last 0, 4, 8 or 12 bytes of the 16 before the payloads */
    static const uint64_t pad_mask[4][2] = {
        {0, 0}, {0, ~UINT64_C(0) << 32}, {0, ~UINT64_C(0)}, {~UINT64_C(0) << 32, ~UINT64_C(0)}};
    const uint64_t *mask = pad_mask[(payloads - headers_end) / 4];
    if (bad | (sgfp4_load_u64le(d + payloads - 16) & mask[0]) |
        (sgfp4_load_u64le(d + payloads - 8) & mask[1]))
        return false;
    uint64_t bytes = r->fp4_bytes;
    sgfp4_record_form *form = &stats->form;
    form->layout = r->layout;
    for (unsigned w = 0; w < 3; w++)
        form->map[w] = r->layout == SGFP4_LAYOUT_MIXED ? sgfp4_load_u32le(r->head + 4 + 4 * w) : 0;
    /* the modes read once more, into the form: the payloads' places below come from them */
    uint8_t modes[SGFP4_MAX_LEAVES + 8];
    form->any_t158 = t158 && read_modes(d + r->headers, r->leaves, modes, form->t158);
    if (!form->any_t158)
        memset(form->t158, 0, sizeof form->t158);
    stats->t158_counts = 0;
    if (form->any_t158 ? !mixed_modes(r->layout, r->head + 4, r, modes, d + payloads, &bytes,
                                      &stats->t158_counts)
                       : !fp4_pads_clean(r->layout, d + payloads, r))
        return false;
    stats->end = payloads + bytes;
    stats->layout = r->layout;
    stats->leaves = r->leaves;
    stats->counts = r->counts;
    return true;
}
