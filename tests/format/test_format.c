/* The format layer (src/format/bits.h, leaf_geometry.c) against the spec's own words:
 *   - FP4 / T158 code unpacking from payloads built word by word as §22.6 states it
 *     ("code i occupies bits 4*(i mod 8) of word floor(i/8)", LE words);
 *   - the split-map walk (D5): the known tree, full split, root leaf, random trees encoded
 *     here by an independent recursive writer, and rejection of trailing bits;
 *   - uniform layouts in raster order.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "format/bits.h"
#include "format/leaf_geometry.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint32_t next_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static void store_words(uint8_t *bytes, const uint32_t *words, unsigned n)
{
    for (unsigned w = 0; w < n; w++) {
        bytes[4 * w + 0] = (uint8_t)words[w];
        bytes[4 * w + 1] = (uint8_t)(words[w] >> 8);
        bytes[4 * w + 2] = (uint8_t)(words[w] >> 16);
        bytes[4 * w + 3] = (uint8_t)(words[w] >> 24);
    }
}

/* ---- code unpacking ---- */

static void fp4_codes_follow_the_word_layout(void **state)
{
    (void)state;
    /* 4096 codes (a 64x64 payload): code i = nibble 4*(i%8) of word i/8 */
    static int codes[4096];
    static uint32_t words[512];
    static uint8_t payload[2048];
    memset(words, 0, sizeof words);
    for (unsigned i = 0; i < 4096; i++) {
        codes[i] = (int)(next_u32() % 16) - 8; /* -8..7 */
        words[i / 8] |= ((uint32_t)codes[i] & 0xFu) << (4 * (i % 8));
    }
    store_words(payload, words, 512);
    for (unsigned i = 0; i < 4096; i++)
        assert_int_equal(sgfp4_fp4_code(payload, i), codes[i]);
    /* every nibble value in every position of one word */
    for (unsigned n = 0; n < 16; n++)
        for (unsigned pos = 0; pos < 8; pos++) {
            const uint32_t w = (uint32_t)n << (4 * pos);
            uint8_t b[4];
            store_words(b, &w, 1);
            for (unsigned i = 0; i < 8; i++)
                assert_int_equal(sgfp4_fp4_code(b, i), i == pos ? (n < 8 ? (int)n : (int)n - 16)
                                                                : 0);
        }
}

static void t158_codes_follow_the_word_layout(void **state)
{
    (void)state;
    static const int value_of_symbol[4] = {0, +1, -1, 0}; /* 0b11 reserved -> 0 (D4) */
    static unsigned symbols[4096];
    static uint32_t words[256];
    static uint8_t payload[1024];
    memset(words, 0, sizeof words);
    for (unsigned i = 0; i < 4096; i++) {
        symbols[i] = next_u32() % 4;
        words[i / 16] |= (uint32_t)symbols[i] << (2 * (i % 16));
    }
    store_words(payload, words, 256);
    for (unsigned i = 0; i < 4096; i++)
        assert_int_equal(sgfp4_t158_code(payload, i), value_of_symbol[symbols[i]]);
    const uint32_t all_reserved = 0xFFFFFFFFu;
    uint8_t b[4];
    store_words(b, &all_reserved, 1);
    for (unsigned i = 0; i < 16; i++)
        assert_int_equal(sgfp4_t158_code(b, i), 0);
}

static void payload_sizes_match_the_table(void **state)
{
    (void)state; /* §22.6: FP4 512/128/32/8/2 words, T158 256/64/16/4/1 words */
    const unsigned sizes[5] = {64, 32, 16, 8, 4};
    const unsigned fp4_words[5] = {512, 128, 32, 8, 2}, t158_words[5] = {256, 64, 16, 4, 1};
    for (unsigned k = 0; k < 5; k++) {
        assert_int_equal(sgfp4_payload_bytes(sizes[k], 0), 4 * fp4_words[k]);
        assert_int_equal(sgfp4_payload_bytes(sizes[k], 1), 4 * t158_words[k]);
    }
}

/* ---- split maps ---- */

typedef struct pos {
    unsigned y, x, size;
} pos;

/* An independent split-map writer: a random tree (or full / none) walked in pre-order,
 * appending one bit per node of size >= 8 and the leaves in DFS order. */
typedef struct tree_writer {
    uint32_t words[3];
    unsigned bits;
    pos leaves[256];
    unsigned count;
    int mode; /* 0 random, 1 split everything, 2 split nothing */
} tree_writer;

static void write_node(tree_writer *w, unsigned y, unsigned x, unsigned size, unsigned depth)
{
    int split = 0;
    if (size >= 8) {
        split = w->mode == 1 ? 1 : w->mode == 2 ? 0 : (int)(next_u32() % 8 < 5 - depth);
        if (split)
            w->words[w->bits / 32] |= 1u << (w->bits % 32);
        w->bits++;
    }
    if (!split) {
        w->leaves[w->count++] = (pos){y, x, size};
        return;
    }
    const unsigned h = size / 2;
    write_node(w, y, x, h, depth + 1);
    write_node(w, y, x + h, h, depth + 1);
    write_node(w, y + h, x, h, depth + 1);
    write_node(w, y + h, x + h, h, depth + 1);
}

static void assert_walk_matches(const tree_writer *w)
{
    sgfp4_leaf_pos out[256];
    unsigned n = 0, used = 0;
    assert_int_equal(sgfp4_split_walk(w->words, out, &n, &used), SGFP4_SPLIT_OK);
    assert_int_equal(n, w->count);
    assert_int_equal(used, w->bits);
    unsigned area = 0;
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(out[i].y, w->leaves[i].y);
        assert_int_equal(out[i].x, w->leaves[i].x);
        assert_int_equal(out[i].size, w->leaves[i].size);
        area += out[i].size * out[i].size;
    }
    assert_int_equal(area, 64 * 64);
}

static void split_walk_known_tree(void **state)
{
    (void)state;
    /* leaves 32@(0,0), 32@(0,32), 16@(32,0), 16@(32,16), 16@(48,0), 16@(48,16), 32@(32,32)
     * give word0 = (1<<0)|(1<<3), word1 = word2 = 0 */
    const uint32_t words[3] = {(1u << 0) | (1u << 3), 0, 0};
    const pos want[7] = {{0, 0, 32},   {0, 32, 32},  {32, 0, 16}, {32, 16, 16},
                         {48, 0, 16},  {48, 16, 16}, {32, 32, 32}};
    sgfp4_leaf_pos out[256];
    unsigned n = 0, used = 0;
    assert_int_equal(sgfp4_split_walk(words, out, &n, &used), SGFP4_SPLIT_OK);
    assert_int_equal(n, 7);
    assert_int_equal(used, 9); /* root, TL, TR, BL, BL's four 16s, BR */
    for (unsigned i = 0; i < 7; i++) {
        assert_int_equal(out[i].y, want[i].y);
        assert_int_equal(out[i].x, want[i].x);
        assert_int_equal(out[i].size, want[i].size);
    }
}

static void split_walk_full_and_empty(void **state)
{
    (void)state;
    tree_writer full = {{0, 0, 0}, 0, {{0, 0, 0}}, 0, 1};
    write_node(&full, 0, 0, 64, 0);
    assert_int_equal(full.bits, 85);
    assert_int_equal(full.count, 256);
    assert_int_equal(full.words[0], 0xFFFFFFFFu);
    assert_int_equal(full.words[1], 0xFFFFFFFFu);
    assert_int_equal(full.words[2], 0x1FFFFFu);
    assert_walk_matches(&full);
    /* DFS order of 4x4 leaves differs from raster order: leaf 1 is (0,4), leaf 2 is (4,0) */
    sgfp4_leaf_pos out[256];
    unsigned n, used;
    (void)sgfp4_split_walk(full.words, out, &n, &used);
    assert_int_equal(out[2].y, 4);
    assert_int_equal(out[2].x, 0);

    tree_writer none = {{0, 0, 0}, 0, {{0, 0, 0}}, 0, 2};
    write_node(&none, 0, 0, 64, 0);
    assert_int_equal(none.bits, 1);
    assert_int_equal(none.count, 1);
    assert_walk_matches(&none);
}

static void split_walk_random_trees(void **state)
{
    (void)state;
    for (int t = 0; t < 20000; t++) {
        tree_writer w = {{0, 0, 0}, 0, {{0, 0, 0}}, 0, 0};
        write_node(&w, 0, 0, 64, 0);
        assert_walk_matches(&w);
    }
}

static void split_walk_rejects_trailing_bits(void **state)
{
    (void)state;
    sgfp4_leaf_pos out[256];
    unsigned n, used;
    /* known tree (9 bits) plus each later bit */
    for (unsigned k = 9; k < 96; k++) {
        uint32_t words[3] = {0x9u, 0, 0};
        words[k / 32] |= 1u << (k % 32);
        assert_int_equal(sgfp4_split_walk(words, out, &n, &used), SGFP4_SPLIT_TRAILING);
    }
    /* full split (85 bits) plus each of bits 85..95 */
    for (unsigned k = 85; k < 96; k++) {
        uint32_t words[3] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0x1FFFFFu};
        words[2] |= 1u << (k % 32);
        assert_int_equal(sgfp4_split_walk(words, out, &n, &used), SGFP4_SPLIT_TRAILING);
    }
    /* random trees with one random trailing bit */
    for (int t = 0; t < 2000; t++) {
        tree_writer w = {{0, 0, 0}, 0, {{0, 0, 0}}, 0, 0};
        write_node(&w, 0, 0, 64, 0);
        if (w.bits >= 96)
            continue;
        const unsigned k = w.bits + next_u32() % (96 - w.bits);
        w.words[k / 32] |= 1u << (k % 32);
        assert_int_equal(sgfp4_split_walk(w.words, out, &n, &used), SGFP4_SPLIT_TRAILING);
    }
}

/* ---- uniform layouts ---- */

static void uniform_layouts_are_raster_order(void **state)
{
    (void)state;
    const unsigned layouts[5] = {0, 1, 2, 3, 5}, edges[5] = {64, 32, 16, 8, 4};
    sgfp4_leaf_pos out[256];
    for (unsigned k = 0; k < 5; k++) {
        const unsigned e = edges[k], per_row = 64 / e;
        assert_int_equal(sgfp4_uniform_leaf_size(layouts[k]), e);
        assert_int_equal(sgfp4_uniform_leaves(layouts[k], out), per_row * per_row);
        for (unsigned i = 0; i < per_row * per_row; i++) {
            assert_int_equal(out[i].y, (i / per_row) * e);
            assert_int_equal(out[i].x, (i % per_row) * e);
            assert_int_equal(out[i].size, e);
        }
    }
    assert_int_equal(sgfp4_uniform_leaves(4, out), 0); /* MIXED is not uniform */
    assert_int_equal(sgfp4_uniform_leaves(6, out), 0);
    assert_int_equal(sgfp4_uniform_leaves(7, out), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fp4_codes_follow_the_word_layout),
        cmocka_unit_test(t158_codes_follow_the_word_layout),
        cmocka_unit_test(payload_sizes_match_the_table),
        cmocka_unit_test(split_walk_known_tree),
        cmocka_unit_test(split_walk_full_and_empty),
        cmocka_unit_test(split_walk_random_trees),
        cmocka_unit_test(split_walk_rejects_trailing_bits),
        cmocka_unit_test(uniform_layouts_are_raster_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
