/* Listing a block's leaves for the AVX-512 kernels (AVX-512 CPUs only): the leaves of
 * sgfp4_block_leaf_refs() as arrays, grouped by size, computed 16 leaves at a time. At a few
 * bits per weight a record holds ~50 leaves, and a per-leaf, per-split-bit listing costs as
 * much as decoding the weights (docs/decode.md has the numbers).
 *
 * - Positions: sgfp4_list_record_positions() (the split map walked by 16x16 nodes through
 *   a table, leaf_parse.c), as descriptors (class << 16 | y * 64 + x).
 * - Scales and biases: 16 headers at a time, with the exact integer fp16 conversion.
 * - Payloads: each leaf's padded payload size from its class and mode, then an exclusive
 *   prefix sum over storage order.
 * - Grouping: per kind (size class and mode), vpcompressd of the leaf indices.
 * SPDX-License-Identifier: MIT */
#include "listing/leaf_list.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <immintrin.h>

#define AVX512 __attribute__((target(SGFP4_TARGET_AVX512)))

/* Exact f32 of 16 finite halves (low 16 bits of each lane), as sgfp4_half_to_float_finite():
 * normal halves by integer re-biasing, the others as magnitude * 2^-24 (an exact conversion
 * and an exact product, so no flush-to-zero or denormals-are-zero mode changes them). */
static AVX512 inline __m512 halves_to_floats(__m512i half)
{
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(half, _mm512_set1_epi32(0x8000)), 16);
    const __m512i magnitude = _mm512_and_si512(half, _mm512_set1_epi32(0x7FFF));
    const __m512i normal =
        _mm512_add_epi32(_mm512_slli_epi32(magnitude, 13), _mm512_set1_epi32(112 << 23));
    const __m512 small = _mm512_mul_ps(_mm512_cvtepi32_ps(magnitude), _mm512_set1_ps(0x1p-24f));
    const __mmask16 is_normal = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x3FF));
    const __m512i bits = _mm512_mask_blend_epi32(is_normal, _mm512_castps_si512(small), normal);
    return _mm512_castsi512_ps(_mm512_or_si512(bits, sign));
}

AVX512 void sgfp4_avx512_halves_to_floats(const uint16_t *halves, size_t count, float *out)
{
    size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(halves + i));
        _mm512_storeu_ps(out + i, halves_to_floats(_mm512_cvtepu16_epi32(h)));
    }
    for (; i < count; i++)
        out[i] = sgfp4_half_to_float_finite(halves[i]);
}

/* Per 16 leaves of a record (headers h, descriptors d): scale, bias and mode, the padded
 * payload sizes' exclusive prefix sum (plus *running), and the indices of each kind in
 * [first_kind, last_kind] compressed into list->by_kind. */
static AVX512 inline void list_16(sgfp4_leaf_list *list, unsigned i, unsigned live,
                                  const uint8_t *headers, uint32_t *running, unsigned first_kind,
                                  unsigned last_kind)
{
    const __mmask16 lanes = (__mmask16)(live >= 16 ? 0xFFFFu : (1u << live) - 1);
    /* masked: no read past the last header (the record may end the container) */
    const __m512i h = _mm512_maskz_loadu_epi32(lanes, headers + 4 * i);
    const __m512i d = _mm512_loadu_si512(list->desc + i);
    _mm512_storeu_ps(list->scale + i, halves_to_floats(_mm512_srli_epi32(h, 16)));
    _mm512_storeu_ps(list->bias + i,
                     halves_to_floats(_mm512_and_si512(h, _mm512_set1_epi32(0xFFF0))));
    /* modes from the view's copy of them (container/tensor.h), not from the headers */
    const __mmask16 t158 = (__mmask16)(list->modes[i / 32] >> (i % 32));
    const __m512i mode = _mm512_maskz_set1_epi32(t158, 1);
    _mm512_storeu_si512(list->mode + i, mode);
    /* payload bytes: max(16, (8 << 2 * class) >> mode), 0 past the last leaf */
    const __m512i cls = _mm512_srli_epi32(d, 16);
    const __m512i bytes = _mm512_maskz_max_epu32(
        lanes, _mm512_srlv_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(8), _mm512_add_epi32(cls, cls)),
                                 mode),
        _mm512_set1_epi32(16));
    const __m512i zero = _mm512_setzero_si512();
    __m512i sum = bytes; /* inclusive prefix sum in four steps */
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 15));
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 14));
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 12));
    sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 8));
    const __m512i base = _mm512_set1_epi32((int)*running);
    _mm512_storeu_si512(list->offset + i, _mm512_add_epi32(base, _mm512_sub_epi32(sum, bytes)));
    *running += (uint32_t)_mm_cvtsi128_si32(
        _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_set1_epi32(15), sum)));
    const __m512i index = _mm512_add_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)i));
    const __m512i kind = _mm512_add_epi32(_mm512_add_epi32(cls, cls), mode);
    for (unsigned k = first_kind; k <= last_kind; k++) {
        const __mmask16 in_kind =
            _mm512_mask_cmpeq_epi32_mask(lanes, kind, _mm512_set1_epi32((int)k));
        _mm_storeu_si128((__m128i *)(list->by_kind[k] + list->kind_count[k]),
                         _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(in_kind, index)));
        list->kind_count[k] += (unsigned)__builtin_popcount(in_kind);
    }
}

AVX512 unsigned sgfp4_avx512_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    const uint8_t *headers;
    const unsigned n = sgfp4_list_begin(t, b, list, &headers);
    if (!headers)
        return n; /* v1: listed */
    for (unsigned k = 0; k < SGFP4_LEAF_KINDS; k++)
        list->kind_count[k] = 0;
    /* the kinds that can occur: a uniform layout's (its leaves come from a constant table)
     * size class only; MIXED 4x4 to 32x32, or one 64x64 leaf */
    const bool mixed = list->desc == list->desc_buffer && n > 1;
    const unsigned first_class = list->desc[0] >> 16;
    const unsigned last_class = mixed ? 3 : first_class;
    const unsigned first = mixed ? 0 : first_class;
    uint32_t running = 0;
    for (unsigned i = 0; i < n; i += 16)
        list_16(list, i, n - i, headers, &running, 2 * first, 2 * last_class + 1);
    return list->count = n;
}

#endif
