// The SGFP4 decode kernel, shared by decode_rte.comp (float reconstruction, RoundingModeRTE
// declared), decode_rte16.comp (the same plus f16 outputs through the device's own f32 -> f16
// conversion, RoundingModeRTE declared for 16-bit results too) and decode_int.comp
// (integer-only reconstruction, for devices that cannot declare RTE). All produce the bits
// of DECISIONS D1:
//     w = fl32( fl32(S) * fl32(code) + fl32(Bias) ), round to nearest even.
//
// One workgroup of 256 invocations decodes one 64x64 macroblock. v2: invocation i handles
// the four consecutive weights (row, col..col+3) of chunks c = i + 256k, k = 0..3, with
// row = c / 16 and col = 4 * (c % 16) (a chunk lies in one leaf, even a 4x4 one). v1 (one
// leaf per block) with 16-bit outputs: eight consecutive weights, chunks c = i + 256k,
// k = 0..1, row = c / 8, col = 8 * (c % 8), so that an FP4 chunk is one whole payload word
// and its output one 16-byte store; with f32 outputs four, as in v2. Either way a subgroup's
// stores cover whole rows and its payload loads are consecutive words.
//
// The container was validated on the CPU (sgfp4_tensor_open); this shader trusts it.
// SPDX-License-Identifier: MIT

layout(local_size_x = 256) in;

// 0 = v1; 1 = v2 reading the CPU-built leaf table; 2 = v2 walking the record in the shader;
// 3 = v2 reading the products' layout (src/vulkan/vk_matvec_layout.c) in binding 0, one
// block per workgroup; 4 = the same, two blocks per workgroup (vk_decode.c chooses).
layout(constant_id = 0) const uint PROFILE = 0;
// 0 = f32, 1 = f16, 2 = bf16 (sgfp4_dtype).
layout(constant_id = 1) const uint DTYPE = 0;
// How f32 weights become f16 (all exact, round to nearest even): 0 = integer code, 1 = one
// float add under RoundingModeRTE (f32_to_f16_add), 2 = the device's conversion (only in
// decode_rte16.comp, whose module declares RoundingModeRTE for 16-bit results).
layout(constant_id = 2) const uint F16_CONVERSION = 0;
// With F16_CONVERSION 2: 1 where the device does not preserve f16 denormals (no DenormPreserve
// 16 declared): chunks with a weight in the f16 subnormal range take conversion 1 instead.
layout(constant_id = 3) const uint F16_GUARD = 1;

layout(std430, set = 0, binding = 0) readonly buffer Container { uint src[]; };
layout(std430, set = 0, binding = 1) readonly buffer LeafTable { uint tbl[]; };
layout(std430, set = 0, binding = 2) buffer DstWords { uint dst[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DstVec4 { uvec4 dstv[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DstVec2 { uvec2 dstv2[]; };
// Binding 0 again as pairs of words, for the leaves' S and Bias of the products' layout: one
// 8-byte load per leaf (its section starts at a multiple of 4 words), faster than two 4-byte
// loads; the block descriptions stay single words (docs/notes/2026-12-vulkan-kernels.md).
layout(std430, set = 0, binding = 5) readonly buffer ContainerPairs { uvec2 srcp[]; };

layout(push_constant) uniform Params {
    uint tiles_x;     // macroblocks per block row
    uint rows, cols;  // logical shape (O, I)
    uint blocks;      // tiles_y * tiles_x
    uint src_base;    // first word of the container in binding 0
    uint table_base;  // first word of the leaf table in binding 1
    uint dst_base;    // first output element in bindings 2/3 (elements of DTYPE)
    uint row_stride;  // output row stride in elements
    uint record_base; // v2: align16(16 + 4B) / 4, in words from the container start
    uint map_base;    // PROFILE 3: first word of the layout's cell maps in binding 0
    uint desc_base;   //   of its block descriptions
    uint sb_base;     //   of its leaves' S and Bias
} pc;

// A leaf, packed: payload word offset from the record start (bits 0-15), Morton index of
// its top-left 4x4 cell (bits 16-23; MIXED only), log2(size) - 2 (bits 24-26), mode (27).
shared uint s_leaf[256];
#ifdef SGFP4_INTEGER_RECONSTRUCTION
shared uint s_hdr[256];   // the leaf headers, flag bits cleared
#else
shared uvec2 s_aff[256];  // the leaf's S and B as binary32 bits, converted once per leaf
#endif
shared uint s_scan[256];
// MIXED: for each 4x4 cell (raster index cy * 16 + cx), what a chunk in it needs: its leaf's
// index (bits 0-7), log2(size) - 2 (8-10), top-left cell row (11-14) and column (15-18),
// mode (19) and payload word offset from the record start (20-31; < 1300).
shared uint s_cell[256];
shared uint s_count;
// v1, 16-bit outputs: the block's outputs for every byte of codes (FP4: two weights, one word
// at [byte]; T158: four, two words at [2 byte]), so that a chunk of 8 weights is four (two)
// table reads.
shared uint s_lut[DTYPE == 0u ? 1u : 512u];

const uint LAYOUT_MIXED = 4u;

// ---- exact conversions (integer only: no flush, no rounding mode involved) --------------

// IEEE binary16 -> binary32 bits, subnormals included.
uint half_to_float_bits(uint h)
{
    uint sign = (h & 0x8000u) << 16;
    uint e = (h >> 10) & 31u;
    uint m = h & 0x3FFu;
    if (e == 0u) {
        if (m == 0u)
            return sign;
        uint shift = 10u - uint(findMSB(m)); // normalise the leading one to bit 10
        return sign | ((113u - shift) << 23) | (((m << shift) & 0x3FFu) << 13);
    }
    return sign | ((e + 112u) << 23) | (m << 13); // e == 31 cannot pass validation
}

// Rounds away the low s bits of v (1 <= s <= 31), to nearest, ties to even.
uint round_shift_rne(uint v, uint s)
{
    uint half_ulp = 1u << (s - 1u);
    uint rest = v & ((1u << s) - 1u);
    uint kept = v >> s;
    if (rest > half_ulp || (rest == half_ulp && (kept & 1u) == 1u))
        kept++;
    return kept;
}

// binary32 bits -> binary16, round to nearest even (as sgfp4_float_to_half).
uint float_bits_to_half(uint bits)
{
    uint sign = (bits >> 16) & 0x8000u;
    uint e8 = (bits >> 23) & 0xFFu;
    uint m = bits & 0x7FFFFFu;
    if (e8 == 0xFFu)
        return sign | 0x7C00u | (m != 0u ? (0x200u | (m >> 13)) : 0u);
    int e = int(e8) - 127;
    if (e > 15)
        return sign | 0x7C00u;
    if (e >= -14) {
        uint h = (uint(e + 15) << 10) + round_shift_rne(m, 13u);
        return sign | min(h, 0x7C00u);
    }
    if (e < -25)
        return sign;
    return sign | round_shift_rne(m | 0x800000u, uint(-14 - e) + 13u);
}

// binary32 bits -> bfloat16 (as sgfp4_float_to_bf16) for finite values (decode never
// produces NaN or Inf): round to nearest even in one add whose carry reaches the upper half
// exactly when the lower half is above half an ulp, or at half with the kept part odd. The
// result is in bits 16-31.
uint f32_to_bf16_bias(uint bits)
{
    return bits + 0x7FFFu + ((bits >> 16) & 1u);
}

#ifndef SGFP4_INTEGER_RECONSTRUCTION
// binary32 bits -> binary16, round to nearest even, with one float add (only where
// RoundingModeRTE is declared for 32-bit floats). For |x| in the binade of 2^E, the f16
// quantum is q = 2^(max(E, -14) - 10); M = 2^23 q is a power of two above |x|, so
// fl(|x| + M) rounds |x| to a multiple of q, ties to even (M / q is even), and the sum's
// mantissa field is |x| / q rounded: the f16 significand, hidden bit included, or the
// subnormal count of 2^-24. Exact for finite |x| < 2^74 (checked against sgfp4_float_to_half
// on every such value); weights are below 2^20.
uint f32_to_f16_add(uint bits)
{
    uint e8 = max((bits >> 23) & 0xFFu, 113u); // 113: E = -14, the subnormal quantum
    uint m_bits = (e8 + 13u) << 23;
    precise float s = abs(uintBitsToFloat(bits)) + uintBitsToFloat(m_bits);
    uint h = floatBitsToUint(s) - m_bits + ((e8 - 113u) << 10);
    return min(h, 0x7C00u) | ((bits >> 16) & 0x8000u); // overflow rounds to infinity
}

// binary32 bits -> bfloat16 (as sgfp4_float_to_bf16) with three float operations (only where
// RoundingModeRTE is declared for 32-bit floats): Veltkamp's split with the constant
// 2^16 + 1, whose high part c - (c - x) is x rounded to 8 significant bits, ties to even.
// Exact for normal x with |x| < 2^104 (checked against the integer rounding on every such
// value); weights are 0 or between 2^-24 and 2^20 in magnitude. Low 16 bits of the result are 0.
uint f32_to_bf16_split(uint bits)
{
    float x = uintBitsToFloat(bits);
    precise float c = x * 65537.0;
    precise float d = c - x;
    precise float h = c - d;
    return floatBitsToUint(h);
}
#endif

#ifdef SGFP4_INTEGER_RECONSTRUCTION
// ---- integer-exact reconstruction --------------------------------------------------------
// Every term is an integer count of 2^-24 (the fp16 quantum) below 2^44, held in two words.

// v << s as (lo, hi), for v < 2^15 and s <= 29.
uvec2 shift_left64(uint v, uint s)
{
    if (s == 0u)
        return uvec2(v, 0u);
    return uvec2(v << s, v >> (32u - s));
}

// Magnitude of fp16 bits h in units of 2^-24, as (mantissa, shift).
uvec2 half_magnitude(uint h)
{
    uint e = (h >> 10) & 31u;
    uint m = h & 0x3FFu;
    return e == 0u ? uvec2(m, 0u) : uvec2(m | 0x400u, e - 1u);
}

// S and B of one leaf, decoded once for all its weights: sign, and magnitude in units of
// 2^-24 (S as mantissa and shift; B already shifted into two words).
struct Affine {
    uint sign_s, sign_b;
    uvec2 ms; // (mantissa, shift)
    uvec2 b;  // (lo, hi)
};

Affine prepare(uint hs, uint hb)
{
    Affine a;
    a.sign_s = (hs >> 15) & 1u;
    a.sign_b = (hb >> 15) & 1u;
    a.ms = half_magnitude(hs);
    uvec2 mb = half_magnitude(hb);
    a.b = shift_left64(mb.x, mb.y);
    return a;
}

// The f32 bits of S * q + B with one rounding, to nearest even.
uint reconstruct_bits(Affine a, int q)
{
    uint sign_p = a.sign_s ^ (q < 0 ? 1u : 0u);
    uint sign_b = a.sign_b;
    uvec2 p = shift_left64(a.ms.x * uint(abs(q)), a.ms.y);
    uvec2 b = a.b;
    uvec2 mag;
    uint sign;
    if (sign_p == sign_b) {
        uint carry;
        mag.x = uaddCarry(p.x, b.x, carry);
        mag.y = p.y + b.y + carry;
        sign = sign_p;
        if (mag.x == 0u && mag.y == 0u)
            return sign << 31; // both zero: -0 only if both are -0
    } else {
        bool p_larger = p.y > b.y || (p.y == b.y && p.x >= b.x);
        uvec2 big = p_larger ? p : b;
        uvec2 small = p_larger ? b : p;
        uint borrow;
        mag.x = usubBorrow(big.x, small.x, borrow);
        mag.y = big.y - small.y - borrow;
        sign = p_larger ? sign_p : sign_b;
        if (mag.x == 0u && mag.y == 0u)
            return 0u; // exact cancellation: +0 under round to nearest
    }
    int msb = mag.y != 0u ? 32 + findMSB(mag.y) : findMSB(mag.x);
    uint bits;
    if (msb <= 23) {
        bits = (uint(msb + 102) << 23) + (mag.x << uint(23 - msb));
    } else {
        uint s = uint(msb - 23); // 1..21
        uint kept = (mag.x >> s) | (mag.y << (32u - s));
        uint rest = mag.x & ((1u << s) - 1u);
        uint half_ulp = 1u << (s - 1u);
        if (rest > half_ulp || (rest == half_ulp && (kept & 1u) == 1u))
            kept++;
        bits = (uint(msb + 102) << 23) + kept; // a carry to 2^24 bumps the exponent
    }
    return (sign << 31) | bits;
}
#else
// ---- float reconstruction under RoundingModeRTE ------------------------------------------
// S and B of one leaf, decoded once for all its weights.
struct Affine {
    float s, b;
};

Affine prepare(uint hs, uint hb)
{
    Affine a;
    a.s = uintBitsToFloat(half_to_float_bits(hs));
    a.b = uintBitsToFloat(half_to_float_bits(hb));
    return a;
}

// The product is exact (an 11-bit significand times |q| <= 8), so the fma rounds once, to
// nearest even (RTE), exactly as a multiply and then an add would.
uint reconstruct_float(Affine a, float q)
{
    precise float w = fma(a.s, q, a.b);
    return floatBitsToUint(w);
}
#endif

// The leaf header h (v2: the low 4 bits of the bias are flags), staged in shared memory at
// slot as what reconstruction needs: the conversion runs once per leaf, not per chunk.
void stage_header(uint slot, uint h)
{
#ifdef SGFP4_INTEGER_RECONSTRUCTION
    s_hdr[slot] = h & 0xFFFFFFF0u;
#else
    s_aff[slot] = uvec2(half_to_float_bits(h >> 16), half_to_float_bits(h & 0xFFF0u));
#endif
}

Affine staged_affine(uint slot)
{
#ifdef SGFP4_INTEGER_RECONSTRUCTION
    uint h = s_hdr[slot];
    return prepare(h >> 16, h & 0xFFFFu);
#else
    uvec2 sb = s_aff[slot];
    Affine a;
    a.s = uintBitsToFloat(sb.x);
    a.b = uintBitsToFloat(sb.y);
    return a;
#endif
}

// The f32 bits of weight S * q + B.
uint reconstruct(Affine a, int q)
{
#ifdef SGFP4_INTEGER_RECONSTRUCTION
    return reconstruct_bits(a, q);
#else
    return reconstruct_float(a, float(q));
#endif
}

// T158 symbol (2 bits) -> code: 01 -> +1, 10 -> -1, 00 and 11 -> 0 (D4).
int t158_code(uint sym)
{
    return int(sym & 1u) - int((sym >> 1) & 1u);
}

// ---- output ---------------------------------------------------------------------------

// binary32 bits -> bfloat16 in bits 16-31: the float split where RoundingModeRTE is declared,
// the integer add otherwise (the same bits for every weight).
uint f32_to_bf16_upper(uint bits)
{
#ifdef SGFP4_INTEGER_RECONSTRUCTION
    return f32_to_bf16_bias(bits);
#else
    return f32_to_bf16_split(bits);
#endif
}

// Two f32 weights as one word of two rounded 16-bit values (DTYPE 1 or 2), low one first.
uint pack16_integer(uint lo, uint hi)
{
    if (DTYPE == 2u)
        return (f32_to_bf16_upper(lo) >> 16) | (f32_to_bf16_upper(hi) & 0xFFFF0000u);
#ifndef SGFP4_INTEGER_RECONSTRUCTION
    if (F16_CONVERSION != 0u)
        return f32_to_f16_add(lo) | (f32_to_f16_add(hi) << 16);
#endif
    return float_bits_to_half(lo) | (float_bits_to_half(hi) << 16);
}

// The four 16-bit outputs of a chunk of weights w (f32 bits) of the leaf with S and B `a`.
uvec2 pack16(uvec4 w, Affine a)
{
#ifdef SGFP4_F16_HARDWARE
    if (DTYPE == 1u && F16_CONVERSION == 2u) {
        // The conversion is exact (RoundingModeRTE 16, signed zeros preserved) where its
        // result is a normal f16 or zero. A leaf whose weights stay below 65504 in magnitude
        // never overflows (Vulkan allows either infinity or the largest finite value there);
        // without DenormPreserve 16, a chunk with a weight in the f16 subnormal range
        // (0 < |w| < 2^-14: 2|w| - 1 below 0x70FFFFFE as an unsigned word; zero wraps to the
        // top) takes the add conversion.
        bool exact = fma(8.0, abs(a.s), abs(a.b)) < 65504.0;
        if (F16_GUARD == 1u) {
            uvec4 t = (w << 1) - 1u;
            exact = exact && min(min(t.x, t.y), min(t.z, t.w)) >= 0x70FFFFFEu;
        }
        if (exact)
            return uvec2(packFloat2x16(f16vec2(uintBitsToFloat(w.xy))),
                         packFloat2x16(f16vec2(uintBitsToFloat(w.zw))));
    }
#endif
    return uvec2(pack16_integer(w.x, w.y), pack16_integer(w.z, w.w));
}

// Stores the four f32 weights of (grow, gcol..gcol+3), cropping at cols.
void store_f32(uint grow, uint gcol, uvec4 w)
{
    uint e0 = pc.dst_base + grow * pc.row_stride + gcol;
    if (gcol + 3u < pc.cols && (e0 & 3u) == 0u) {
        dstv[e0 >> 2] = w;
    } else {
        for (uint j = 0u; j < 4u; j++)
            if (gcol + j < pc.cols)
                dst[e0 + j] = w[j];
    }
}

// Stores the four 16-bit outputs (two per word, low first) of (grow, gcol..gcol+3).
void store_16(uint grow, uint gcol, uvec2 p)
{
    uint e0 = pc.dst_base + grow * pc.row_stride + gcol;
    bool whole = gcol + 3u < pc.cols;
    if (whole && (e0 & 3u) == 0u) {
        dstv2[e0 >> 2] = p;
    } else if (whole && (e0 & 1u) == 0u) {
        dst[e0 >> 1] = p.x;
        dst[(e0 >> 1) + 1u] = p.y;
    } else {
        // A word shared with a neighbour's element: change only our half, atomically.
        for (uint j = 0u; j < 4u; j++) {
            if (gcol + j < pc.cols) {
                uint e = e0 + j;
                uint sh = (e & 1u) * 16u;
                uint v = (p[j >> 1] >> ((j & 1u) * 16u)) & 0xFFFFu;
                atomicAnd(dst[e >> 1], ~(0xFFFFu << sh));
                atomicOr(dst[e >> 1], v << sh);
            }
        }
    }
}

// Stores the eight weights lo, hi (f32 bits) of (grow, gcol..gcol+7) as 16-bit outputs,
// cropping at cols: one 16-byte store where the chunk is whole and aligned.
void store8(uint grow, uint gcol, uvec4 lo, uvec4 hi, Affine a)
{
    uint e0 = pc.dst_base + grow * pc.row_stride + gcol;
    uvec2 p = pack16(lo, a), q = pack16(hi, a);
    if (gcol + 7u < pc.cols && (e0 & 7u) == 0u) {
        dstv[e0 >> 3] = uvec4(p, q);
    } else {
        store_16(grow, gcol, p);
        if (gcol + 4u < pc.cols)
            store_16(grow, gcol + 4u, q);
    }
}

// Stores eight 16-bit outputs (two per word, low first) of (grow, gcol..gcol+7), cropping at
// cols: one 16-byte store where the chunk is whole and aligned.
void store8_packed(uint grow, uint gcol, uvec4 p)
{
    uint e0 = pc.dst_base + grow * pc.row_stride + gcol;
    if (gcol + 7u < pc.cols && (e0 & 7u) == 0u) {
        dstv[e0 >> 3] = p;
    } else {
        store_16(grow, gcol, p.xy);
        if (gcol + 4u < pc.cols)
            store_16(grow, gcol + 4u, p.zw);
    }
}

// ---- v2 leaf geometry --------------------------------------------------------------------

// Cells of a macroblock are numbered in Morton order (the DFS order of TL, TR, BL, BR):
// cell m is at row compact4(m >> 1), column compact4(m).
uint compact4(uint m) // bits 0, 2, 4, 6 of m to bits 0-3
{
    m &= 0x55u;
    m = (m | (m >> 1)) & 0x33u;
    return (m | (m >> 2)) & 0x0Fu;
}

// Where a v2 block's record is, and what every invocation needs to know about it.
struct Record {
    uint rec;  // first word of the record in binding 0
    uint lay;  // layout
    uint hdr0; // first leaf header
    uint n;    // leaves
};

Record locate_record(uint b)
{
    Record r;
    r.rec = pc.src_base + pc.record_base + (src[pc.src_base + 4u + b] >> 2);
    r.lay = src[r.rec] & 7u;
    r.hdr0 = r.rec + (r.lay == LAYOUT_MIXED ? 4u : 1u);
    uint s = r.lay == 5u ? 4u : (64u >> r.lay);
    r.n = (64u / s) * (64u / s); // MIXED: set by the caller
    return r;
}

// MIXED: the cells of leaf i (packed entry e) point to it.
void fill_cells(uint i, uint e)
{
    uint start = (e >> 16) & 0xFFu, level = (e >> 24) & 7u;
    uint cy = compact4(start >> 1), cx = compact4(start);
    uint info = i | (level << 8) | (cy << 11) | (cx << 15) | (((e >> 27) & 1u) << 19) |
                ((e & 0xFFFu) << 20);
    uint side = 1u << level;
    for (uint y = 0u; y < side; y++)
        for (uint x = 0u; x < side; x++)
            s_cell[((cy + y) << 4) + cx + x] = info;
}

// Fills s_leaf, s_aff/s_hdr (and s_cell for MIXED) from the record itself: the split map
// walked by invocation 0, then an exclusive scan of the padded payload sizes.
Record walk_record(uint b, uint lid)
{
    Record r = locate_record(b);
    if (r.lay == LAYOUT_MIXED) {
        if (lid == 0u) {
            // Pre-order DFS without a stack: the node that starts at Morton cell c is the
            // largest one c is aligned to (the root at c = 0); descend while its bit says
            // split. Each iteration of the outer loop emits one leaf.
            uint w0 = src[r.rec + 1u], w1 = src[r.rec + 2u], w2 = src[r.rec + 3u];
            uint bit = 0u, c = 0u, n = 0u;
            while (c < 256u) {
                uint level = c == 0u ? 4u : min(uint(findLSB(c)) >> 1, 3u); // log4(area)
                while (level > 0u) { // nodes of 8x8 and up consume one bit
                    uint w = bit < 32u ? w0 : (bit < 64u ? w1 : w2);
                    bool split = ((w >> (bit & 31u)) & 1u) != 0u;
                    bit++;
                    if (!split)
                        break;
                    level--;
                }
                s_leaf[n++] = (c << 16) | (level << 24);
                c += 1u << (2u * level);
            }
            s_count = n;
        }
        barrier();
        r.n = s_count;
    }
    uint entry = 0u, words = 0u;
    if (lid < r.n) {
        uint uniform_size = r.lay == 5u ? 4u : (64u >> r.lay);
        entry = r.lay == LAYOUT_MIXED ? s_leaf[lid] : uint(findMSB(uniform_size) - 2) << 24;
        uint s = 4u << ((entry >> 24) & 7u);
        uint h = src[r.hdr0 + lid];
        stage_header(lid, h);
        entry |= (h & 1u) << 27;
        words = (((h & 1u) == 1u ? s * s / 4u : s * s / 2u) + 15u) / 16u * 4u;
    }
    s_scan[lid] = words;
    barrier();
    for (uint d = 1u; d < 256u; d <<= 1) {
        uint add = lid >= d ? s_scan[lid - d] : 0u;
        barrier();
        s_scan[lid] += add;
        barrier();
    }
    uint payload0 = ((r.hdr0 - r.rec) * 4u + 4u * r.n + 15u) / 16u * 4u; // words from rec
    if (lid < r.n) {
        entry |= payload0 + s_scan[lid] - words;
        s_leaf[lid] = entry;
        if (r.lay == LAYOUT_MIXED)
            fill_cells(lid, entry);
    }
    barrier();
    return r;
}

// Fills s_leaf, s_aff/s_hdr (and s_cell for MIXED) from the leaf table the CPU built.
Record load_table(uint b, uint lid)
{
    // One round of loads for the block (first leaf, leaf count, record and layout), then
    // one for the leaves: no dependent read of the offset table and sb_header.
    uint first = tbl[pc.table_base + b];
    uint next = tbl[pc.table_base + b + 1u];
    uint where = tbl[pc.table_base + pc.blocks + 1u + b];
    Record r;
    r.rec = pc.src_base + pc.record_base + (where >> 3) * 4u;
    r.lay = where & 7u;
    r.hdr0 = r.rec + (r.lay == LAYOUT_MIXED ? 4u : 1u);
    r.n = next - first;
    if (lid < r.n) {
        uint e = tbl[pc.table_base + 2u * pc.blocks + 1u + first + lid];
        s_leaf[lid] = e;
        stage_header(lid, src[r.hdr0 + lid]);
        if (r.lay == LAYOUT_MIXED)
            fill_cells(lid, e);
    }
    barrier();
    return r;
}

// ---- the kernel ------------------------------------------------------------------------

// v1: decodes macroblock (bx, by) with the given header and mode from its payload words
// (decode_block_v1 loads them). Chunks of W consecutive weights: 8 for 16-bit outputs (an FP4
// chunk is one payload word, a T158 chunk half of one; one 16-byte store), 4 for f32 (16-byte
// stores of a subgroup then cover whole rows, which two 16-byte stores per invocation 32
// bytes apart do not).
// Invocation i takes chunks c = i + 256k. One mode per block: a workgroup-uniform branch.
void decode_block_v1_words(uint bx, uint by, uint lid, uint header, uint word[4], uint mode)
{
    const uint W = DTYPE == 0u ? 4u : 8u;
    const uint CHUNKS = 16u / W;  // per invocation
    const uint PER_ROW = 64u / W; // chunks per row
    Affine a = prepare(header >> 16, header & 0xFFFFu);
    if (W == 8u) {
        // 16-bit outputs through the block's table: entry lid holds the outputs of the codes
        // of byte lid, computed as any chunk's would be.
        uvec4 w = uvec4(0u);
        if (mode == 0u) {
            w.x = reconstruct(a, bitfieldExtract(int(lid), 0, 4));
            w.y = reconstruct(a, bitfieldExtract(int(lid), 4, 4));
        } else {
            for (uint j = 0u; j < 4u; j++)
                w[j] = reconstruct(a, t158_code(lid >> (2u * j)));
        }
        uvec2 p = pack16(w, a);
        if (mode == 0u) {
            s_lut[lid] = p.x;
        } else {
            s_lut[2u * lid] = p.x;
            s_lut[2u * lid + 1u] = p.y;
        }
        barrier();
        for (uint k = 0u; k < CHUNKS; k++) {
            uint c = lid + 256u * k;
            uint row = c / PER_ROW, col = (c % PER_ROW) * W, kk = row * 64u + col;
            uint grow = by * 64u + row, gcol = bx * 64u + col;
            if (grow >= pc.rows || gcol >= pc.cols)
                continue;
            uvec4 out16;
            if (mode == 0u) {
                uint codes = word[k]; // 8 codes: the whole payload word
                out16 = uvec4(s_lut[codes & 0xFFu], s_lut[(codes >> 8) & 0xFFu],
                              s_lut[(codes >> 16) & 0xFFu], s_lut[codes >> 24]);
            } else {
                uint symbols = word[k] >> ((kk & 15u) * 2u); // 8 codes: 16 bits
                uint e0 = 2u * (symbols & 0xFFu), e1 = 2u * ((symbols >> 8) & 0xFFu);
                out16 = uvec4(s_lut[e0], s_lut[e0 + 1u], s_lut[e1], s_lut[e1 + 1u]);
            }
            store8_packed(grow, gcol, out16);
        }
        return;
    }
    for (uint k = 0u; k < CHUNKS; k++) {
        uint c = lid + 256u * k;
        uint row = c / PER_ROW, col = (c % PER_ROW) * W, kk = row * 64u + col;
        uint grow = by * 64u + row, gcol = bx * 64u + col;
        if (grow >= pc.rows || gcol >= pc.cols)
            continue;
        uvec4 lo, hi = uvec4(0u);
        if (mode == 0u) {
            int codes = int(word[k] >> ((kk & 7u) * 4u));
            for (uint j = 0u; j < 4u; j++) {
                lo[j] = reconstruct(a, bitfieldExtract(codes, int(4u * j), 4));
                if (W == 8u)
                    hi[j] = reconstruct(a, bitfieldExtract(codes, int(4u * j + 16u), 4));
            }
        } else {
            uint symbols = word[k] >> ((kk & 15u) * 2u);
            for (uint j = 0u; j < 4u; j++) {
                lo[j] = reconstruct(a, t158_code(symbols >> (2u * j)));
                if (W == 8u)
                    hi[j] = reconstruct(a, t158_code(symbols >> (2u * j + 8u)));
            }
        }
        if (W == 4u)
            store_f32(grow, gcol, lo);
        else
            store8(grow, gcol, lo, hi, a);
    }
}

// A v1 block: invocation lid's chunks c = lid + 256k, their payload words (FP4: word kk / 8,
// T158: kk / 16 of the chunk's first weight kk), then the weights.
void decode_block_v1(uint bx, uint by, uint lid, uint header, uint payload, uint mode)
{
    const uint W = DTYPE == 0u ? 4u : 8u;
    const uint CHUNKS = 16u / W;
    const uint PER_ROW = 64u / W;
    uint word[4];
    for (uint k = 0u; k < CHUNKS; k++) {
        uint c = lid + 256u * k;
        uint row = c / PER_ROW, col = (c % PER_ROW) * W, kk = row * 64u + col;
        bool live = by * 64u + row < pc.rows && bx * 64u + col < pc.cols;
        word[k] = live ? src[payload + (mode == 0u ? kk >> 3 : kk >> 4)] : 0u;
    }
    decode_block_v1_words(bx, by, lid, header, word, mode);
}

// v2: decodes macroblock (bx, by) whose leaves are in s_leaf, s_aff/s_hdr and s_cell.
// Where the cell at (row, col) of the staged block is: its leaf slot (for S and B), mode, and
// the payload word holding its codes with the codes' shift in it; `wide` when the leaf is 8
// columns or more (then the cell and its right neighbour share the leaf and, FP4, the word).
struct CellAt {
    uint slot, mode, word_at, shift;
    bool wide;
};

CellAt cell_at(Record r, uint row, uint col)
{
    CellAt c;
    uint kk, payload; // kk: the first of the cell's 4 consecutive codes in the leaf
    if (r.lay == LAYOUT_MIXED) {
        // One shared-memory read gives the payload load all it needs.
        uint info = s_cell[((row >> 2) << 4) + (col >> 2)];
        c.slot = info & 0xFFu;
        uint level = (info >> 8) & 7u; // log2(size) - 2
        kk = ((row - ((info >> 11) & 15u) * 4u) << (level + 2u)) +
             (col - ((info >> 15) & 15u) * 4u);
        c.mode = (info >> 19) & 1u;
        c.wide = level != 0u;
        payload = r.rec + (info >> 20);
    } else {
        uint l = r.lay == 5u ? 2u : 6u - r.lay; // log2(size): no division
        uint m = (1u << l) - 1u;
        uint li = ((row >> l) << (6u - l)) + (col >> l);
        kk = ((row & m) << l) + (col & m);
        uint e = s_leaf[li];
        c.slot = li;
        c.mode = (e >> 27) & 1u;
        c.wide = l != 2u;
        payload = r.rec + (e & 0xFFFFu);
    }
    c.shift = c.mode == 0u ? (kk & 7u) * 4u : (kk & 15u) * 2u;
    c.word_at = payload + (c.mode == 0u ? kk >> 3 : kk >> 4);
    return c;
}

// The f32 bits of the weights of 4 codes (bits: FP4 nibbles or T158 symbols, first lowest).
uvec4 cell_weights(Affine a, uint mode, uint bits)
{
    uvec4 w;
    if (mode == 0u) {
        for (uint j = 0u; j < 4u; j++)
            w[j] = reconstruct(a, bitfieldExtract(int(bits), int(4u * j), 4));
    } else {
        for (uint j = 0u; j < 4u; j++)
            w[j] = reconstruct(a, t158_code(bits >> (2u * j)));
    }
    return w;
}

// v2, f32 outputs: invocation i takes the cells c = i + 256k (k = 0..3) of row c / 16.
void decode_v2_f32(uint bx, uint by, uint lid, Record r)
{
    // Phase 1: locate the four cells and issue their payload loads (independent of each
    // other, so they are in flight together).
    uint word[4];
    CellAt at[4];
    for (uint k = 0u; k < 4u; k++) {
        uint c = lid + 256u * k;
        uint row = c >> 4, col = (c & 15u) << 2;
        at[k] = cell_at(r, row, col);
        bool live = by * 64u + row < pc.rows && bx * 64u + col < pc.cols;
        word[k] = live ? src[at[k].word_at] : 0u;
    }
    // Phase 2: reconstruct and store. A cell lies in one leaf: one mode. Warps of MIXED
    // records mix both modes and run both branches; blocks of one mode run one.
    for (uint k = 0u; k < 4u; k++) {
        uint c = lid + 256u * k;
        uint row = c >> 4, col = (c & 15u) << 2;
        uint grow = by * 64u + row, gcol = bx * 64u + col;
        if (grow >= pc.rows || gcol >= pc.cols)
            continue;
        store_f32(grow, gcol, cell_weights(staged_affine(at[k].slot), at[k].mode,
                                           word[k] >> at[k].shift));
    }
}

// v2, 16-bit outputs: invocation i takes the chunks of 8 columns q = i + 256k (k = 0, 1), of
// row q / 8: where the cell's leaf is 8 columns or more, one leaf and (FP4) one payload word
// serve all 8 weights, as in v1; else the two cells are read separately. One 16-byte store.
void decode_v2_16(uint bx, uint by, uint lid, Record r)
{
    uint word[2][2];
    CellAt at[2][2];
    for (uint k = 0u; k < 2u; k++) {
        uint q = lid + 256u * k;
        uint row = q >> 3, col = (q & 7u) << 3;
        bool live = by * 64u + row < pc.rows && bx * 64u + col < pc.cols;
        at[k][0] = cell_at(r, row, col);
        word[k][0] = live ? src[at[k][0].word_at] : 0u;
        // The right cell: the same leaf (and for FP4 the same word) when wide.
        at[k][1] = at[k][0].wide ? at[k][0] : cell_at(r, row, col + 4u);
        bool live1 = live && bx * 64u + col + 4u < pc.cols;
        word[k][1] = at[k][0].wide ? word[k][0] : (live1 ? src[at[k][1].word_at] : 0u);
    }
    for (uint k = 0u; k < 2u; k++) {
        uint q = lid + 256u * k;
        uint row = q >> 3, col = (q & 7u) << 3;
        uint grow = by * 64u + row, gcol = bx * 64u + col;
        if (grow >= pc.rows || gcol >= pc.cols)
            continue;
        Affine a0 = staged_affine(at[k][0].slot);
        uvec2 lo = pack16(cell_weights(a0, at[k][0].mode, word[k][0] >> at[k][0].shift), a0);
        uvec2 hi;
        if (at[k][0].wide) {
            // The next 4 codes of the same leaf row: FP4 16 bits on, T158 8 bits on.
            uint bits = word[k][0] >> (at[k][0].shift + (at[k][0].mode == 0u ? 16u : 8u));
            hi = pack16(cell_weights(a0, at[k][0].mode, bits), a0);
        } else {
            Affine a1 = staged_affine(at[k][1].slot);
            hi = pack16(cell_weights(a1, at[k][1].mode, word[k][1] >> at[k][1].shift), a1);
        }
        store8_packed(grow, gcol, uvec4(lo, hi));
    }
}

void decode_block_v2(uint bx, uint by, uint lid, Record r)
{
    if (DTYPE == 0u)
        decode_v2_f32(bx, by, lid, r);
    else
        decode_v2_16(bx, by, lid, r);
}

// ---- v2 from the products' layout ---------------------------------------------------------
// The layout (vk_matvec_layout.c) holds each block's 64 rows of 64 four-bit codes in v1's
// order (row y in words 8y .. 8y + 7 of the block's 512, column x in nibble x % 8), T158
// codes as -1, 0, +1; each leaf's S and Bias as binary32 bits; for MIXED records a byte per
// 4x4 cell naming its leaf. The weight is the same fma of the same S, code and Bias as in
// the record's own decode, so the bits are the same: a code word serves 8 weights (16-bit
// outputs) or 4 (f32), and a cell's S and Bias are two loads.

// S and Bias of leaf `leaf` (index in storage order over the whole tensor).
Affine layout_affine(uint leaf)
{
    uvec2 sb = srcp[(pc.sb_base >> 1) + leaf];
    uint sbits = sb.x, bbits = sb.y;
#ifdef SGFP4_INTEGER_RECONSTRUCTION
    // Both are fp16 values: the conversion back is exact.
    return prepare(float_bits_to_half(sbits), float_bits_to_half(bbits));
#else
    Affine a;
    a.s = uintBitsToFloat(sbits);
    a.b = uintBitsToFloat(bbits);
    return a;
#endif
}

// The map word of block b holding the cells at (row, col) and (row, col + 4) (col a multiple
// of 8: both in one word), where the tensor has MIXED records (their maps lie per block, so
// this load needs no description); 0 where it has none.
uint layout_map_word(uint b, uint row, uint col)
{
    if (pc.desc_base == pc.map_base)
        return 0u; // no maps
    uint cell = ((row >> 2) << 4) + (col >> 2);
    return src[pc.map_base + 64u * b + (cell >> 2)];
}

// The leaves (storage order) of the two 4x4 cells at (row, col) and (row, col + 4) of a block
// whose description is (first, what) and map word `word` (layout_map_word); col is a
// multiple of 8.
uvec2 layout_leaves(uint first, uint what, uint word, uint row, uint col)
{
    uint lay = what & 7u;
    if (lay == LAYOUT_MIXED) {
        uint cell = ((row >> 2) << 4) + (col >> 2);
        uint sh = (cell & 3u) * 8u;
        return first + uvec2((word >> sh) & 0xFFu, (word >> (sh + 8u)) & 0xFFu);
    }
    uint l = lay == 5u ? 2u : 6u - lay; // log2(leaf size); uniform leaves in raster order
    uint li = ((row >> l) << (6u - l)) + (col >> l);
    return first + uvec2(li, li + (l == 2u ? 1u : 0u));
}

// The four weights (f32 bits) of the four signed 4-bit codes in the low 16 bits of `codes`.
uvec4 layout_weights(Affine a, uint codes)
{
    uvec4 w;
    for (uint j = 0u; j < 4u; j++)
        w[j] = reconstruct(a, bitfieldExtract(int(codes), int(4u * j), 4));
    return w;
}

// What an invocation's chunks of one block need from the layout before any leaf: the code
// words and map words (where they lie depends on the block index only) and the block's
// description (first leaf, layout). `live` is false past the last block column.
struct LayoutChunks {
    uint word[4], map[4];
    uint first, what;
    bool live;
};

// 16-bit outputs: chunks of 8 weights, c = lid + 256k (k = 0, 1), row c / 8, columns 8 (c % 8):
// its code word is word c of the block. f32: chunks of 4, c = lid + 256k (k = 0..3), row
// c / 16, columns 4 (c % 16): half of word c / 2.
// The loads of block b (the code words and map words first: where they lie does not depend
// on the description, so their loads are in flight beside it and beside the leaf loads that
// depend on it).
void layout_first_loads(uint b, uint lid, inout LayoutChunks l)
{
    const uint W = DTYPE == 0u ? 4u : 8u;
    const uint CHUNKS = 16u / W;
    const uint PER_ROW = 64u / W;
    for (uint k = 0u; k < CHUNKS; k++) {
        uint c = lid + 256u * k;
        l.word[k] = src[512u * b + (W == 8u ? c : c >> 1)];
        l.map[k] = layout_map_word(b, c / PER_ROW, ((c % PER_ROW) * W) & ~7u);
    }
    l.first = src[pc.desc_base + 2u * b];
    l.what = src[pc.desc_base + 2u * b + 1u];
}

// Block (bx, by)'s first loads, or zeros past the last block column.
LayoutChunks layout_chunks(uint bx, uint by, uint lid)
{
    LayoutChunks l;
    l.live = bx < pc.tiles_x;
    for (uint k = 0u; k < 4u; k++) {
        l.word[k] = 0u;
        l.map[k] = 0u;
    }
    l.first = 0u;
    l.what = 0u;
    if (l.live)
        layout_first_loads(by * pc.tiles_x + bx, lid, l);
    return l;
}

// f16 outputs, two blocks per workgroup (decode_pair_layout): the S and Bias of the two cells
// of each of a uniform or MIXED block's chunks (one-leaf blocks take v1's kernel instead);
// their loads depend on the description and the map.
struct LayoutLeaves {
    Affine a[2][2];
};

LayoutLeaves layout_chunk_leaves(LayoutChunks l, uint lid)
{
    LayoutLeaves f;
    for (uint k = 0u; k < 2u; k++) {
        uint c = lid + 256u * k;
        uvec2 leaf = layout_leaves(l.first, l.what, l.map[k], c / 8u, (c % 8u) * 8u);
        f.a[k][0] = layout_affine(leaf.x);
        f.a[k][1] = layout_affine(leaf.y);
    }
    return f;
}

// f16 outputs: decodes block (bx, by) of a uniform or MIXED record from its loaded chunks and
// leaves.
void layout_chunk_store(uint bx, uint by, uint lid, LayoutChunks l, LayoutLeaves f)
{
    for (uint k = 0u; k < 2u; k++) {
        uint c = lid + 256u * k;
        uint row = c / 8u, col = (c % 8u) * 8u;
        uint grow = by * 64u + row, gcol = bx * 64u + col;
        if (grow >= pc.rows || gcol >= pc.cols)
            continue;
        uvec2 lo = pack16(layout_weights(f.a[k][0], l.word[k]), f.a[k][0]);
        uvec2 hi = pack16(layout_weights(f.a[k][1], l.word[k] >> 16), f.a[k][1]);
        store8_packed(grow, gcol, uvec4(lo, hi));
    }
}

// A one-leaf block: its codes are a v1 FP4 payload (T158 codes as -1, 0, +1 give the same
// weights) in the same words per chunk, so it takes v1's kernel, its 16-bit table included.
// The header carries S and Bias as fp16 bits again (exact: both are fp16 values).
void layout_one_leaf(uint bx, uint by, uint lid, LayoutChunks l)
{
    uint sbits = src[pc.sb_base + 2u * l.first], bbits = src[pc.sb_base + 2u * l.first + 1u];
    uint header = (float_bits_to_half(sbits) << 16) | float_bits_to_half(bbits);
    decode_block_v1_words(bx, by, lid, header, l.word, 0u);
}

// One block per workgroup: f32 outputs, and bf16 outputs of tensors less than 7/8 MIXED.
// These run slower two blocks per workgroup, and bf16 slower with this loop written on the
// pairs' helpers (layout_chunk_leaves and layout_chunk_store): the driver's compilation
// reacts to such changes, so the loop keeps this form (docs/notes/2026-12-vulkan-kernels.md).
void decode_block_layout(uint bx, uint by, uint b, uint lid)
{
    const uint W = DTYPE == 0u ? 4u : 8u;
    const uint CHUNKS = 16u / W;
    const uint PER_ROW = 64u / W;
    LayoutChunks l;
    l.live = true;
    layout_first_loads(b, lid, l);
    if ((l.what & 7u) == 0u) {
        layout_one_leaf(bx, by, lid, l);
        return;
    }
    for (uint k = 0u; k < CHUNKS; k++) {
        uint c = lid + 256u * k;
        uint row = c / PER_ROW, col = (c % PER_ROW) * W;
        uint grow = by * 64u + row, gcol = bx * 64u + col;
        if (grow >= pc.rows || gcol >= pc.cols)
            continue;
        uvec2 leaf = layout_leaves(l.first, l.what, l.map[k], row, col & ~7u);
        if (W == 4u) {
            uint codes = l.word[k] >> ((c & 1u) * 16u);
            store_f32(grow, gcol, layout_weights(layout_affine((c & 1u) == 0u ? leaf.x : leaf.y),
                                                 codes));
        } else {
            Affine a0 = layout_affine(leaf.x);
            uvec2 lo = pack16(layout_weights(a0, l.word[k]), a0);
            uvec2 hi;
            if (leaf.y == leaf.x) {
                hi = pack16(layout_weights(a0, l.word[k] >> 16), a0);
            } else {
                Affine a1 = layout_affine(leaf.y);
                hi = pack16(layout_weights(a1, l.word[k] >> 16), a1);
            }
            store8_packed(grow, gcol, uvec4(lo, hi));
        }
    }
}

// f16 outputs, and bf16 outputs of tensors at least 7/8 MIXED: two blocks per workgroup, (2 gx, by)
// and (2 gx + 1, by). Both blocks' first loads, then both blocks' leaf loads, are issued
// before any weight is computed, so that an invocation has twice the loads in flight per
// wait (docs/notes/2026-12-vulkan-kernels.md). Each block's kind is the same for the whole
// workgroup, so the branches (and the barriers of v1's kernel) are uniform.
void decode_pair_layout(uint gx, uint by, uint lid)
{
    LayoutChunks l0 = layout_chunks(2u * gx, by, lid), l1 = layout_chunks(2u * gx + 1u, by, lid);
    bool many0 = l0.live && (l0.what & 7u) != 0u, many1 = l1.live && (l1.what & 7u) != 0u;
    LayoutLeaves f0, f1;
    if (many0)
        f0 = layout_chunk_leaves(l0, lid);
    if (many1)
        f1 = layout_chunk_leaves(l1, lid);
    if (many0)
        layout_chunk_store(2u * gx, by, lid, l0, f0);
    else if (l0.live)
        layout_one_leaf(2u * gx, by, lid, l0);
    if (many1) {
        layout_chunk_store(2u * gx + 1u, by, lid, l1, f1);
    } else if (l1.live) {
        if (!many0)
            barrier(); // the first block's table reads are done before the second's writes
        layout_one_leaf(2u * gx + 1u, by, lid, l1);
    }
}

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint bx = gl_WorkGroupID.x, by = gl_WorkGroupID.y;
    uint b = by * pc.tiles_x + bx;

    if (PROFILE == 0u) {
        uint header = src[pc.src_base + b];
        uint off = src[pc.src_base + pc.blocks + b];
        decode_block_v1(bx, by, lid, header, pc.src_base + 2u * pc.blocks + ((off & ~15u) >> 2),
                        off & 1u);
    } else if (PROFILE == 3u) {
        decode_block_layout(bx, by, b, lid);
    } else if (PROFILE == 4u) {
        decode_pair_layout(bx, by, lid); // a grid half as wide (vk_decode.c)
    } else {
        decode_block_v2(bx, by, lid, PROFILE == 1u ? load_table(b, lid) : walk_record(b, lid));
    }
}
