/* libFuzzer target: matrix-vector products on whatever container opens. Input: a 4-byte
 * fuzz_prefix (tests/fuzz/fuzz_common.h), then the container (v2 when it starts with the
 * magic, else v1), the shape carved from its block count. Activations are made from the
 * container bytes themselves (any binary32 pattern but NaN/infinity for Class A; NaN and
 * infinity allowed in Class B). Every opened tensor of up to 2^16 weights must give, in both
 * classes: the oracle's bits equal to the test's own D8 (d8_reference.c), and every kernel
 * set, thread count and row split the oracle's bits (matvec_paths.c). CTest replays the v1
 * and v2 decode corpora through it.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "matvec/d8_reference.h"
#include "matvec/matvec_paths.h"

#define MAX_WEIGHTS (UINT64_C(1) << 16)

/* Activation j of vector n: 4 container bytes as a binary32 (Class A: non-finite ones
 * replaced), so the fuzzer steers the values. */
static float activation(const uint8_t *bytes, size_t size, uint64_t at, bool class_a)
{
    uint32_t u = 0;
    for (unsigned k = 0; k < 4 && size; k++)
        u |= (uint32_t)bytes[(at * 4 + k) % size] << (8 * k);
    float f;
    memcpy(&f, &u, 4);
    return class_a && !isfinite(f) ? 1.0f : f;
}

static void check_class(const sgfp4_tensor *t, const sgfp4_matvec_plan *plan,
                        const d8_matrix *m, const uint8_t *bytes, size_t size, bool class_a,
                        unsigned batch, uint8_t flags)
{
    const uint64_t rows = m->rows, cols = m->cols, tiles = m->padded_cols / 64;
    float *x = malloc(batch * cols * sizeof *x), *y = malloc(batch * rows * sizeof *y);
    float *want = malloc(rows * sizeof *want), *d = malloc(tiles * sizeof *d);
    int8_t *q = malloc(tiles * 64);
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, batch);
    uint8_t *q8 = malloc(q8_size);
    FUZZ_ASSERT(x && y && want && d && q && q8);
    for (uint64_t i = 0; i < batch * cols; i++)
        x[i] = activation(bytes, size, i + flags, class_a);
    sgfp4_matvec_options o;
    sgfp4_matvec_options_init(&o);
    o.backend = SGFP4_BACKEND_SCALAR;
    sgfp4_matvec_x xv;
    if (class_a) {
        FUZZ_ASSERT(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, batch, 0, q8, q8_size, &o,
                                          NULL) == SGFP4_OK);
        FUZZ_ASSERT(sgfp4_matvec_q8(plan, q8, q8_size, batch, 0, rows, y, 0,
                                    batch * rows * sizeof *y, &o) == SGFP4_OK);
        xv = (sgfp4_matvec_x){q8, q8_size / batch, SGFP4_DTYPE_F32, batch};
    } else {
        FUZZ_ASSERT(sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, batch, 0, 0, rows, y, 0,
                                       batch * rows * sizeof *y, &o) == SGFP4_OK);
        xv = (sgfp4_matvec_x){(const uint8_t *)x, cols * 4, SGFP4_DTYPE_F32, batch};
    }
    for (unsigned n = 0; n < batch; n++) {
        if (class_a) {
            d8_quantize(x + n * cols, cols, q, d);
            FUZZ_ASSERT(memcmp(q8 + n * (q8_size / batch), q, tiles * 64) == 0);
            FUZZ_ASSERT(memcmp(q8 + n * (q8_size / batch) + tiles * 64, d, tiles * 4) == 0);
            FUZZ_ASSERT(d8_product_a(m, q, d, want));
        } else {
            FUZZ_ASSERT(d8_product_b(m, x + n * cols, want));
        }
        for (uint64_t r = 0; r < rows; r++)
            FUZZ_ASSERT(d8_same(y[n * rows + r], want[r]));
    }
    static const unsigned thread_counts[] = {1, 2, 3};
    matvec_check c = {.rng = {flags}, .thread_counts = thread_counts, .thread_count_n = 3};
    const matvec_inputs in = {class_a, xv, y};
    const sgfp4_matvec_kernels *sets[MATVEC_MAX_KERNEL_SETS];
    const unsigned count = matvec_kernel_sets(sets);
    for (unsigned k = 0; k < count; k++) {
        if (!matvec_check_paths(&c, plan, &in, sets[k], 2)) {
            fprintf(stderr, "%s\n", c.message);
            FUZZ_ASSERT(!"a kernel set differs from the oracle");
        }
    }
    (void)t;
    free(x);
    free(y);
    free(want);
    free(d);
    free(q);
    free(q8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_PREFIX_BYTES)
        return 0;
    const fuzz_prefix prefix = {data[0], data[1], data[2], data[3]};
    const uint8_t *stream = data + FUZZ_PREFIX_BYTES;
    const size_t bytes = size - FUZZ_PREFIX_BYTES;
    const bool v2 = bytes >= 4 && memcmp(stream, "SGF4", 4) == 0;
    uint64_t blocks = 0;
    if (v2 && bytes >= 9)
        blocks = (uint64_t)stream[5] | (uint64_t)stream[6] << 8 | (uint64_t)stream[7] << 16 |
                 (uint64_t)stream[8] << 24;
    else if (!v2)
        blocks = bytes / 2056;
    if (blocks > 16)
        return 0; /* MAX_WEIGHTS is 16 blocks */
    uint64_t rows, cols;
    fuzz_carve_shape(&prefix, blocks, &rows, &cols);
    if (rows * cols > MAX_WEIGHTS)
        return 0;
    sgfp4_tensor *t;
    if (sgfp4_tensor_open(stream, bytes, v2 ? SGFP4_PROFILE_V2 : SGFP4_PROFILE_V1, rows, cols, &t,
                          NULL, NULL) != SGFP4_OK)
        return 0;
    sgfp4_matvec_plan *plan;
    d8_matrix m;
    FUZZ_ASSERT(sgfp4_matvec_plan_create(t, &plan) == SGFP4_OK);
    FUZZ_ASSERT(d8_matrix_from_tensor(&m, t, stream));
    const unsigned batch = 1 + prefix.flags % 3;
    check_class(t, plan, &m, stream, bytes, true, batch, prefix.flags);
    check_class(t, plan, &m, stream, bytes, false, batch, prefix.flags);
    d8_matrix_free(&m);
    sgfp4_matvec_plan_free(plan);
    sgfp4_tensor_close(t);
    return 0;
}
