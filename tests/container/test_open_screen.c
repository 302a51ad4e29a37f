/* The fast path of v2 acceptance (src/container/screen_v2.c) against the full record check
 * (sgfp4_v2_record_check), record by record:
 *   - sound: whenever the screen accepts a record, the full check accepts it too, with the
 *     same end, the same leaf counts and the same copy of the places (layout, split map,
 *     leaf modes), on valid containers and on many corrupted ones
 *     (bytes changed in the record's head, leaf headers, split map and payload pads);
 *   - complete: every valid record that starts at least SGFP4_V2_RECORD_MAX bytes before the
 *     stream's end passes the screen (so open really takes the fast path);
 *   - the whole open: a corrupted container is rejected by sgfp4_tensor_open() with the status
 *     and message the full check gives for the record it breaks.
 * Containers: the test-data generator (every layout, deep MIXED trees, edge-case and LLM-like
 * halves, T158 leaves) and the encoder's output on LLM-like weights.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "container/validate.h"
#include "datagen/generator.h"

typedef struct screen_counts {
    unsigned records, screened, corrupted, corrupted_screened;
    unsigned screened_t158;    /* screened valid records with T158 leaves (the leaf walk) */
    unsigned screened_fp4_4x4; /* with FP4 leaves only, some of them 4x4 (the node walk) */
} screen_counts;

/* The full check of record b of view t, counting into a zeroed copy of the view's info. */
static sgfp4_status full_check(const sgfp4_tensor *t, uint64_t b, uint64_t *end,
                               sgfp4_record_form *form, sgfp4_tensor_info *counted,
                               sgfp4_diag *diag)
{
    sgfp4_tensor copy = *t;
    memset(&copy.info, 0, sizeof copy.info);
    const uint64_t rec =
        t->record_base + sgfp4_load_u32le(t->data + SGFP4_V2_FIXED_HEADER + 4 * b);
    const sgfp4_status s = sgfp4_v2_record_check(&copy, b, rec, end, form, diag);
    *counted = copy.info;
    return s;
}

/* Record b through both paths; `valid` says the bytes are known to be valid. */
static void compare_record(const sgfp4_tensor *t, uint64_t b, int valid, screen_counts *n)
{
    const uint64_t rec =
        t->record_base + sgfp4_load_u32le(t->data + SGFP4_V2_FIXED_HEADER + 4 * b);
    sgfp4_record_shape shape;
    sgfp4_record_stats stats;
    memset(&stats, 0xA5, sizeof stats);
    sgfp4_v2_record_shape(t, rec, &shape);
    const bool screened = sgfp4_v2_record_screen(t, &shape, &stats);
    uint64_t end = 0;
    sgfp4_record_form form;
    sgfp4_tensor_info counted;
    sgfp4_diag diag;
    const sgfp4_status full = full_check(t, b, &end, &form, &counted, &diag);
    if (valid) {
        assert_int_equal(full, SGFP4_OK);
        n->records++;
        n->screened += screened;
        if (rec <= t->size && t->size - rec >= SGFP4_V2_RECORD_MAX)
            assert_true(screened); /* complete */
    } else {
        n->corrupted++;
        n->corrupted_screened += screened;
    }
    if (!screened)
        return;
    assert_int_equal(full, SGFP4_OK); /* sound */
    n->screened_t158 += valid && counted.leaves_by_mode[SGFP4_MODE_T158] > 0;
    n->screened_fp4_4x4 += valid && counted.leaves_by_mode[SGFP4_MODE_T158] == 0 &&
                           counted.leaves_by_size[4] > 0;
    assert_int_equal(stats.end, end);
    assert_int_equal(stats.leaves, counted.leaves);
    /* the same copy of the places from both paths (the view keeps it: container/tensor.h) */
    assert_int_equal(stats.form.layout, form.layout);
    assert_int_equal(stats.form.any_t158, form.any_t158);
    assert_memory_equal(stats.form.map, form.map, sizeof form.map);
    assert_memory_equal(stats.form.t158, form.t158, sizeof form.t158);
    assert_int_equal(counted.records_by_layout[stats.layout], 1);
    for (unsigned s = 0; s < 5; s++) {
        const unsigned all = SGFP4_RECORD_COUNT(stats.counts, s);
        const unsigned t158 = SGFP4_RECORD_COUNT(stats.t158_counts, s);
        assert_int_equal(all, counted.leaves_by_size[s]);
        assert_int_equal(t158, counted.leaves_by_size_mode[s][SGFP4_MODE_T158]);
        assert_int_equal(all - t158, counted.leaves_by_size_mode[s][SGFP4_MODE_FP4]);
    }
    assert_true(stats.counts >> 45 == 0 && stats.t158_counts >> 45 == 0);
}

/* A byte of record b that the rules look at: its sb_header and split map, its leaf headers
 * (flags, scale and bias exponents and signs), the pad after them, or a payload's first 16
 * bytes (the pad of 4x4 leaves). */
static uint64_t rule_byte(const gen_block *blk, gen_rng *r)
{
    switch (gen_below(r, 5)) {
    case 0: return blk->record_at + gen_below(r, 16);
    case 1:
    case 2:
        return blk->headers_at + 4 * gen_below(r, blk->leaves_count) + gen_below(r, 4);
    case 3: return blk->headers_end + gen_below(r, 16);
    default: return blk->payload_at[gen_below(r, blk->leaves_count)] + gen_below(r, 16);
    }
}

/* What a corrupted byte might become: one bit flipped, or a value that sets whole fields
 * (exponent all ones, sign, flags). */
static uint8_t corrupt(uint8_t byte, gen_rng *r)
{
    static const uint8_t values[] = {0x7C, 0xFC, 0x80, 0x0E, 0x02, 0xFF, 0x01, 0x04};
    return gen_chance(r, 1, 2) ? (uint8_t)(byte ^ (1u << gen_below(r, 8)))
                               : values[gen_below(r, sizeof values)];
}

/* Every record of a container valid as generated, then `trials` corruptions of single bytes
 * (each undone after its check): the screen against the full check on the record hit, and
 * the whole open against the full check's verdict. */
static void check_container(uint8_t *data, size_t size, uint64_t rows, uint64_t cols,
                            const gen_container *g, unsigned trials, gen_rng *r,
                            screen_counts *n)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_tensor_open(data, size, SGFP4_PROFILE_V2, rows, cols, &t, NULL, &diag),
                     SGFP4_OK);
    /* the open's statistics are the full checks' sums */
    sgfp4_tensor_info sum;
    memset(&sum, 0, sizeof sum);
    for (uint64_t b = 0; b < t->blocks; b++) {
        compare_record(t, b, 1, n);
        uint64_t end;
        sgfp4_record_form form;
        sgfp4_tensor_info counted;
        assert_int_equal(full_check(t, b, &end, &form, &counted, &diag), SGFP4_OK);
        /* the view's copy of the record's places is what the full check read */
        assert_int_equal(sgfp4_record_layout(t, b), form.layout);
        assert_int_equal(sgfp4_record_offset(t, b),
                         sgfp4_load_u32le(t->data + SGFP4_V2_FIXED_HEADER + 4 * b));
        assert_memory_equal(sgfp4_record_map(t, b), form.map, sizeof form.map);
        assert_memory_equal(sgfp4_record_modes(t, b), form.t158, sizeof form.t158);
        assert_int_equal(sgfp4_record_all_fp4(t, b), !form.any_t158);
        sum.leaves += counted.leaves;
        for (unsigned m = 0; m < 2; m++)
            sum.leaves_by_mode[m] += counted.leaves_by_mode[m];
        for (unsigned s = 0; s < 5; s++) {
            sum.leaves_by_size[s] += counted.leaves_by_size[s];
            for (unsigned m = 0; m < 2; m++)
                sum.leaves_by_size_mode[s][m] += counted.leaves_by_size_mode[s][m];
        }
        for (unsigned l = 0; l < 6; l++)
            sum.records_by_layout[l] += counted.records_by_layout[l];
    }
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    assert_int_equal(info.leaves, sum.leaves);
    assert_memory_equal(info.leaves_by_mode, sum.leaves_by_mode, sizeof sum.leaves_by_mode);
    assert_memory_equal(info.leaves_by_size, sum.leaves_by_size, sizeof sum.leaves_by_size);
    assert_memory_equal(info.leaves_by_size_mode, sum.leaves_by_size_mode,
                        sizeof sum.leaves_by_size_mode);
    assert_memory_equal(info.records_by_layout, sum.records_by_layout,
                        sizeof sum.records_by_layout);
    for (unsigned k = 0; g && k < trials; k++) {
        const uint64_t b = gen_below(r, (uint32_t)t->blocks);
        const uint64_t at = rule_byte(&g->block[b], r);
        if (at >= size)
            continue;
        const uint8_t saved = data[at];
        data[at] = corrupt(saved, r);
        compare_record(t, b, 0, n);
        /* the whole open fails exactly when this record's full check does (records before it
         * are unchanged; a record's change can make no later record fail except through its
         * end, which the full check of b alone cannot see, so only compare on its failure) */
        uint64_t end;
        sgfp4_tensor_info counted;
        sgfp4_diag record_diag;
        const sgfp4_status full = full_check(t, b, &end, NULL, &counted, &record_diag);
        sgfp4_tensor *again = NULL;
        const sgfp4_status open =
            sgfp4_tensor_open(data, size, SGFP4_PROFILE_V2, rows, cols, &again, NULL, &diag);
        if (full != SGFP4_OK) {
            assert_int_equal(open, full);
            assert_string_equal(diag.message, record_diag.message);
        }
        sgfp4_tensor_close(again);
        data[at] = saved;
    }
    sgfp4_tensor_close(t);
}

static void generated(gen_layouts layouts, gen_halves halves, unsigned containers,
                      unsigned trials)
{
    screen_counts n = {0};
    gen_rng r = {0x5C2EE11 + layouts * 7 + halves};
    for (unsigned i = 0; i < containers; i++) {
        gen_params p = gen_shape_params(SGFP4_PROFILE_V2, 64 * (1 + gen_below(&r, 6)),
                                        64 * (1 + gen_below(&r, 6)) - gen_below(&r, 3));
        p.layouts = layouts;
        p.halves = halves;
        gen_container g;
        assert_int_equal(gen_generate(&g, &r, &p), 0);
        check_container(g.data, g.size, g.rows, g.cols, &g, trials, &r, &n);
        gen_free(&g);
    }
    print_message("%u records, %u screened (%u with T158 leaves, %u FP4-only with 4x4 leaves); "
                  "%u corrupted, %u of them screened\n",
                  n.records, n.screened, n.screened_t158, n.screened_fp4_4x4, n.corrupted,
                  n.corrupted_screened);
    assert_true(n.screened_t158 > 0); /* both paths of the screen */
    if (layouts == GEN_LAYOUTS_MIXED_DEEP)
        assert_true(n.screened_fp4_4x4 > 0);
    assert_true(n.corrupted_screened < n.corrupted);
}

static void every_layout(void **state)
{
    (void)state;
    generated(GEN_LAYOUTS_ALL, GEN_HALVES_EDGES, 60, 400);
}

static void deep_mixed_trees(void **state)
{
    (void)state;
    generated(GEN_LAYOUTS_MIXED_DEEP, GEN_HALVES_ANY, 60, 400);
}

static void llm_halves(void **state)
{
    (void)state;
    generated(GEN_LAYOUTS_ALL, GEN_HALVES_LLM, 40, 200);
}

/* The encoder's containers at several rates (mostly MIXED records, some T158 leaves at low
 * rates, uniform 4x4 ones at high rates). */
static void encoder_output(void **state)
{
    (void)state;
    const double rates[] = {2.5, 4.5, 8.0};
    for (unsigned i = 0; i < 3; i++) {
        const uint64_t rows = 256, cols = 512;
        float *w = gen_llm_weights(rows, cols, 7 + i);
        assert_non_null(w);
        sgfp4_encode_options o;
        sgfp4_encode_options_init(&o);
        o.target_bpw = rates[i];
        void *bytes = NULL;
        size_t size = 0;
        assert_int_equal(sgfp4_encode_alloc(w, rows, cols, 0, &bytes, &size, &o, NULL), SGFP4_OK);
        screen_counts n = {0};
        check_container(bytes, size, rows, cols, NULL, 0, NULL, &n);
        print_message("%.1f bits per weight: %u records, %u screened (%u with T158 leaves, %u "
                      "FP4-only with 4x4 leaves)\n",
                      rates[i], n.records, n.screened, n.screened_t158, n.screened_fp4_4x4);
        assert_true(n.screened > 0);
        sgfp4_free(bytes);
        free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_layout),
        cmocka_unit_test(deep_mixed_trees),
        cmocka_unit_test(llm_halves),
        cmocka_unit_test(encoder_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
