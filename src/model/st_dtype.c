/* safetensors dtypes: names, sizes in bits (sub-byte dtypes included), and the exact
 * conversions of the 8-bit floats to and from float32.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "model/model_internal.h"

/* The dtype list of the safetensors format (its Rust source's `Dtype`), with element sizes
 * in bits: F4 packs two elements per byte, F6 four per three bytes. */
static const struct {
    const char *name;
    unsigned bits;
} dtypes[SGFP4_ST_DTYPE_COUNT] = {
    [SGFP4_ST_BOOL] = {"BOOL", 8},
    [SGFP4_ST_U8] = {"U8", 8},
    [SGFP4_ST_I8] = {"I8", 8},
    [SGFP4_ST_F8_E4M3] = {"F8_E4M3", 8},
    [SGFP4_ST_F8_E5M2] = {"F8_E5M2", 8},
    [SGFP4_ST_I16] = {"I16", 16},
    [SGFP4_ST_U16] = {"U16", 16},
    [SGFP4_ST_F16] = {"F16", 16},
    [SGFP4_ST_BF16] = {"BF16", 16},
    [SGFP4_ST_I32] = {"I32", 32},
    [SGFP4_ST_U32] = {"U32", 32},
    [SGFP4_ST_F32] = {"F32", 32},
    [SGFP4_ST_I64] = {"I64", 64},
    [SGFP4_ST_U64] = {"U64", 64},
    [SGFP4_ST_F64] = {"F64", 64},
    [SGFP4_ST_F8_E8M0] = {"F8_E8M0", 8},
    [SGFP4_ST_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8},
    [SGFP4_ST_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8},
    [SGFP4_ST_F4] = {"F4", 4},
    [SGFP4_ST_F6_E2M3] = {"F6_E2M3", 6},
    [SGFP4_ST_F6_E3M2] = {"F6_E3M2", 6},
    [SGFP4_ST_C64] = {"C64", 64},
};

const char *sgfp4_st_dtype_name(sgfp4_st_dtype dtype)
{
    return (unsigned)dtype < SGFP4_ST_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

size_t sgfp4_st_dtype_bits(sgfp4_st_dtype dtype)
{
    return (unsigned)dtype < SGFP4_ST_DTYPE_COUNT ? dtypes[dtype].bits : 0;
}

size_t sgfp4_st_dtype_size(sgfp4_st_dtype dtype)
{
    const size_t bits = sgfp4_st_dtype_bits(dtype);
    return bits % 8 == 0 ? bits / 8 : 0;
}

sgfp4_status sgfp4_st_dtype_bytes(sgfp4_st_dtype dtype, uint64_t elements, uint64_t *bytes)
{
    const uint64_t bits = sgfp4_st_dtype_bits(dtype);
    if (bits == 0 || !bytes)
        return SGFP4_ERR_ARGUMENT;
    /* elements * bits / 8 without overflow: bits is 4, 6, 8, 16, 32 or 64. */
    const uint64_t whole = elements / 8, part = elements % 8;
    if (whole > UINT64_MAX / bits)
        return SGFP4_ERR_LIMIT;
    const uint64_t rest = part * bits; /* < 512 */
    if (rest % 8 != 0)
        return SGFP4_ERR_SHAPE;
    if (whole * bits > UINT64_MAX - rest / 8)
        return SGFP4_ERR_LIMIT;
    *bytes = whole * bits + rest / 8;
    return SGFP4_OK;
}

sgfp4_status sgfp4_st_dtype_parse(const char *name, sgfp4_st_dtype *dtype)
{
    if (!name || !dtype)
        return SGFP4_ERR_ARGUMENT;
    for (unsigned k = 0; k < SGFP4_ST_DTYPE_COUNT; k++)
        if (strcmp(name, dtypes[k].name) == 0) {
            *dtype = (sgfp4_st_dtype)k;
            return SGFP4_OK;
        }
    return SGFP4_ERR_MODEL_DTYPE;
}

bool sgfp4_st_dtype_is_quantizable(sgfp4_st_dtype dtype)
{
    return dtype == SGFP4_ST_F32 || dtype == SGFP4_ST_F16 || dtype == SGFP4_ST_BF16 ||
           dtype == SGFP4_ST_F8_E4M3 || dtype == SGFP4_ST_F8_E5M2;
}

/* ---- 8-bit floats --------------------------------------------------------------------
 * F8_E4M3 is OCP's E4M3FN: bias 7, no infinities, S.1111.111 is NaN, largest 448.
 * F8_E5M2 is the top byte of an IEEE binary16: bias 15, infinities and NaNs as there,
 * largest finite 57344. Every value of either is exactly a float32. */

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float sgfp4_f8e4m3_to_float(uint8_t byte)
{
    const uint32_t sign = (uint32_t)(byte >> 7) << 31;
    const unsigned e = (byte >> 3) & 15, m = byte & 7;
    if (e == 15 && m == 7)
        return from_bits(sign | 0x7FC00000u);
    if (e == 0) /* subnormal: m * 2^-9, exact as a float32 of exponent >= -9 */
        return from_bits(sign | to_bits((float)m * 0x1p-9f));
    return from_bits(sign | (e - 7 + 127) << 23 | (uint32_t)m << 20);
}

float sgfp4_f8e5m2_to_float(uint8_t byte) { return sgfp4_half_to_float((uint16_t)(byte << 8)); }

/* Rounds the magnitude bits u (a finite float32, sign cleared) to a float with `mbits`
 * mantissa bits and exponent bias `bias`, round to nearest even, saturating at `max_code`
 * (the largest finite code of the format, sign excluded). */
static uint8_t round_magnitude(uint32_t u, unsigned mbits, int bias, uint8_t max_code)
{
    const int exponent = (int)(u >> 23) - 127;
    if (exponent >= 1 - bias) { /* normal in the target format (or beyond its range) */
        if (exponent > bias + 1)
            return max_code; /* far above the largest value: saturate */
        const unsigned shift = 23 - mbits;
        uint32_t r = u >> shift;
        const uint32_t rest = u & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (r & 1)))
            r++; /* a carry into the exponent is the right result */
        const uint32_t code = r - ((uint32_t)(127 - bias) << mbits);
        return code > max_code ? max_code : (uint8_t)code;
    }
    /* Below the smallest normal: multiples of 2^(1 - bias - mbits). The scaling is exact;
     * code 1 << mbits (the smallest normal) is the right encoding when rounding reaches it. */
    const float scaled = from_bits(u) * from_bits((uint32_t)(127 + bias - 1 + (int)mbits) << 23);
    uint32_t q = (uint32_t)scaled; /* truncation of a value in [0, 2^mbits) */
    const float fraction = scaled - (float)q;
    if (fraction > 0.5f || (fraction == 0.5f && (q & 1)))
        q++;
    return (uint8_t)q;
}

uint8_t sgfp4_float_to_f8e4m3(float value)
{
    const uint32_t u = to_bits(value);
    const uint8_t sign = (uint8_t)(u >> 24 & 0x80);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return sign | 0x7F; /* NaN */
    return sign | round_magnitude(u & 0x7FFFFFFFu, 3, 7, 0x7E);
}

uint8_t sgfp4_float_to_f8e5m2(float value)
{
    const uint32_t u = to_bits(value);
    const uint8_t sign = (uint8_t)(u >> 24 & 0x80);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return sign | 0x7E; /* NaN */
    return sign | round_magnitude(u & 0x7FFFFFFFu, 2, 15, 0x7B);
}

size_t sgfp4_st_narrow_f32(sgfp4_st_dtype dtype, void *buffer, size_t count)
{
    const float *src = buffer;
    uint8_t *dst = buffer;
    /* In place, front to back: byte k is written after float k was read (k <= 4k). */
    for (size_t k = 0; k < count; k++) {
        const float v = src[k];
        dst[k] = dtype == SGFP4_ST_F8_E4M3 ? sgfp4_float_to_f8e4m3(v) : sgfp4_float_to_f8e5m2(v);
    }
    return count;
}
