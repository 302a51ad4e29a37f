/* Listing a block's leaves for the AVX2 kernels (AVX2 CPUs only): the leaves of
 * sgfp4_block_leaf_refs() as arrays (sgfp4_leaf_list), grouped by kind. Positions come
 * from sgfp4_list_record_positions() (the split map walked by 16x16 nodes, listing/leaf_parse.c);
 * scales and biases are converted 8 headers at a time by the exact integer route; then
 * sgfp4_list_group() records each leaf's mode, payload offset and kind group.
 * SPDX-License-Identifier: MIT */
#include "listing/leaf_list.h"

#ifdef SGFP4_HAVE_X86_KERNELS
#include <immintrin.h>

#define AVX2 __attribute__((target(SGFP4_TARGET_AVX2)))

/* Exact f32 of 8 finite halves (low 16 bits of each lane), as sgfp4_half_to_float_finite():
 * normal halves by integer re-biasing, the others as magnitude * 2^-24 (an exact conversion
 * and an exact product whose result is 0 or a normal binary32, so flush-to-zero and
 * denormals-are-zero do not touch it); the sign is OR-ed in last (-0 stays -0). */
static AVX2 inline __m256 halves_to_floats_x8(__m256i half)
{
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(half, _mm256_set1_epi32(0x8000)), 16);
    const __m256i magnitude = _mm256_and_si256(half, _mm256_set1_epi32(0x7FFF));
    const __m256i normal =
        _mm256_add_epi32(_mm256_slli_epi32(magnitude, 13), _mm256_set1_epi32(112 << 23));
    const __m256 small = _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(0x1p-24f));
    const __m256i is_normal = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x3FF));
    const __m256i bits = _mm256_blendv_epi8(_mm256_castps_si256(small), normal, is_normal);
    return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
}

AVX2 void sgfp4_avx2_halves_to_floats(const uint16_t *halves, size_t count, float *out)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(halves + i));
        _mm256_storeu_ps(out + i, halves_to_floats_x8(_mm256_cvtepu16_epi32(h)));
    }
    for (; i < count; i++)
        out[i] = sgfp4_half_to_float_finite(halves[i]);
}

AVX2 unsigned sgfp4_avx2_block_leaves(const sgfp4_tensor *t, uint64_t b, sgfp4_leaf_list *list)
{
    const uint8_t *headers;
    const unsigned n = sgfp4_list_begin(t, b, list, &headers);
    if (!headers)
        return n; /* v1: listed */
    for (unsigned i = 0; i < n; i += 8) {
        __m256i h;
        if (n - i >= 8) {
            h = _mm256_loadu_si256((const __m256i *)(headers + 4 * i));
        } else { /* the last headers only: no read past them (the record may end the data) */
            const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)),
                                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            h = _mm256_maskload_epi32((const int *)(headers + 4 * i), live);
        }
        _mm256_storeu_ps(list->scale + i, halves_to_floats_x8(_mm256_srli_epi32(h, 16)));
        _mm256_storeu_ps(list->bias + i,
                         halves_to_floats_x8(_mm256_and_si256(h, _mm256_set1_epi32(0xFFF0))));
    }
    sgfp4_list_group(list, n);
    return n;
}

#endif
