/* Byte-level helpers shared by every layer: little-endian loads, float bit casts, and the
 * constants of the SGFP4 layouts (chapter 22 of the spec; docs/format.md).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_FORMAT_BITS_H
#define SGFP4_FORMAT_BITS_H

#include <stdint.h>
#include <string.h>

#define SGFP4_MB 64u               /* macroblock edge */
#define SGFP4_V1_PAYLOAD 2048u     /* v1 payload bytes per block */
#define SGFP4_V1_BLOCK_BYTES 2056u /* header + offset + payload per v1 block */
#define SGFP4_V2_FIXED_HEADER 16u  /* magic, version, B, pad */
#define SGFP4_V2_VERSION 0x02u
#define SGFP4_SPLIT_BITS 85u       /* most bits a split map can use */
#define SGFP4_MAX_LEAVES 256u      /* 4x4 leaves in a macroblock */

/* Little-endian loads from any address. On little-endian hosts a memcpy, which compilers
 * fold into the instruction that uses the value (a vector broadcast from memory, say). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SGFP4_LOAD_LE(type, p)                                                                 \
    do {                                                                                       \
        type v_;                                                                               \
        memcpy(&v_, (p), sizeof v_);                                                           \
        return v_;                                                                             \
    } while (0)
#else
#define SGFP4_LOAD_LE(type, p)                                                                 \
    do {                                                                                       \
        type v_ = 0;                                                                           \
        for (unsigned i_ = sizeof v_; i_-- > 0;)                                               \
            v_ = (type)(v_ << 8 | (p)[i_]);                                                    \
        return v_;                                                                             \
    } while (0)
#endif

static inline uint32_t sgfp4_load_u16le(const uint8_t *p) { SGFP4_LOAD_LE(uint16_t, p); }
static inline uint32_t sgfp4_load_u32le(const uint8_t *p) { SGFP4_LOAD_LE(uint32_t, p); }
static inline uint64_t sgfp4_load_u64le(const uint8_t *p) { SGFP4_LOAD_LE(uint64_t, p); }
#undef SGFP4_LOAD_LE

static inline void sgfp4_store_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline float sgfp4_bits_to_float(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t sgfp4_float_to_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

static inline uint64_t sgfp4_align16(uint64_t n) { return (n + 15u) & ~(uint64_t)15u; }

/* FP4 code i of a payload: nibble 4*(i%8) of word i/8, two's complement (D4). */
static inline int sgfp4_fp4_code(const uint8_t *payload, unsigned i)
{
    const unsigned nibble = (payload[i >> 1] >> ((i & 1u) * 4u)) & 0xFu;
    return nibble < 8u ? (int)nibble : (int)nibble - 16;
}

/* T158 code i of a payload: 2-bit symbol 2*(i%16) of word i/16; 00->0, 01->+1, 10->-1,
 * 11 (reserved) -> 0 (D4). */
static inline int sgfp4_t158_code(const uint8_t *payload, unsigned i)
{
    static const int8_t symbol_value[4] = {0, 1, -1, 0};
    return symbol_value[(payload[i >> 2] >> ((i & 3u) * 2u)) & 3u];
}

/* Payload bytes (before padding) of a leaf of edge `size` in `mode` (0 FP4, 1 T158). */
static inline uint32_t sgfp4_payload_bytes(unsigned size, unsigned mode)
{
    return mode ? size * size / 4u : size * size / 2u;
}

/* Log2-free index of a leaf size in the public count arrays: 64->0 ... 4->4. */
static inline unsigned sgfp4_size_index(unsigned size)
{
    return size == 64 ? 0 : size == 32 ? 1 : size == 16 ? 2 : size == 8 ? 3 : 4;
}

#endif
