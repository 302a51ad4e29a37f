/* libFuzzer target: encode -> strict open -> decode round trip.
 * Input: 5 header bytes, then the values.
 *   [0] rows, from the byte b (size_of_byte()): 1-16 for b < 192, 17-64 for b < 248, else two
 *       macroblock rows (65-72, cropped): most inputs are small (a fit costs about its area)
 *       and every size stays reachable
 *   [1] cols: likewise
 *   [2] flags: bit0 v1 profile, bit1 threshold policy, bit2 reference fit, bit3 values are
 *       raw float32 bits (NaN / Inf possible); bits 4-6 a second look for 3 of their 8
 *       values: 5 encode again with another thread count, 6 encode through
 *       sgfp4_encode_alloc(, NULL), 7 too small an output buffer; bit7 two threads for the first
 *       encode (which they share only when the shape has two blocks or more)
 *   [3] rate target / threshold scale   [4] value exponent
 *   then int16 LE values (or float32 bits), repeated to fill the matrix.
 * Checks: non-finite input is refused; finite input encodes; the output is no larger than
 * sgfp4_encode_bound(), opens strictly, and decodes within a loose error bound of the
 * (fp16-clipped) input; the second look: another thread count and sgfp4_encode_alloc(, NULL) give
 * the same bytes (encoding is deterministic), a buffer one byte short is refused.
 * Speed: small shapes for most inputs and a second encode for 3 in 8 keep the target fast
 * under the sanitizers (the encoder's fits dominate; see also tests/cmake/fuzz.cmake).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "../support/options.h"

#define HALF_MAX 65504.0f

static uint64_t size_of_byte(uint8_t b)
{
    return b < 192 ? 1u + b % 16u : b < 248 ? 17u + (b - 192u) % 48u : 65u + b % 8u;
}

static float clip_half(float v)
{
    return v > HALF_MAX ? HALF_MAX : v < -HALF_MAX ? -HALF_MAX : v;
}

/* Fills the matrix from the value bytes; returns 1 if every value is finite. */
static int make_values(const uint8_t *data, size_t size, int raw_bits, int exponent, float *m,
                       size_t count)
{
    int finite = 1;
    const size_t width = raw_bits ? 4 : 2;
    const size_t available = size / width;
    for (size_t k = 0; k < count; k++) {
        if (available == 0) {
            m[k] = 0.0f;
            continue;
        }
        const uint8_t *p = data + (k % available) * width;
        if (raw_bits) {
            const uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                                  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&m[k], &bits, 4);
            finite &= isfinite(m[k]) != 0;
        } else {
            const int16_t v = (int16_t)(p[0] | p[1] << 8);
            m[k] = ldexpf((float)v, exponent);
        }
    }
    return finite;
}

/* Every decoded weight lies within the block's input range widened by that range, plus the
 * fp16 rounding of scale and (masked) bias: a loose bound that only a broken fit breaks.
 * A cropped edge block is encoded with its padding as zeros (the zero-padded grid of spec
 * §22.3), which the fit sees too, so 0 belongs to such a block's range. */
static void check_error_bound(const float *in, const float *out, uint64_t rows, uint64_t cols)
{
    for (uint64_t by = 0; by * 64 < rows; by++)
        for (uint64_t bx = 0; bx * 64 < cols; bx++) {
            const uint64_t r1 = by * 64 + 64 < rows ? by * 64 + 64 : rows;
            const uint64_t c1 = bx * 64 + 64 < cols ? bx * 64 + 64 : cols;
            const int padded = r1 - by * 64 < 64 || c1 - bx * 64 < 64;
            float lo = padded ? 0.0f : INFINITY, hi = padded ? 0.0f : -INFINITY;
            for (uint64_t r = by * 64; r < r1; r++)
                for (uint64_t c = bx * 64; c < c1; c++) {
                    const float v = clip_half(in[r * cols + c]);
                    lo = fminf(lo, v);
                    hi = fmaxf(hi, v);
                }
            const double slack = (double)(hi - lo) +
                                 ldexp(fmax(fabs((double)lo), fabs((double)hi)), -5) +
                                 ldexp(1.0, -18);
            for (uint64_t r = by * 64; r < r1; r++)
                for (uint64_t c = bx * 64; c < c1; c++) {
                    const double err =
                        fabs((double)out[r * cols + c] - (double)clip_half(in[r * cols + c]));
                    if (!(err <= slack)) {
                        fprintf(stderr,
                                "weight (%llu, %llu): in %.9g out %.9g, block range [%.9g, "
                                "%.9g]\n",
                                (unsigned long long)r, (unsigned long long)c,
                                (double)in[r * cols + c], (double)out[r * cols + c],
                                (double)lo, (double)hi);
                        FUZZ_ASSERT(err <= slack);
                    }
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    const uint64_t rows = size_of_byte(data[0]), cols = size_of_byte(data[1]);
    const uint8_t flags = data[2];
    const unsigned second_look = (flags >> 4) & 7u;
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.profile = (flags & 1) ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
    o.policy = (flags & 2) ? SGFP4_POLICY_THRESHOLD : SGFP4_POLICY_RATE;
    o.fit = (flags & 4) ? SGFP4_FIT_REFERENCE : SGFP4_FIT_BEST;
    o.target_bpw = 1.0 + data[3] / 32.0;
    o.threshold = 0.25 + data[3] / 16.0;
    o.threads = flags & 128 ? 2 : 1;
    const int exponent = data[4] % 48 - 36;

    const size_t count = (size_t)(rows * cols);
    float *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
    FUZZ_ASSERT(in && out);
    const int finite = make_values(data + 5, size - 5, flags & 8, exponent, in, count);

    const size_t bound = sgfp4_encode_bound(o.profile, rows, cols);
    FUZZ_ASSERT(bound > 0);
    uint8_t *c1 = malloc(bound), *c2 = malloc(bound);
    FUZZ_ASSERT(c1 && c2);
    size_t n1 = 0, n2 = 0;
    const sgfp4_status s = sgfp4_encode(in, rows, cols, 0, c1, bound, &n1, &o, NULL);
    if (!finite) {
        FUZZ_ASSERT(s == SGFP4_ERR_ARGUMENT);
        goto done;
    }
    FUZZ_ASSERT(s == SGFP4_OK);
    FUZZ_ASSERT(n1 > 0 && n1 <= bound);

    /* Conformance: the strict open accepts it; the decode is near the input. */
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status so =
        sgfp4_tensor_open(c1, n1, o.profile, rows, cols, &t, NULL, &diag);
    if (so != SGFP4_OK)
        fprintf(stderr, "encoder output refused: %s\n", diag.message);
    FUZZ_ASSERT(so == SGFP4_OK);
    const sgfp4_decode_options scalar = decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
    FUZZ_ASSERT(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, count * sizeof *out, &scalar) ==
                SGFP4_OK);
    sgfp4_tensor_close(t);
    check_error_bound(in, out, rows, cols);

    if (second_look == 5) {
        /* Determinism: another thread count (2, or 1 after 2) gives the same bytes. */
        o.threads = o.threads == 1 ? 2 : 1;
        memset(c2, 0xA5, bound);
        FUZZ_ASSERT(sgfp4_encode(in, rows, cols, 0, c2, bound, &n2, &o, NULL) == SGFP4_OK);
        FUZZ_ASSERT(n2 == n1 && memcmp(c1, c2, n1) == 0);
    } else if (second_look == 6) {
        void *allocated = NULL;
        size_t n3 = 0;
        FUZZ_ASSERT(sgfp4_encode_alloc(in, rows, cols, 0, &allocated, &n3, &o, NULL) == SGFP4_OK);
        FUZZ_ASSERT(n3 == n1 && memcmp(allocated, c1, n1) == 0);
        sgfp4_free(allocated);
    } else if (second_look == 7) {
        /* Too small a buffer: refused, and nothing written past it (ASan watches). */
        uint8_t *small = malloc(n1 - 1 ? n1 - 1 : 1);
        FUZZ_ASSERT(small);
        size_t n4 = 12345;
        FUZZ_ASSERT(sgfp4_encode(in, rows, cols, 0, small, n1 - 1, &n4, &o, NULL) ==
                    SGFP4_ERR_DST_TOO_SMALL);
        free(small);
    }
done:
    free(c1);
    free(c2);
    free(in);
    free(out);
    return 0;
}
