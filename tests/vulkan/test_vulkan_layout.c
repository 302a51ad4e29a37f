/* The products' layout of a v2 tensor (src/vulkan/vk_matvec_layout.c), built on the CPU at
 * upload, against the generator's independent expected weights: for every weight of the
 * tensor, its code in the layout, its leaf found as the products find it (the cell map of a
 * MIXED record, the raster index of a uniform one) and that leaf's S and Bias give
 * fl32(S code + Bias), the D1 weight, bit for bit; every padding code is 0. Needs no Vulkan
 * device: the layout is host memory until it is uploaded.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "format/bits.h"
#include "vulkan/vk_internal.h"
#include "datagen/generator.h"

/* The leaf (storage order within its block) of cell (cy, cx) as the products find it. */
static unsigned leaf_of_cell(const uint32_t *w, const sgfp4_vk_product_layout *at, uint64_t b,
                             unsigned cy, unsigned cx)
{
    const uint32_t layout = w[at->desc + 2 * b + 1] & 7u;
    if (layout == SGFP4_LAYOUT_MIXED) {
        const uint32_t map = w[at->desc + 2 * b + 1] >> 3;
        const uint8_t *cells = (const uint8_t *)(w + at->maps + 64 * (uint64_t)map);
        return cells[16 * cy + cx];
    }
    const unsigned l = layout == 5u ? 2u : 6u - layout; /* log2 of the uniform leaf edge */
    return ((4 * cy) >> l << (6 - l)) + ((4 * cx) >> l);
}

/* Builds the layout of container `c` and compares every weight with the expected tensor. */
static void check_layout(const char *what, const gen_container *c)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(c->data, c->size, SGFP4_PROFILE_V2, c->rows, c->cols, &t, NULL, &diag) !=
        SGFP4_OK)
        fail_msg("%s: open failed: %s", what, diag.message);
    sgfp4_vk_product_layout at;
    const uint64_t words = sgfp4_vk_product_layout_words(t, &at);
    uint32_t *w = malloc(words * sizeof *w);
    float *want = malloc(c->rows * c->cols * sizeof *want);
    assert_non_null(w);
    assert_non_null(want);
    memset(w, 0xA5, words * sizeof *w); /* the builder must write every word it owns */
    sgfp4_vk_build_product_layout(t, &at, w);
    gen_expected(c, want);

    for (uint64_t b = 0; b < c->blocks; b++) {
        const uint64_t r0 = (b / c->tiles_x) * 64, c0 = (b % c->tiles_x) * 64;
        const uint32_t first = w[at.desc + 2 * b];
        for (unsigned y = 0; y < 64; y++)
            for (unsigned x = 0; x < 64; x++) {
                const uint32_t nib = (w[512 * b + 8 * y + x / 8] >> (4 * (x % 8))) & 0xFu;
                if (r0 + y >= c->rows || c0 + x >= c->cols) {
                    if (nib != 0)
                        fail_msg("%s: block %llu padding (%u, %u) has code %u", what,
                                 (unsigned long long)b, y, x, nib);
                    continue;
                }
                const int code = nib < 8 ? (int)nib : (int)nib - 16;
                const uint64_t leaf = first + leaf_of_cell(w, &at, b, y / 4, x / 4);
                if (leaf >= t->info.leaves)
                    fail_msg("%s: block %llu cell (%u, %u): leaf %llu of %llu", what,
                             (unsigned long long)b, y / 4, x / 4, (unsigned long long)leaf,
                             (unsigned long long)t->info.leaves);
                const float s = sgfp4_bits_to_float(w[at.sb + 2 * leaf]);
                const float bias = sgfp4_bits_to_float(w[at.sb + 2 * leaf + 1]);
                const float got = fmaf(s, (float)code, bias); /* S code exact: one rounding */
                const float exp = want[(r0 + y) * c->cols + c0 + x];
                if (sgfp4_float_to_bits(got) != sgfp4_float_to_bits(exp))
                    fail_msg("%s: weight (%llu, %llu): %a from the layout (code %d, S %a, "
                             "Bias %a), %a expected",
                             what, (unsigned long long)(r0 + y), (unsigned long long)(c0 + x),
                             (double)got, code, (double)s, (double)bias, (double)exp);
            }
    }
    free(want);
    free(w);
    sgfp4_tensor_close(t);
}

static void check_params(const char *what, const gen_params *p, uint64_t seed)
{
    gen_rng r = {seed};
    gen_container c;
    assert_int_equal(gen_generate(&c, &r, p), 0);
    check_layout(what, &c);
    gen_free(&c);
}

/* The differential corpus: random shapes, every layout and depth, reserved T158 symbols,
 * gaps between records, edge-case halves. */
static void test_corpus(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        char what[64];
        snprintf(what, sizeof what, "corpus seed %llu", (unsigned long long)seed);
        const gen_params p = gen_corpus_params(2);
        check_params(what, &p, seed);
    }
}

/* Odd shapes (a padded last block row and column) of each kind of record mix. */
static void test_shapes(void **state)
{
    (void)state;
    static const uint64_t shapes[][2] = {{1, 1}, {3, 130}, {130, 200}, {65, 64}, {64, 65},
                                         {200, 300}};
    static const gen_layouts kinds[] = {GEN_LAYOUTS_ALL, GEN_LAYOUTS_UNIFORM_64,
                                        GEN_LAYOUTS_MIXED_DEEP};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            gen_params p = gen_shape_params(2, shapes[s][0], shapes[s][1]);
            p.layouts = kinds[k];
            char what[96];
            snprintf(what, sizeof what, "%llux%llu, layouts %d", (unsigned long long)shapes[s][0],
                     (unsigned long long)shapes[s][1], (int)kinds[k]);
            check_params(what, &p, 1000 + 10 * s + k);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
