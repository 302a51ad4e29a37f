/* AArch64 Advanced SIMD (NEON) decode kernels. NEON is part of the base AArch64 ISA, so
 * every AArch64 CPU (Graviton, Ampere, Apple, Cortex-A) runs them; nothing is detected.
 *
 * Weights by table. A leaf's codes take at most 16 values, so once per leaf four vfmaq_f32
 * compute its reconstructions fl32(S * q + B) for the 16 table indices (S * q is exact in
 * binary32, DECISIONS D1, so the fused multiply-add rounds once, exactly like the oracle's
 * multiply then add). The table is kept as four byte planes: plane k holds byte k of each
 * of the 16 floats. Then 16 weights cost one 8-byte load of their payload bytes, a
 * vqtbl1q_u8 that puts the byte holding code i in lane i, a vshlq_u8 (by a negative count:
 * a right shift) that brings the code to bits 0..3, an AND, four vqtbl1q_u8 lookups (one
 * per plane, the codes as indices) and eight zips that interleave the planes back into four
 * float vectors. The two modes differ only in data (which byte and shift hold code i, and
 * the table: T158 symbols repeat with period 4, 11 decoding as 0, D4), so FP4 and T158
 * leaves run the same instructions (the block loop hands them over kind by kind, so the
 * data is a constant in each loop). No load reaches
 * past the last payload byte of the codes it decodes (a leaf's payload can end the
 * container): an FP4 load is exactly its 16 codes' 8 bytes, a T158 load ends with its 16
 * codes' 4 bytes and starts 4 bytes before them, still inside the container (leaf headers
 * or another payload precede every payload).
 *
 * Leaves: sgfp4_neon_block_leaves() (listing/leaves_neon.c).
 *
 * Tiles and the block loop: tile_driver.h, shared with the x86 sets (two L1 tiles, the
 * previous tile's rows written out a few after each leaf, leaves kind by kind through
 * copies specialised for size and mode, gathers by vector). Rows go out as plain 16-byte vst1q stores through byte pointers (any row stride and
 * destination alignment): f32 as is; f16 and bf16 rounded to nearest even (decoded weights
 * are finite: no NaN case) by integer arithmetic, except f16 subnormals, which are an exact
 * scaling by 2^24 and an FCVTNU (ties to even by its encoding): no FPCR setting (FZ, FZ16,
 * the rounding mode) changes a bit, subnormal halves included. A partial last tile ends
 * with a copy of just its valid bytes.
 *
 * Stores. `streaming` is accepted and ignored: ACLE has no non-temporal store intrinsic
 * (STNP is only a hint, through inline assembly), and Cortex-A / Neoverse cores switch to a
 * write-streaming (no line fill) mode by themselves on runs of whole-line writes, as their
 * manuals describe, which is what each 256-byte f32 tile row is. finish() has nothing to
 * order. None of this is measured: the project's CI runs these kernels under qemu-user,
 * which times nothing.
 * SPDX-License-Identifier: MIT */
#include "decode/tile_job.h"

#ifdef SGFP4_HAVE_NEON_KERNELS
#include <arm_neon.h>

/* Inlined into each caller, so that sizes and dtypes passed as constants specialise it. */
#define NEON_INLINE static inline __attribute__((always_inline))
/* for tile_driver.h: plain stores only (see the file header) */
#define TILE_INLINE NEON_INLINE
#define TILE_FN static
#define TILE_CAN_STREAM 0

/* The value of each 4-bit table index, per mode: FP4 nibble n is n or n - 16; T158 reads
 * the low 2 bits (00 -> 0, 01 -> +1, 10 -> -1, 11 -> 0, D4; bits 2..3 are the next symbol's). */
static const float code_value[2][16] __attribute__((aligned(16))) = {
    {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1},
    {0, 1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0}};

/* Lane i gets the byte of the 8 loaded that holds code i, per mode. FP4: code i is in byte
 * i / 2. T158: the load starts 4 bytes before the codes, and code i is in byte 4 + i / 4. */
static const uint8_t code_pick[2][16] __attribute__((aligned(16))) = {
    {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7},
    {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7}};

/* Right shifts (negative vshlq counts) that bring code i to bits 0..3 of its lane. */
static const int8_t code_shift[2][16] __attribute__((aligned(16))) = {
    {0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4},
    {0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6}};

/* ---- numbers ---------------------------------------------------------------------- */

/* binary16 bits of 4 finite floats, round to nearest even, whatever FPCR says. */
NEON_INLINE uint16x4_t f16_x4(float32x4_t v)
{
    const uint32x4_t bits = vreinterpretq_u32_f32(v);
    const uint32x4_t sign = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x8000u));
    const uint32x4_t magnitude = vandq_u32(bits, vdupq_n_u32(0x7FFFFFFFu));
    /* |v| >= 2^-14, a normal half, in integer arithmetic: re-bias the exponent from 127 to
     * 15 and round the low 13 bits away, to nearest even (add 0xFFF plus the lowest kept
     * bit; a carry out of the significand correctly bumps the exponent). From 65520 on that
     * reaches 0x7C00 or more: infinity. (The subtraction wraps for smaller magnitudes, whose
     * lanes the select below discards.) */
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(magnitude, 13), vdupq_n_u32(1));
    const uint32x4_t rounded =
        vaddq_u32(vaddq_u32(magnitude, lsb), vdupq_n_u32(0xFFFu - (112u << 23)));
    const uint32x4_t normal = vminq_u32(vshrq_n_u32(rounded, 13), vdupq_n_u32(0x7C00u));
    /* |v| < 2^-14, a subnormal half: its bits count units of 2^-24, so they are |v| * 2^24
     * rounded to an integer. The product is exact (a power-of-two scaling with a normal or
     * zero result), and FCVTNU rounds to nearest even by its encoding, not by FPCR.RMode.
     * Under flush-to-zero an input below 2^-126 reads as 0, which is also its correct half;
     * a result of 0x400 is the smallest normal half, correctly encoded. */
    const uint32x4_t subnormal =
        vcvtnq_u32_f32(vmulq_f32(vreinterpretq_f32_u32(magnitude), vdupq_n_f32(0x1p24f)));
    const uint32x4_t is_normal = vcgeq_u32(magnitude, vdupq_n_u32(113u << 23));
    return vmovn_u32(vorrq_u32(vbslq_u32(is_normal, normal, subnormal), sign));
}

/* bfloat16 bits of 4 finite floats, round to nearest even: (bits + 0x7FFF + lsb) >> 16. */
NEON_INLINE uint16x4_t bf16_x4(float32x4_t v)
{
    const uint32x4_t bits = vreinterpretq_u32_f32(v);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
    return vshrn_n_u32(vaddq_u32(bits, vaddq_u32(vdupq_n_u32(0x7FFFu), lsb)), 16);
}

/* 8 floats at src as 8 halves of `dtype` (F16 or BF16). */
NEON_INLINE uint16x8_t halves_x8(const float *src, sgfp4_dtype dtype)
{
    const float32x4_t lo = vld1q_f32(src), hi = vld1q_f32(src + 4);
    if (dtype == SGFP4_DTYPE_F16)
        return vcombine_u16(f16_x4(lo), f16_x4(hi));
    return vcombine_u16(bf16_x4(lo), bf16_x4(hi));
}

/* ---- codes to weights ------------------------------------------------------------- */

/* What decoding one leaf needs, set up once per leaf. */
typedef struct tile_codes {
    uint8x16x4_t planes; /* byte k (little-endian) of the weight of each 4-bit index */
    uint8x16_t pick;     /* code_pick of the leaf's mode */
    int8x16_t shift;     /* code_shift of the leaf's mode */
    const uint8_t *load; /* where the 8-byte load of vector 0 starts */
    unsigned step;       /* payload bytes per 16 codes: 8 (FP4) or 4 (T158) */
} tile_codes;

/* The byte planes of 16 floats (t[0] holds floats 0..3, ...): two rounds of unzips. */
NEON_INLINE uint8x16x4_t planes_of(const float32x4_t t[4])
{
    const uint16x8_t low01 = vuzp1q_u16(vreinterpretq_u16_f32(t[0]), vreinterpretq_u16_f32(t[1]));
    const uint16x8_t high01 = vuzp2q_u16(vreinterpretq_u16_f32(t[0]), vreinterpretq_u16_f32(t[1]));
    const uint16x8_t low23 = vuzp1q_u16(vreinterpretq_u16_f32(t[2]), vreinterpretq_u16_f32(t[3]));
    const uint16x8_t high23 = vuzp2q_u16(vreinterpretq_u16_f32(t[2]), vreinterpretq_u16_f32(t[3]));
    uint8x16x4_t p;
    p.val[0] = vuzp1q_u8(vreinterpretq_u8_u16(low01), vreinterpretq_u8_u16(low23));
    p.val[1] = vuzp2q_u8(vreinterpretq_u8_u16(low01), vreinterpretq_u8_u16(low23));
    p.val[2] = vuzp1q_u8(vreinterpretq_u8_u16(high01), vreinterpretq_u8_u16(high23));
    p.val[3] = vuzp2q_u8(vreinterpretq_u8_u16(high01), vreinterpretq_u8_u16(high23));
    return p;
}

/* Leaf i of a listed block, whose mode is `mode` (a constant where the caller can). */
NEON_INLINE tile_codes tile_codes_of(const sgfp4_leaf_list *list, unsigned i, unsigned mode)
{
    const float32x4_t scale = vdupq_n_f32(list->scale[i]), bias = vdupq_n_f32(list->bias[i]);
    float32x4_t table[4];
    for (unsigned k = 0; k < 4; k++) /* bias + code * scale, one rounding */
        table[k] = vfmaq_f32(bias, vld1q_f32(code_value[mode] + 4 * k), scale);
    tile_codes c;
    c.planes = planes_of(table);
    c.pick = vld1q_u8(code_pick[mode]);
    c.shift = vld1q_s8(code_shift[mode]);
    c.load = list->payload + list->offset[i] - 4 * mode;
    c.step = 8u >> mode;
    return c;
}

/* Where leaf i's top-left corner lies in the tile, and its edge. */
static inline unsigned leaf_at(const sgfp4_leaf_list *list, unsigned i)
{
    return list->desc[i] & 0xFFFFu;
}
static inline unsigned leaf_size(const sgfp4_leaf_list *list, unsigned i)
{
    return 4u << (list->desc[i] >> 16);
}

/* Decodes weights 16v .. 16v + 15 (storage order: row-major in the leaf) of a leaf of edge
 * `size` whose top-left corner is at `at` in the tile, and stores them there: 16 weights are
 * a quarter row (64), half a row (32), a row (16), two rows (8) or four rows (4). (Four
 * separate vectors, not a float32x4x4_t: GCC spills such tuples to the stack.) */
NEON_INLINE void decode_vector(const tile_codes *c, unsigned v, float *at, unsigned size)
{
    const uint8x8_t raw = vld1_u8(c->load + (size_t)v * c->step);
    const uint8x16_t bytes = vcombine_u8(raw, vdup_n_u8(0));
    const uint8x16_t index =
        vandq_u8(vshlq_u8(vqtbl1q_u8(bytes, c->pick), c->shift), vdupq_n_u8(0x0Fu));
    const uint8x16_t b0 = vqtbl1q_u8(c->planes.val[0], index);
    const uint8x16_t b1 = vqtbl1q_u8(c->planes.val[1], index);
    const uint8x16_t b2 = vqtbl1q_u8(c->planes.val[2], index);
    const uint8x16_t b3 = vqtbl1q_u8(c->planes.val[3], index);
    /* bytes 0,1 and bytes 2,3 of weights 0..7 and 8..15, then whole weights */
    const uint16x8_t low01 = vreinterpretq_u16_u8(vzip1q_u8(b0, b1));
    const uint16x8_t high01 = vreinterpretq_u16_u8(vzip2q_u8(b0, b1));
    const uint16x8_t low23 = vreinterpretq_u16_u8(vzip1q_u8(b2, b3));
    const uint16x8_t high23 = vreinterpretq_u16_u8(vzip2q_u8(b2, b3));
    float *w[4]; /* where weights 0..3, 4..7, 8..11 and 12..15 go */
    if (size >= 16) {
        const unsigned per_row = size / 16;
        w[0] = at + SGFP4_MB * (v / per_row) + 16 * (v % per_row);
        w[1] = w[0] + 4;
        w[2] = w[0] + 8;
        w[3] = w[0] + 12;
    } else if (size == 8) {
        w[0] = at + SGFP4_MB * 2 * v;
        w[1] = w[0] + 4;
        w[2] = w[0] + SGFP4_MB;
        w[3] = w[0] + SGFP4_MB + 4;
    } else { /* v is 0: a 4x4 leaf is one vector */
        w[0] = at;
        w[1] = at + SGFP4_MB;
        w[2] = at + 2 * SGFP4_MB;
        w[3] = at + 3 * SGFP4_MB;
    }
    vst1q_f32(w[0], vreinterpretq_f32_u16(vzip1q_u16(low01, low23)));
    vst1q_f32(w[1], vreinterpretq_f32_u16(vzip2q_u16(low01, low23)));
    vst1q_f32(w[2], vreinterpretq_f32_u16(vzip1q_u16(high01, high23)));
    vst1q_f32(w[3], vreinterpretq_f32_u16(vzip2q_u16(high01, high23)));
}

/* Leaf i, whole, of edge `size` and mode `mode` (constants at every call) into the tile. */
NEON_INLINE void tile_leaf_whole(const sgfp4_leaf_list *list, unsigned i, float *tile,
                                 unsigned size, unsigned mode)
{
    const tile_codes c = tile_codes_of(list, i, mode);
    float *at = tile + leaf_at(list, i);
#pragma GCC unroll 4
    for (unsigned v = 0; v < size * size / 16; v++)
        decode_vector(&c, v, at, size);
}

/* Row y of a 64x64 leaf: four vectors. */
NEON_INLINE void tile_leaf_row64(const tile_codes *c, float *tile, unsigned y, unsigned mode)
{
    (void)mode; /* in c already */
#pragma GCC unroll 4
    for (unsigned v = 4 * y; v < 4 * y + 4; v++)
        decode_vector(c, v, tile, SGFP4_MB);
}

/* The vectors of leaf i, of edge `size` (a constant at every call), that hold rows selected
 * by `rows` (a gather or a partial macroblock row): whole vectors, so an 8x8 leaf decodes
 * row pairs and a 4x4 leaf all four rows; the tile is scratch, and only the selected rows
 * are written out. */
NEON_INLINE void leaf_selected_sized(const sgfp4_leaf_list *list, unsigned i, uint64_t rows,
                                     float *tile, unsigned size)
{
    const unsigned rows_per_vector = size >= 16 ? 1 : 16 / size;
    const unsigned vectors_per_row = size >= 16 ? size / 16 : 1;
    uint64_t m = (rows >> (leaf_at(list, i) / SGFP4_MB)) & sgfp4_leaf_row_mask(0, size);
    if (!m)
        return;
    const tile_codes c = tile_codes_of(list, i, list->mode[i]);
    float *at = tile + leaf_at(list, i);
    /* the leaf's selected rows, bit r = leaf row r, visited one vector row group at a time */
    while (m) {
        const unsigned group = (unsigned)__builtin_ctzll(m) / rows_per_vector;
        for (unsigned v = group * vectors_per_row; v < (group + 1) * vectors_per_row; v++)
            decode_vector(&c, v, at, size);
        m &= ~sgfp4_leaf_row_mask(group * rows_per_vector, rows_per_vector);
    }
}

static void tile_leaf_selected(const sgfp4_leaf_list *list, unsigned i, uint64_t rows,
                               float *tile)
{
    switch (leaf_size(list, i)) {
    case 4: leaf_selected_sized(list, i, rows, tile, 4); break;
    case 8: leaf_selected_sized(list, i, rows, tile, 8); break;
    case 16: leaf_selected_sized(list, i, rows, tile, 16); break;
    case 32: leaf_selected_sized(list, i, rows, tile, 32); break;
    default: leaf_selected_sized(list, i, rows, tile, 64); break;
    }
}

/* ---- listing a block's leaves ----------------------------------------------------- */

TILE_FN unsigned tile_list_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    return sgfp4_neon_block_leaves(t, b, list);
}

/* ---- writing tile rows out -------------------------------------------------------- */

/* `width` (1..64) f32 values of a tile row to p, any alignment. */
NEON_INLINE void put_f32(uint8_t *p, const float *src, unsigned width)
{
    unsigned x = 0;
#pragma GCC unroll 16
    for (; x + 4 <= width; x += 4)
        vst1q_u8(p + 4 * x, vreinterpretq_u8_f32(vld1q_f32(src + x)));
    if (x < width)
        memcpy(p + 4 * x, src + x, 4 * (size_t)(width - x));
}

/* `width` (1..64) values of a tile row to p as halves of `dtype`, any alignment. The last
 * partial vector converts 8 tile floats (still inside the 64-float row) and copies out only
 * the valid ones. */
NEON_INLINE void put_16bit(uint8_t *p, const float *src, unsigned width, sgfp4_dtype dtype)
{
    unsigned x = 0;
#pragma GCC unroll 8
    for (; x + 8 <= width; x += 8)
        vst1q_u8(p + 2 * x, vreinterpretq_u8_u16(halves_x8(src + x, dtype)));
    if (x < width) {
        uint16_t last[8];
        vst1q_u16(last, halves_x8(src + x, dtype));
        memcpy(p + 2 * x, last, 2 * (size_t)(width - x));
    }
}

void sgfp4_neon_floats_to_16bit(const float *in, size_t count, sgfp4_dtype dtype,
                                uint16_t *out)
{
    /* through the row writer itself, 64 values at a time from a tile-like row */
    float row[SGFP4_MB] __attribute__((aligned(16)));
    for (size_t i = 0; i < count; i += SGFP4_MB) {
        const unsigned n = (unsigned)(count - i < SGFP4_MB ? count - i : SGFP4_MB);
        memset(row, 0, sizeof row);
        memcpy(row, in + i, 4 * (size_t)n);
        if (dtype == SGFP4_DTYPE_F16)
            put_16bit((uint8_t *)(out + i), row, n, SGFP4_DTYPE_F16);
        else
            put_16bit((uint8_t *)(out + i), row, n, SGFP4_DTYPE_BF16);
    }
}

/* The first `width` values (1..64) of a tile row with plain stores, any alignment. */
NEON_INLINE void tile_store_plain(uint8_t *p, const float *src, unsigned width,
                                  sgfp4_dtype dtype)
{
    if (dtype == SGFP4_DTYPE_F32)
        put_f32(p, src, width);
    else if (dtype == SGFP4_DTYPE_F16)
        put_16bit(p, src, width, SGFP4_DTYPE_F16);
    else
        put_16bit(p, src, width, SGFP4_DTYPE_BF16);
}

#include "decode/tile_driver.h"

static void neon_finish(void) {}

const sgfp4_decode_kernels sgfp4_kernels_neon = {"neon", tile_decode_rows, neon_finish,
                                                 TILE_SCRATCH_BYTES};

#endif
