/* See matvec_paths.h.
 * SPDX-License-Identifier: MIT */
#include "matvec/matvec_paths.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 0xA5u

uint64_t matvec_rng_below(matvec_rng *r, uint64_t n)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (z ^ (z >> 31)) % n;
}

unsigned matvec_kernel_sets(const sgfp4_matvec_kernels *out[MATVEC_MAX_KERNEL_SETS])
{
    return sgfp4_matvec_kernel_sets(out, MATVEC_MAX_KERNEL_SETS);
}

void matvec_oracle(const sgfp4_matvec_plan *plan, bool class_a, const sgfp4_matvec_x *x,
                   float *out)
{
    const uint64_t rows = plan->tensor->rows;
    const sgfp4_matvec_y y = {out, (size_t)rows, 0};
    sgfp4_matvec_run(plan, &sgfp4_matvec_kernels_scalar, class_a, x, &y, 0, rows,
                     (sgfp4_matvec_threads){1, NULL});
}

static unsigned bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static bool same(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Runs rows [r0, r1) as one call and compares; false with c->message set. */
static bool check_piece(matvec_check *c, const sgfp4_matvec_plan *plan,
                        const matvec_inputs *in, const sgfp4_matvec_kernels *k, uint64_t r0,
                        uint64_t r1, sgfp4_matvec_threads threads)
{
    const uint64_t rows = plan->tensor->rows, count = r1 - r0;
    const size_t gap = 1 + (size_t)matvec_rng_below(&c->rng, 5);
    const size_t stride = (size_t)count + gap;
    const size_t floats = stride * in->x.batch;
    float *y = malloc(floats * sizeof *y);
    if (!y) {
        snprintf(c->message, sizeof c->message, "out of memory");
        return false;
    }
    memset(y, GUARD, floats * sizeof *y);
    const sgfp4_matvec_y out = {y, stride, r0};
    sgfp4_matvec_run(plan, k, in->class_a, &in->x, &out, r0, r1, threads);
    c->calls++;
    bool ok = true;
    for (unsigned n = 0; n < in->x.batch && ok; n++) {
        for (uint64_t r = r0; r < r1 && ok; r++) {
            const float want = in->oracle[n * rows + r], got = y[n * stride + (r - r0)];
            if (!same(want, got)) {
                snprintf(c->message, sizeof c->message,
                         "%s, class %c, %u threads%s, rows [%llu, %llu) of %llu, vector %u "
                         "of %u: row %llu gives %a (0x%08x), the oracle %a",
                         k->name, in->class_a ? 'A' : 'B', threads.count,
                         threads.pool ? " of a pool" : "", (unsigned long long)r0,
                         (unsigned long long)r1, (unsigned long long)rows, n, in->x.batch,
                         (unsigned long long)r, (double)got, bits_of(got),
                         (double)want);
                ok = false;
            }
            c->results++;
        }
        const uint8_t *g = (const uint8_t *)(y + n * stride + count);
        for (size_t i = 0; i < gap * sizeof *y && ok; i++)
            if (g[i] != GUARD) {
                snprintf(c->message, sizeof c->message,
                         "%s, class %c: rows [%llu, %llu), vector %u: byte %zu after the "
                         "rows was written",
                         k->name, in->class_a ? 'A' : 'B', (unsigned long long)r0,
                         (unsigned long long)r1, n, i);
                ok = false;
            }
    }
    free(y);
    return ok;
}

bool matvec_check_paths(matvec_check *c, const sgfp4_matvec_plan *plan,
                        const matvec_inputs *in, const sgfp4_matvec_kernels *k,
                        unsigned rounds)
{
    const uint64_t rows = plan->tensor->rows;
    for (unsigned round = 0; round < rounds; round++) {
        uint64_t begin = 0, end = rows;
        if (matvec_rng_below(&c->rng, 2)) {
            begin = matvec_rng_below(&c->rng, rows);
            end = begin + 1 + matvec_rng_below(&c->rng, rows - begin);
        }
        const unsigned pieces = 1 + (unsigned)matvec_rng_below(&c->rng, 5);
        uint64_t cuts[6] = {begin};
        for (unsigned p = 1; p < pieces; p++)
            cuts[p] = begin + matvec_rng_below(&c->rng, end - begin + 1);
        cuts[pieces] = end;
        for (unsigned p = 1; p < pieces; p++) /* sort the inner cuts */
            for (unsigned q = p + 1; q < pieces; q++)
                if (cuts[q] < cuts[p]) {
                    const uint64_t t = cuts[p];
                    cuts[p] = cuts[q];
                    cuts[q] = t;
                }
        for (unsigned p = 0; p < pieces; p++) {
            if (cuts[p] == cuts[p + 1])
                continue;
            const unsigned count = c->thread_counts[matvec_rng_below(&c->rng, c->thread_count_n)];
            const bool pooled = c->pool && matvec_rng_below(&c->rng, 2);
            const sgfp4_matvec_threads threads = {count, pooled ? c->pool : NULL};
            if (!check_piece(c, plan, in, k, cuts[p], cuts[p + 1], threads))
                return false;
        }
    }
    return true;
}

bool matvec_check_quantizer(matvec_check *c, const sgfp4_matvec_kernels *k, const void *x,
                            sgfp4_dtype dtype, uint64_t cols)
{
    const uint64_t tiles = (cols + 63) / 64;
    const size_t bytes = (size_t)tiles * 68;
    uint8_t *want = malloc(bytes), *got = malloc(bytes);
    bool ok = want && got;
    if (!ok) {
        snprintf(c->message, sizeof c->message, "out of memory");
    } else {
        memset(got, GUARD, bytes);
        sgfp4_matvec_quantize_scalar(x, dtype, cols, (int8_t *)want, want + tiles * 64);
        k->quantize(x, dtype, cols, (int8_t *)got, got + tiles * 64);
        for (size_t i = 0; i < bytes && ok; i++)
            if (want[i] != got[i]) {
                snprintf(c->message, sizeof c->message,
                         "%s quantizer, %llu columns (%s): byte %zu (%s of block %zu) is "
                         "0x%02x, the reference's 0x%02x",
                         k->name, (unsigned long long)cols,
                         dtype == SGFP4_DTYPE_F16 ? "f16" : "f32", i,
                         i < tiles * 64 ? "q" : "d", i < tiles * 64 ? i / 64 : (i - tiles * 64) / 4,
                         got[i], want[i]);
                ok = false;
            }
    }
    free(want);
    free(got);
    return ok;
}
