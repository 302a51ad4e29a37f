/* The test's own D8 (see d8_reference.h). Public header only; nothing from src/.
 * SPDX-License-Identifier: MIT */
#include "matvec/d8_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datagen/reference_numbers.h"

/* One binary32 operation: exact in binary64, rounded once by the cast. */
static float add32(float a, float b) { return (float)((double)a + (double)b); }
static float mul32(float a, float b) { return (float)((double)a * (double)b); }

bool d8_matrix_init(d8_matrix *m, uint64_t rows, uint64_t cols)
{
    memset(m, 0, sizeof *m);
    m->rows = rows;
    m->cols = cols;
    m->padded_cols = (cols + 63) / 64 * 64;
    const size_t n = (size_t)(rows * m->padded_cols);
    m->code = calloc(n, 1);
    m->scale = calloc(n, sizeof(float));
    m->bias = calloc(n, sizeof(float));
    if (!m->code || !m->scale || !m->bias) {
        d8_matrix_free(m);
        return false;
    }
    return true;
}

void d8_matrix_free(d8_matrix *m)
{
    free(m->code);
    free(m->scale);
    free(m->bias);
    memset(m, 0, sizeof *m);
}

void d8_matrix_set_leaf(d8_matrix *m, uint64_t by, uint64_t bx, unsigned y, unsigned x,
                        unsigned size, uint16_t scale_bits, uint16_t bias_bits,
                        const int8_t *codes)
{
    const float S = (float)ref_half_value(scale_bits);
    const float B = (float)ref_half_value(bias_bits);
    for (unsigned i = 0; i < size; i++) {
        const uint64_t r = by * 64 + y + i;
        if (r >= m->rows)
            continue;
        for (unsigned k = 0; k < size; k++) {
            const size_t at = (size_t)(r * m->padded_cols + bx * 64 + x + k);
            m->code[at] = codes[i * size + k];
            m->scale[at] = S;
            m->bias[at] = B;
        }
    }
}

/* D4, from the spec's words: FP4 code i in nibble 4 * (i % 8) of LE word i / 8, two's
 * complement; T158 code i in bits 2 * (i % 16) of LE word i / 16: 00 0, 01 +1, 10 -1, 11 0. */
static int8_t unpack_code(const uint8_t *payload, unsigned mode, unsigned i)
{
    if (mode == 0) {
        const uint32_t word = (uint32_t)payload[4 * (i / 8)] |
                              (uint32_t)payload[4 * (i / 8) + 1] << 8 |
                              (uint32_t)payload[4 * (i / 8) + 2] << 16 |
                              (uint32_t)payload[4 * (i / 8) + 3] << 24;
        const int nibble = (int)((word >> (4 * (i % 8))) & 15u);
        return (int8_t)(nibble >= 8 ? nibble - 16 : nibble);
    }
    const uint32_t word = (uint32_t)payload[4 * (i / 16)] |
                          (uint32_t)payload[4 * (i / 16) + 1] << 8 |
                          (uint32_t)payload[4 * (i / 16) + 2] << 16 |
                          (uint32_t)payload[4 * (i / 16) + 3] << 24;
    static const int8_t value[4] = {0, 1, -1, 0};
    return value[(word >> (2 * (i % 16))) & 3u];
}

bool d8_matrix_from_tensor(d8_matrix *m, const sgfp4_tensor *t, const uint8_t *data)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    if (!d8_matrix_init(m, info.rows, info.cols))
        return false;
    sgfp4_leaf leaves[256];
    int8_t codes[4096];
    for (uint64_t b = 0; b < info.blocks; b++) {
        const size_t n = sgfp4_tensor_block_leaves(t, b, leaves, 256);
        for (size_t i = 0; i < n; i++) {
            const sgfp4_leaf *l = &leaves[i];
            for (unsigned k = 0; k < (unsigned)l->size * l->size; k++)
                codes[k] = unpack_code(data + l->payload_offset, l->mode, k);
            const uint16_t scale_bits = (uint16_t)(l->header >> 16);
            const uint16_t bias_bits =
                (uint16_t)(l->header & (info.profile == SGFP4_PROFILE_V2 ? 0xFFF0u : 0xFFFFu));
            d8_matrix_set_leaf(m, b / info.tiles_x, b % info.tiles_x, l->y, l->x, l->size,
                               scale_bits, bias_bits, codes);
        }
    }
    return true;
}

float d8_weight(const d8_matrix *m, uint64_t r, uint64_t c)
{
    const size_t at = (size_t)(r * m->padded_cols + c);
    return add32(mul32(m->scale[at], (float)m->code[at]), m->bias[at]);
}

void d8_quantize(const float *x, uint64_t cols, int8_t *q, float *d)
{
    const uint64_t tiles = (cols + 63) / 64;
    memset(q, 0, (size_t)(tiles * 64));
    for (uint64_t b = 0; b < tiles; b++) {
        double m = 0;
        for (uint64_t j = b * 64; j < cols && j < b * 64 + 64; j++)
            m = fmax(m, fabs((double)x[j]));
        if (m < ldexp(1, -40)) {
            d[b] = 0.0f;
            continue;
        }
        int e = -200; /* the smallest e with m <= 127 * 2^e, by search */
        while (!(m <= 127.0 * ldexp(1, e)))
            e++;
        d[b] = (float)ldexp(1, e);
        for (uint64_t j = b * 64; j < cols && j < b * 64 + 64; j++)
            q[j] = (int8_t)rint(ldexp((double)x[j], -e)); /* exact; rint: nearest even */
    }
}

float d8_activation_b(float x)
{
    return fabsf(x) < ldexpf(1, -60) ? 0.0f : x;
}

static uint64_t power_of_two_at_least(uint64_t n)
{
    uint64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* D8's tree: pad with +0 to P, then v_i = fl32(v_i + v_{i+h}) for h = P/2 .. 1. */
static float tree(float *v, uint64_t n, uint64_t padded)
{
    for (uint64_t i = n; i < padded; i++)
        v[i] = 0.0f;
    for (uint64_t h = padded / 2; h >= 1; h /= 2)
        for (uint64_t i = 0; i < h; i++)
            v[i] = add32(v[i], v[i + h]);
    return v[0];
}

/* One row of either class; `q`/`d` for A, `x` for B. */
static void product_row(const d8_matrix *m, uint64_t r, const int8_t *q, const float *d,
                        const float *x, float *t, uint64_t padded)
{
    const uint64_t n = m->padded_cols / 64;
    for (uint64_t b = 0; b < n; b++) {
        float c[16];
        for (unsigned k = 0; k < 16; k++) {
            const uint64_t c0 = b * 64 + 4 * k;
            const size_t at = (size_t)(r * m->padded_cols + c0);
            if (q) {
                long iq = 0, is = 0;
                for (unsigned i = 0; i < 4; i++) {
                    const int qj = c0 + i < m->cols ? q[c0 + i] : 0; /* padding: q_j = 0 */
                    iq += (long)m->code[at + i] * qj;
                    is += qj;
                }
                c[k] = add32(mul32(m->scale[at], (float)iq), mul32(m->bias[at], (float)is));
            } else {
                float p[4];
                for (unsigned i = 0; i < 4; i++)
                    p[i] = c0 + i < m->cols
                               ? mul32(d8_weight(m, r, c0 + i), d8_activation_b(x[c0 + i]))
                               : 0.0f; /* padding: p_j = +0 */
                c[k] = add32(add32(p[0], p[1]), add32(p[2], p[3]));
            }
        }
        t[b] = tree(c, 16, 16);
        if (q)
            t[b] = mul32(t[b], d[b]);
    }
    (void)padded;
}

static bool product(const d8_matrix *m, const int8_t *q, const float *d, const float *x,
                    float *y)
{
    const uint64_t n = m->padded_cols / 64, padded = power_of_two_at_least(n);
    float *t = malloc((size_t)padded * sizeof *t);
    if (!t)
        return false;
    for (uint64_t r = 0; r < m->rows; r++) {
        product_row(m, r, q, d, x, t, padded);
        y[r] = tree(t, n, padded);
    }
    free(t);
    return true;
}

bool d8_product_a(const d8_matrix *m, const int8_t *q, const float *d, float *y)
{
    return product(m, q, d, NULL, y);
}

bool d8_product_b(const d8_matrix *m, const float *x, float *y)
{
    return product(m, NULL, NULL, x, y);
}

/* Roundings a term of the sum goes through: the cell (A: 1, the D1 weight's own rounding
 * counted as one more; B: the product and 2 adds), 4 for the cell tree, log2 P for the
 * block tree. */
static unsigned roundings(const d8_matrix *m, bool class_a)
{
    unsigned levels = 0;
    for (uint64_t p = power_of_two_at_least(m->padded_cols / 64); p > 1; p /= 2)
        levels++;
    return (class_a ? 2u : 3u) + 4u + levels;
}

static void float64(const d8_matrix *m, const int8_t *q, const float *d, const float *x,
                    double *exact, double *bound)
{
    const double u = ldexp(1, -24);
    const double L = roundings(m, q != NULL);
    const double gamma = L * u / (1 - L * u);
    for (uint64_t r = 0; r < m->rows; r++) {
        double sum = 0, magnitude = 0;
        for (uint64_t j = 0; j < m->cols; j++) {
            const double a = q ? (double)q[j] * d[j / 64] : d8_activation_b(x[j]);
            const double term = (double)d8_weight(m, r, j) * a;
            sum += term;
            magnitude += fabs(term);
        }
        exact[r] = sum;
        /* the cell sums before D8's block scale in A reach ~2^32 per block; anything near
         * the float32 range may overflow on the way, where no bound holds */
        bound[r] = magnitude < 0x1p120 ? gamma * magnitude : -1;
    }
}

void d8_float64_a(const d8_matrix *m, const int8_t *q, const float *d, double *exact,
                  double *bound)
{
    float64(m, q, d, NULL, exact, bound);
}

void d8_float64_b(const d8_matrix *m, const float *x, double *exact, double *bound)
{
    float64(m, NULL, NULL, x, exact, bound);
}

bool d8_same(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return ref_bits_of(a) == ref_bits_of(b);
}
