// The D8 matrix-vector product y = W x on a resident SGFP4 tensor (DECISIONS D8), shared by
// matvec.comp (integer dot products emulated) and matvec_dot.comp (OpSDot). Both declare
// RoundingModeRTE and SignedZeroInfNanPreserve for 32-bit floats; every float operation is
// `precise` (one binary32 operation rounded to nearest even, never contracted). No subgroup
// operation: every sum is taken in the D8 order.
//
// Work split. A workgroup of 64 * SUBS invocations takes one 64-row band of W (gl_WorkGroupID.y)
// and slice s (gl_WorkGroupID.x) of S. Invocation (row rho = lid % 64, sub = lid / 64) belongs
// to block class g = sub * S + s, one of Le = min(SUBS * S, P) classes (P: the next power of
// two >= the row's n blocks). The D8 block tree over P pairs i with i + h for h = P/2, ..., 1:
// every level with h >= Le pairs blocks of one class, so a class's part of the tree is the D8
// tree of its m = P / Le blocks g, g + Le, g + 2 Le, ... (padding blocks are +0); the
// invocation evaluates it as a binary counter over its blocks taken in bit-reversed order
// (the leaves of a D8 tree in that order merge as "earlier + later" at every level). The
// remaining levels h = Le/2 .. S pair the subs of one workgroup (shared memory), and the last
// log2 S levels the S workgroups of a band: each writes its partial sums to the scratch buffer
// and the last to finish (an atomic counter per band) adds them in the same tree and writes y.
// Per block (step j), the invocation computes its row's block partial t_b: 16 cells of 4
// columns, each cell value as D8 says, summed by the D8 tree of 16 (again a binary counter
// over the cells in bit-reversed order), times d_b in Class A.
//
// The container was validated on the CPU (sgfp4_tensor_open); this shader trusts it.
// SPDX-License-Identifier: MIT

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 7) in; // GROUP = ROWS * SUBS

layout(constant_id = 0) const uint PROFILE = 0; // 0 = v1, 1 = v2 (the products' layout)
layout(constant_id = 1) const uint CLASS = 0;   // 0 = A (q8 activations), 1 = B (float)
layout(constant_id = 2) const uint BATCH = 1;   // activation vectors, 1..16
layout(constant_id = 3) const uint X_F16 = 0;   // Class B: 1 = x is f16, 0 = f32
layout(constant_id = 4) const uint LEVELS = 1;  // log2(m) + 1: the block-counter's depth
layout(constant_id = 5) const uint ROWS = 64;   // rows per workgroup (v2: 64; v1: 16, 32, 64)
layout(constant_id = 6) const uint VEC = 1;     // payload words 16-byte aligned (v2: always)
layout(constant_id = 7) const uint GROUP = 256; // invocations: ROWS * SUBS
layout(constant_id = 8) const uint S_LEVELS = 1; // log2(S) + 1: the final counter's depth
layout(constant_id = 9) const uint PREFETCH = 1; // payload loads a step ahead
layout(constant_id = 10) const uint ACT_ALL = 0; // 1: every step's activations staged at once
layout(constant_id = 11) const uint LEAVES_AHEAD = 0; // v2 with PREFETCH: S and Bias a step ahead
layout(constant_id = 12) const uint FAST = 0;    // 1: the D9 fast products (cells summed otherwise)
const uint SUBS = GROUP / ROWS;                  // blocks in flight per workgroup
// v2 with LEAVES_AHEAD: the next step's S and Bias pairs are loaded a step ahead, with its
// code words, so its cell map two steps ahead and its description three.
const bool AHEAD = PROFILE == 1u && PREFETCH == 1u && LEAVES_AHEAD == 1u;
const uint STEPS = 1u << (LEVELS - 1u);          // m: the steps of a class (pc.steps)
const uint ACT_BUFS = ACT_ALL == 1u ? STEPS : 2u; // activation buffers in shared memory

// v1: the container; v2: the products' layout (src/vulkan/vk_matvec_layout.c), its leaves'
// S and Bias also as pairs (binding 2).
layout(std430, set = 0, binding = 0) readonly buffer Container { uint src[]; };
layout(std430, set = 0, binding = 1) readonly buffer ContainerVec { uvec4 srcv[]; };
layout(std430, set = 0, binding = 2) readonly buffer LeafPairs { uvec2 sbv[]; };
layout(std430, set = 0, binding = 3) readonly buffer Activations { uint xw[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Output { uint yw[]; };
layout(std430, set = 0, binding = 5) coherent buffer Scratch { uint scr[]; };

layout(push_constant) uniform Params {
    uint tiles_x;     // n: blocks per row
    uint rows, cols;  // O, I
    uint blocks;      // tiles_y * tiles_x
    uint src_base;    // first word of the container / layout in bindings 0 (and 1, / 4)
    uint map_base;    // v2: first word of the cell maps in binding 0 (a multiple of 4)
    uint desc_base;   // v2: first word of the blocks' descriptions in binding 0
    uint sb_base;     // v2: first pair of the leaves' S and Bias in binding 2
    uint x_base;      // Class A: first word of q8; Class B: first element of x
    uint x_stride;    // Class A: words per vector; Class B: elements per vector
    uint y_base;      // first float of y
    uint y_stride;    // floats per output vector
    uint slices;      // S (a power of two)
    uint classes;     // Le
    uint steps;       // m = P / Le
    uint scratch_parts; // first word of the partial sums in binding 5 (counters at 0)
} pc;

const uint LAYOUT_MIXED = 4u;
const uint MAGIC = 0x4B400000u; // 1.5 * 2^23: MAGIC + i as bits is 12582912 + i, |i| < 2^22
const float MAGIC_F = 12582912.0;

// ---- shared memory -----------------------------------------------------------------------
// Activations of the step's blocks (two buffers, steps alternating; or with ACT_ALL one per
// step, all staged before the loop), per sub and vector, per cell: Class A (q of the cell's
// 4 columns permuted to the byte order of the code words below, MAGIC - 8 * is, float(is)
// bits, 0); Class B (its 4 activations, converted and floored). After the loop: the sums
// of the subs' tree (BATCH floats per row).
shared uvec4 s_act[ACT_BUFS * SUBS * BATCH * 16u];
shared uint s_d[ACT_BUFS * SUBS * BATCH]; // Class A: d_b bits per buffer, sub, vector
shared uint s_t158[CLASS == 0u && PROFILE == 0u ? 256u : 1u]; // v1 Class A: T158 byte -> 4 codes
shared uint s_last;

// ---- exact conversions and integer dot products --------------------------------------------

// IEEE binary16 -> binary32 bits, subnormals included (integer only).
uint half_to_float_bits(uint h)
{
    uint sign = (h & 0x8000u) << 16;
    uint e = (h >> 10) & 31u;
    uint m = h & 0x3FFu;
    if (e == 0u) {
        if (m == 0u)
            return sign;
        uint shift = 10u - uint(findMSB(m));
        return sign | ((113u - shift) << 23) | (((m << shift) & 0x3FFu) << 13);
    }
    if (e == 31u)
        return sign | 0x7F800000u | (m << 13); // infinity or NaN (activations only)
    return sign | ((e + 112u) << 23) | (m << 13);
}

#ifndef SGFP4_DOT_PRODUCT
// The signed dot product of two words of 4 bytes each (exact; as OpSDot 4x8 packed).
int sdot4x8(uint a, uint b)
{
    int s = 0;
    [[unroll]] for (int i = 0; i < 32; i += 8)
        s += bitfieldExtract(int(a), i, 8) * bitfieldExtract(int(b), i, 8);
    return s;
}
#endif

// ---- the cells ---------------------------------------------------------------------------

// FP4, Class A: the codes of the two cells of a pair word (cell 2p in bits 0-15, cell 2p+1
// in bits 16-31, first code lowest) as unsigned bytes code + 8, each cell's four in the order
// code0, code2, code1, code3 (the activations are permuted alike).
uvec2 fp4_pair_bytes(uint w)
{
    uint lo = (w & 0x0F0F0F0Fu) ^ 0x08080808u;        // codes 0, 2, 4, 6 (+ 8)
    uint hi = ((w >> 4) & 0x0F0F0F0Fu) ^ 0x08080808u; // codes 1, 3, 5, 7 (+ 8)
    return uvec2((lo & 0xFFFFu) | (hi << 16), (lo >> 16) | (hi & 0xFFFF0000u));
}

// One cell's value in Class A: iq = sum code_j q_j and is = sum q_j exactly, then
// fl(fl(S iq) + fl(B is)). act: (permuted q, MAGIC - 8 is, float(is)). FP4 codes come as
// code + 8 (so iq = dot - 8 is), T158 codes as signed bytes. Both products are exact (S and
// B have 11 significant bits, |iq| < 2^12 and |is| < 2^9), so the sum's one rounding is
// also fma(S, iq, B is): the same bits in one operation fewer.
float cell_a(float s, float b, uint codes, bool fp4, uvec4 act)
{
    uint bits = uint(sdot4x8(codes, act.x)) + (fp4 ? act.y : MAGIC);
    precise float iq = uintBitsToFloat(bits) - MAGIC_F; // exact: iq is an integer < 2^22
    precise float bis = b * uintBitsToFloat(act.z);     // exact
    precise float c = fma(s, iq, bis);
    return c;
}

// One cell's value in Class B: p_j = fl(w_j x_j) (+0 in padding columns, those at or past
// `valid` within the block), fl(fl(p0 + p1) + fl(p2 + p3)).
float cell_b(vec4 w, vec4 x, uint col0, uint valid)
{
    precise vec4 p = w * x;
    if (col0 + 4u > valid) {
        for (uint i = 0u; i < 4u; i++)
            if (col0 + i >= valid)
                p[i] = 0.0;
    }
    precise float left = p.x + p.y;
    precise float right = p.z + p.w;
    precise float c = left + right;
    return c;
}

// FP4, Class B: the D1 weights w = fl(S code + B) of the four codes of cell h (0: bits 0-15,
// 1: bits 16-31) of pair word w. With x = w ^ 0x88888888 each nibble is code + 8; the nibble of
// x >> 4j at bits 0-3 (cell 0) or 16-19 (cell 1) is put in the mantissa of 2^23 (bits
// 0x4B000000), so that f - (2^23 + 8 * 2^p) is code * 2^p exactly (p = 0 or 16), and
// fma(S * 2^-p, code * 2^p, B) rounds S code + B once (the product is exact), as D1 does.
// Cell 1's scale S * 2^-16 is exact too (S >= 2^-24 or 0).
vec4 fp4_weights(uint w, uint h, float s, float b)
{
    uint x = w ^ 0x88888888u;
    uint mask = h == 0u ? 0xFu : 0xF0000u;
    float bias = h == 0u ? 8388616.0 : 8912896.0; // 2^23 + 8 * 2^p
    precise float sp = h == 0u ? s : s * 0.0000152587890625; // 2^-16
    vec4 r;
    [[unroll]] for (uint j = 0u; j < 4u; j++) {
        precise float code = uintBitsToFloat(((x >> (4u * j)) & mask) | 0x4B000000u) - bias;
        precise float wj = fma(sp, code, b);
        r[j] = wj;
    }
    return r;
}

// The D1 weights of 4 T158 codes (8 bits: symbols 01 -> +1, 10 -> -1, 00 and 11 -> 0).
vec4 t158_weights(uint c8, float s, float b)
{
    precise float w0 = fma(s, 0.0, b), wp = fma(s, 1.0, b), wm = fma(s, -1.0, b);
    vec4 w;
    [[unroll]] for (uint j = 0u; j < 4u; j++) {
        uint sym = (c8 >> (2u * j)) & 3u;
        w[j] = sym == 1u ? wp : (sym == 2u ? wm : w0);
    }
    return w;
}

// ---- the 16-cell tree as a binary counter ---------------------------------------------------

// Cell k = bitrev4(j) is the j-th leaf; at most 5 partial sums live per vector.
uint bitrev4(uint j)
{
    return ((j & 1u) << 3) | ((j & 2u) << 1) | ((j & 4u) >> 1) | ((j & 8u) >> 3);
}

// ---- a row's cells: where their codes and leaves are ---------------------------------------

// A row of a block as the cell sums read it: per pair of cells (2p, 2p + 1) a word with the
// codes of cell 2p in bits 0-15 and of cell 2p + 1 in bits 16-31 (FP4: four nibbles; T158: four
// 2-bit symbols in the low 8 bits of the half); per cell its leaf's S and B; the T158 cells.
struct Row {
    uint words[8];
    float s[16], b[16];
    uint t158; // bit k: cell k is T158
};

// ---- Class A / Class B activations of the step's blocks -------------------------------------

// Block b's activations in two halves, so that their loads are in flight while a step
// computes: load_activations issues the global loads of this invocation's share (element
// idx = rho + ROWS t of the 16 BATCH cells) into registers, store_activations converts them
// into buffer `buf` of s_act / s_d after the next barrier. Class A: (q word, d_b bits) per
// element; Class B: the 4 raw activation words (f16: the word holding each half), 0 in
// padding columns.
const uint ACT_PER = (16u * BATCH + ROWS - 1u) / ROWS; // elements per invocation
const uint ACT_CHUNK_MAX = ACT_PER >= 8u ? 1u : 8u / ACT_PER;
const uint ACT_CHUNK = STEPS < ACT_CHUNK_MAX ? STEPS : ACT_CHUNK_MAX; // ACT_ALL: steps loaded at once

void load_activations(uint rho, uint b, bool live, out uvec4 raw[ACT_PER])
{
    [[unroll]] for (uint t = 0u; t < ACT_PER; t++) {
        uint idx = rho + ROWS * t;
        uvec4 r = uvec4(0u);
        if (live && idx < 16u * BATCH) {
            uint n = idx >> 4, k = idx & 15u;
            if (CLASS == 0u) {
                r.x = xw[pc.x_base + n * pc.x_stride + b * 16u + k];
                if (k == 0u)
                    r.y = xw[pc.x_base + n * pc.x_stride + pc.tiles_x * 16u + b];
            } else {
                [[unroll]] for (uint i = 0u; i < 4u; i++) {
                    uint col = b * 64u + 4u * k + i;
                    if (col < pc.cols) {
                        uint e = pc.x_base + n * pc.x_stride + col;
                        r[i] = X_F16 == 1u ? xw[e >> 1] : xw[e];
                    }
                }
            }
        }
        raw[t] = r;
    }
}

// Stores what load_activations loaded for block b into buffer `buf`, sub `sub`.
void store_activations(uint buf, uint sub, uint rho, uint b, uvec4 raw[ACT_PER])
{
    [[unroll]] for (uint t = 0u; t < ACT_PER; t++) {
        uint idx = rho + ROWS * t;
        if (idx >= 16u * BATCH)
            break;
        uint n = idx >> 4, k = idx & 15u;
        uvec4 a;
        if (CLASS == 0u) {
            uint qw = raw[t].x;
            int q0 = bitfieldExtract(int(qw), 0, 8), q1 = bitfieldExtract(int(qw), 8, 8);
            int q2 = bitfieldExtract(int(qw), 16, 8), q3 = bitfieldExtract(int(qw), 24, 8);
            int is = q0 + q1 + q2 + q3;
            uint perm = (qw & 0xFFu) | (((qw >> 16) & 0xFFu) << 8) | (((qw >> 8) & 0xFFu) << 16) |
                        (qw & 0xFF000000u);
            a = uvec4(perm, MAGIC - uint(8 * is), floatBitsToUint(float(is)), 0u);
            if (k == 0u)
                s_d[(buf * SUBS + sub) * BATCH + n] = raw[t].y;
        } else {
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                uint bits = raw[t][i];
                if (X_F16 == 1u) {
                    uint e = pc.x_base + n * pc.x_stride + b * 64u + 4u * k + i;
                    bits = half_to_float_bits((bits >> ((e & 1u) * 16u)) & 0xFFFFu);
                }
                if ((bits & 0x7FFFFFFFu) < ((127u - 60u) << 23))
                    bits = 0u; // |x| < 2^-60 reads as +0
                a[i] = bits;
            }
        }
        s_act[((buf * SUBS + sub) * BATCH + n) * 16u + k] = a;
    }
}

// ---- the D9 fast products (FAST = 1) -------------------------------------------------------
// Not D8: the block partial's summation changes (docs/matvec.md, "Fast products"); the
// activations, their quantizer, the weights and the block tree over a row are D8's.

// Class B: one cell in column order, the first product rounded, then one fused multiply-add
// per column: fma(w3, x3, fma(w2, x2, fma(w1, x1, fl(w0 x0)))). Padding columns read x = 0.
float cell_b_fast(vec4 w, vec4 x)
{
    precise float c = w.x * x.x;
    c = fma(w.y, x.y, c);
    c = fma(w.z, x.z, c);
    c = fma(w.w, x.w, c);
    return c;
}

// Class A: the row of block b as segments, each a maximal run of consecutive cells with the
// same S and Bias bits (v1: the whole row; v2: at least the cells of one leaf), in column
// order. Per segment the exact integers iq = sum code_j q_j and is = sum q_j, then
// v = fma(S, float(iq), B * is) (B * is exact: 11 by 13 significant bits; one rounding of
// the segment's exact value); the block partial is the sequential binary32 sum of its
// segments' v from +0, times d_b (exact).
void block_partials_fast_a(uint abuf, Row row, uint kind, out float t[BATCH])
{
    // Per vector, over the open segment: the sum of the cells' sdot (FP4: of code + 8) and
    // of their MAGIC - 8 is (both modulo 2^32: the true sums are small); per row the number
    // of its cells. At its end: 8 is = cells * MAGIC - that sum, iq = sdot sum - 8 is (FP4).
    uint dots[BATCH], magics[BATCH];
    float acc[BATCH];
    [[unroll]] for (uint n = 0u; n < BATCH; n++) {
        dots[n] = 0u;
        magics[n] = 0u;
        acc[n] = 0.0;
    }
    const bool fp4 = kind != 2u; // a Class A block row has one kind (v2: always FP4)
    uint cells = 0u;
    [[unroll]] for (uint k = 0u; k < 16u; k++) {
        uint w = row.words[k >> 1], h = k & 1u;
        uint c8 = (w >> (16u * h)) & 0xFFu; // T158 symbols
        uvec2 pair = fp4_pair_bytes(w);
        uint codes = fp4 ? (h == 0u ? pair.x : pair.y) : s_t158[c8];
        uint k1 = min(k + 1u, 15u);
        bool last = k == 15u ||
                    (PROFILE == 1u && (floatBitsToUint(row.s[k]) != floatBitsToUint(row.s[k1]) ||
                                       floatBitsToUint(row.b[k]) != floatBitsToUint(row.b[k1])));
        cells++;
        [[unroll]] for (uint n = 0u; n < BATCH; n++) {
            uvec4 a = s_act[(abuf * BATCH + n) * 16u + k];
            dots[n] += uint(sdot4x8(codes, a.x));
            magics[n] += a.y;
            if (last) {
                int is8 = int(cells * MAGIC - magics[n]); // 8 is: exact, |is| < 2^13
                int iq = int(dots[n]) - (fp4 ? is8 : 0);
                precise float bis = row.b[k] * float(is8 >> 3); // exact
                precise float v = fma(row.s[k], float(iq), bis);
                precise float sum = acc[n] + v;
                acc[n] = sum;
                dots[n] = 0u;
                magics[n] = 0u;
            }
        }
        if (last)
            cells = 0u;
    }
    [[unroll]] for (uint n = 0u; n < BATCH; n++) {
        precise float r = acc[n] * uintBitsToFloat(s_d[abuf * BATCH + n]); // exact: 0 or 2^e
        t[n] = r;
    }
}

// ---- the block partials --------------------------------------------------------------------

// The partials t[n] of a row of block b (class A: times d_b), its activations in slot abuf
// (buffer * SUBS + sub) of s_act / s_d. Cells are taken in bit-reversed order and summed as
// a binary counter (the D8 tree of 16). kind: 0 = each cell's mode as row.t158 says, 1 = every
// cell FP4, 2 = every cell T158 (v1 blocks have one mode: in Class A the caller passes it as a
// constant, so that the inlined body has no per-cell mode test).
void block_partials(uint abuf, uint b, Row row, uint kind, out float t[BATCH])
{
    if (FAST == 1u && CLASS == 0u) {
        block_partials_fast_a(abuf, row, kind, t);
        return;
    }
    uint valid = min(pc.cols - b * 64u, 64u);
    float stk[BATCH][5];
    [[unroll]] for (uint j = 0u; j < 16u; j++) {
        uint k = bitrev4(j);
        uint w = row.words[k >> 1], h = k & 1u;
        bool fp4 = kind == 1u ? true : (kind == 2u ? false : ((row.t158 >> k) & 1u) == 0u);
        uint c8 = (w >> (16u * h)) & 0xFFu; // T158 symbols
        vec4 wt = vec4(0.0);
        uint codes = 0u;
        if (CLASS == 1u) {
            if (fp4)
                wt = fp4_weights(w, h, row.s[k], row.b[k]);
            else
                wt = t158_weights(c8, row.s[k], row.b[k]);
        } else {
            uvec2 pair = fp4_pair_bytes(w);
            codes = fp4 ? (h == 0u ? pair.x : pair.y) : s_t158[c8];
        }
        [[unroll]] for (uint n = 0u; n < BATCH; n++) {
            uvec4 a = s_act[(abuf * BATCH + n) * 16u + k];
            precise float v = CLASS == 0u   ? cell_a(row.s[k], row.b[k], codes, fp4, a)
                              : FAST == 1u ? cell_b_fast(wt, uintBitsToFloat(a))
                                           : cell_b(wt, uintBitsToFloat(a), 4u * k, valid);
            [[unroll]] for (uint lev = 0u; lev < 5u; lev++) {
                if (((j >> lev) & 1u) == 0u) {
                    stk[n][lev] = v;
                    break;
                }
                v = stk[n][lev] + v;
            }
        }
    }
    [[unroll]] for (uint n = 0u; n < BATCH; n++) {
        precise float r = stk[n][4];
        if (CLASS == 0u)
            r = r * uintBitsToFloat(s_d[abuf * BATCH + n]); // exact: d_b is 0 or 2^e
        t[n] = r;
    }
}

// What a row of a block needs: the block's description, then the row's code words (v1: 8
// for FP4, 4 for T158; v2: 8) and, for a v2 MIXED record, the cell map's row of its cells.
// The loads of the next steps are issued a step or two ahead (PREFETCH), so that they are in
// flight while a step computes.
// v1: header = the block's S and Bias (fp16 pair), off = its offset word (payload offset,
// mode). v2: header = the index of its first leaf, off = map ordinal << 3 | layout.
struct BlockRow {
    uint header, off;
    uint words[8];
    uvec4 map; // v2 MIXED: byte k = leaf of cell k (in the block's storage order)
};

// The description of block `blk` (a global block index), or zeros when !live.
uvec2 block_head(uint blk, bool live)
{
    if (!live)
        return uvec2(0u);
    if (PROFILE == 1u)
        return uvec2(src[pc.desc_base + 2u * blk], src[pc.desc_base + 2u * blk + 1u]);
    return uvec2(src[pc.src_base + blk], src[pc.src_base + pc.blocks + blk]);
}

// v2: the cell map's row of row y of block `head` (a MIXED record; zeros otherwise or when
// !live), loaded on its own where the S and Bias are loaded a step ahead of the codes.
uvec4 row_map(uvec2 head, uint y, bool live)
{
    if (!live || (head.y & 7u) != LAYOUT_MIXED)
        return uvec4(0u);
    return srcv[(pc.map_base >> 2) + 16u * (head.y >> 3) + (y >> 2)];
}

// The code words of row y of block blk, whose description v.header / v.off is loaded.
void row_words(uint blk, uint y, bool live, inout BlockRow v)
{
    [[unroll]] for (uint i = 0u; i < 8u; i++)
        v.words[i] = 0u;
    if (!AHEAD) // AHEAD: the map was loaded a step before (row_map)
        v.map = uvec4(0u);
    if (!live)
        return;
    if (PROFILE == 1u) {
        uint at = (pc.src_base >> 2) + 128u * blk + 2u * y; // uvec4 units
        uvec4 lo = srcv[at], hi = srcv[at + 1u];
        v.words = uint[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
        if (!AHEAD)
            v.map = row_map(uvec2(v.header, v.off), y, true);
        return;
    }
    uint off = v.off;
    uint payload = pc.src_base + 2u * pc.blocks + ((off & ~15u) >> 2); // words
    if ((off & 1u) == 0u) {
        uint at = payload + y * 8u;
        if (VEC == 1u) {
            uvec4 lo = srcv[at >> 2], hi = srcv[(at >> 2) + 1u];
            v.words = uint[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
        } else {
            [[unroll]] for (uint i = 0u; i < 8u; i++)
                v.words[i] = src[at + i];
        }
    } else {
        uint at = payload + y * 4u;
        if (VEC == 1u) {
            uvec4 w = srcv[at >> 2];
            v.words[0] = w.x; v.words[1] = w.y; v.words[2] = w.z; v.words[3] = w.w;
        } else {
            [[unroll]] for (uint i = 0u; i < 4u; i++)
                v.words[i] = src[at + i];
        }
    }
}

// v2: the S and Bias pairs (binary32 bits) of the leaves of row y's 16 cells in block `head`
// (its description: first leaf, map ordinal << 3 | layout), `map` its cell map's row; zeros
// when !live. Uniform records hold their leaves in raster order; MIXED ones say by the map.
void row_leaves(uvec2 head, uvec4 map, uint y, bool live, out uvec2 sb[16])
{
    uint lay = head.y & 7u;
    uint l = lay == 5u ? 2u : 6u - lay; // log2 of the leaf size (uniform layouts)
    [[unroll]] for (uint k = 0u; k < 16u; k++) {
        uint li = lay == LAYOUT_MIXED ? (map[k >> 2] >> (8u * (k & 3u))) & 0xFFu
                                      : ((y >> l) << (6u - l)) + ((4u * k) >> l);
        sb[k] = live ? sbv[pc.sb_base + head.x + li] : uvec2(0u);
    }
}

// v2: a row from its code words and its cells' S and Bias pairs (every code four-bit).
void row_v2_from(uint words[8], uvec2 sb[16], out Row row)
{
    [[unroll]] for (uint k = 0u; k < 16u; k++) {
        row.s[k] = uintBitsToFloat(sb[k].x);
        row.b[k] = uintBitsToFloat(sb[k].y);
    }
    row.words = words;
    row.t158 = 0u;
}

// v2: row y from its loaded words and map, its S and Bias loaded now.
void row_v2(BlockRow v, uint y, out Row row)
{
    uvec2 sb[16];
    row_leaves(uvec2(v.header, v.off), v.map, y, true, sb);
    row_v2_from(v.words, sb, row);
}

// v1: the row from its loaded words (one leaf: every cell has the block's S and B).
void row_v1(BlockRow v, out Row row)
{
    float s = uintBitsToFloat(half_to_float_bits(v.header >> 16));
    float bias = uintBitsToFloat(half_to_float_bits(v.header & 0xFFFFu));
    [[unroll]] for (uint k = 0u; k < 16u; k++) {
        row.s[k] = s;
        row.b[k] = bias;
    }
    if ((v.off & 1u) == 0u) {
        row.words = v.words;
        row.t158 = 0u;
    } else { /* T158: cell k's 8 bits are byte k % 4 of word k / 4 */
        [[unroll]] for (uint p = 0u; p < 8u; p++) {
            uint w = v.words[p >> 1];
            row.words[p] = ((w >> (16u * (p & 1u))) & 0xFFu) |
                           (((w >> (16u * (p & 1u) + 8u)) & 0xFFu) << 16);
        }
        row.t158 = 0xFFFFu;
    }
}

// ---- the kernel ------------------------------------------------------------------------

// Block k of the step-j order (bit-reversed j) of class g.
uint step_block(uint g, uint j)
{
    uint k = LEVELS == 1u ? 0u : bitfieldReverse(j) >> (33u - LEVELS);
    return g + pc.classes * k;
}

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint rho = lid % ROWS, sub = lid / ROWS;
    uint s = gl_WorkGroupID.x, grp = gl_WorkGroupID.y; // row group: rows grp * ROWS + rho
    uint by = grp / (64u / ROWS);                       // the block row
    uint y = (grp % (64u / ROWS)) * ROWS + rho;         // the row within the blocks
    uint slices = pc.slices;
    uint g = sub * slices + s;
    bool in_class = g < pc.classes;
    uint nsub = pc.classes / slices; // subs that hold a class (1, 2, ... SUBS)

    if (CLASS == 0u && PROFILE == 0u) {
        // T158 symbol byte -> 4 signed codes, permuted like the activations (0, 2, 1, 3).
        for (uint i = lid; i < 256u; i += GROUP) {
            int c0 = int(i & 1u) - int((i >> 1) & 1u), c1 = int((i >> 2) & 1u) - int((i >> 3) & 1u);
            int c2 = int((i >> 4) & 1u) - int((i >> 5) & 1u), c3 = int((i >> 6) & 1u) - int((i >> 7) & 1u);
            s_t158[i] = (uint(c0) & 0xFFu) | ((uint(c2) & 0xFFu) << 8) | ((uint(c1) & 0xFFu) << 16) |
                        ((uint(c3) & 0xFFu) << 24);
        }
    }

    // Loads in flight: the current step's data and, with PREFETCH, the next step's code words
    // (and map row) and the step after's description; with AHEAD also the next step's S and
    // Bias, the map row of the step after and the description of the third step.
    BlockRow cur, next;
    uvec2 head_after = uvec2(0u), head_third = uvec2(0u);
    uvec2 sb_cur[16], sb_next[16];
    uvec4 map_after = uvec4(0u);
    uvec4 araw[ACT_PER];
    {
        uint b0 = step_block(g, 0u), b1 = step_block(g, 1u);
        bool live0 = in_class && b0 < pc.tiles_x, live1 = in_class && b1 < pc.tiles_x;
        if (PREFETCH == 1u) {
            uvec2 h0 = block_head(by * pc.tiles_x + b0, live0);
            cur.header = h0.x;
            cur.off = h0.y;
            row_words(by * pc.tiles_x + b0, y, live0, cur);
            uvec2 h1 = block_head(by * pc.tiles_x + b1, live1 && pc.steps > 1u);
            next.header = h1.x;
            next.off = h1.y;
            if (AHEAD) {
                row_leaves(h0, row_map(h0, y, live0), y, live0, sb_cur);
                next.map = row_map(h1, y, live1 && pc.steps > 1u);
                uint b2 = step_block(g, 2u);
                head_after = block_head(by * pc.tiles_x + b2,
                                        in_class && b2 < pc.tiles_x && pc.steps > 2u);
            }
        }
        if (ACT_ALL == 1u) {
            // Every step's activations into buffer j, the loads of ACT_CHUNK steps at a time
            // in flight; the loop then needs no barrier.
            for (uint j0 = 0u; j0 < STEPS; j0 += ACT_CHUNK) {
                uvec4 raw[ACT_CHUNK][ACT_PER];
                [[unroll]] for (uint c = 0u; c < ACT_CHUNK; c++) {
                    uint bc = step_block(g, j0 + c);
                    load_activations(rho, bc, in_class && bc < pc.tiles_x, raw[c]);
                }
                [[unroll]] for (uint c = 0u; c < ACT_CHUNK; c++) {
                    uint bc = step_block(g, j0 + c);
                    if (in_class && bc < pc.tiles_x)
                        store_activations(j0 + c, sub, rho, bc, raw[c]);
                }
            }
            barrier();
        } else {
            // Activations: step 0's stored now, step 1's loads kept in flight.
            load_activations(rho, b0, live0, araw);
            if (live0)
                store_activations(0u, sub, rho, b0, araw);
            load_activations(rho, b1, live1 && pc.steps > 1u, araw);
        }
    }

    float stk[BATCH][LEVELS];
    for (uint j = 0u; j < pc.steps; j++) {
        uint b = step_block(g, j);
        bool live = in_class && b < pc.tiles_x;
        uint b1 = step_block(g, j + 1u), b2 = step_block(g, j + 2u);
        bool live1 = in_class && b1 < pc.tiles_x && j + 1u < pc.steps;
        bool live2 = in_class && b2 < pc.tiles_x && j + 2u < pc.steps;
        if (PREFETCH == 1u) {
            row_words(by * pc.tiles_x + b1, y, live1, next);
            if (AHEAD) {
                uint b3 = step_block(g, j + 3u);
                row_leaves(uvec2(next.header, next.off), next.map, y, live1, sb_next);
                map_after = row_map(head_after, y, live2);
                head_third = block_head(by * pc.tiles_x + b3,
                                        in_class && b3 < pc.tiles_x && j + 3u < pc.steps);
            } else {
                head_after = block_head(by * pc.tiles_x + b2, live2);
            }
        }
        // Without ACT_ALL, one barrier a step. Step j's activations (buffer j % 2) were
        // stored before it, step j - 1's reads of buffer (j + 1) % 2 are done after it: store
        // step j + 1's there and issue step j + 2's loads.
        uint abuf = j * SUBS + sub;
        if (ACT_ALL == 0u) {
            barrier();
            abuf = (j & 1u) * SUBS + sub;
            if (live1)
                store_activations((j + 1u) & 1u, sub, rho, b1, araw);
            load_activations(rho, b2, live2, araw);
        }
        float t[BATCH];
        if (live) {
            if (PREFETCH == 0u) {
                uvec2 h = block_head(by * pc.tiles_x + b, true);
                cur.header = h.x;
                cur.off = h.y;
                row_words(by * pc.tiles_x + b, y, true, cur);
            }
            Row row;
            if (PROFILE == 0u)
                row_v1(cur, row);
            else if (AHEAD)
                row_v2_from(cur.words, sb_cur, row);
            else
                row_v2(cur, y, row);
            if (PROFILE == 1u)
                block_partials(abuf, b, row, 1u, t); /* every v2 code is a four-bit code */
            else if (CLASS == 1u) // Class B: measured slower specialized (batch 4)
                block_partials(abuf, b, row, 0u, t);
            else if (row.t158 == 0u)
                block_partials(abuf, b, row, 1u, t); /* a v1 FP4 block */
            else
                block_partials(abuf, b, row, 2u, t); /* a v1 T158 block */
        } else {
            [[unroll]] for (uint n = 0u; n < BATCH; n++)
                t[n] = 0.0; // the tree's +0 padding
        }
        if (PREFETCH == 1u) {
            cur = next;
            next.header = head_after.x;
            next.off = head_after.y;
            if (AHEAD) {
                sb_cur = sb_next;
                next.map = map_after;
                head_after = head_third;
            }
        }
        [[unroll]] for (uint n = 0u; n < BATCH; n++) {
            precise float v = t[n];
            [[unroll]] for (uint lev = 0u; lev < LEVELS; lev++) {
                if (((j >> lev) & 1u) == 0u) {
                    stk[n][lev] = v;
                    break;
                }
                v = stk[n][lev] + v;
            }
        }
    }
    float r[BATCH];
    [[unroll]] for (uint n = 0u; n < BATCH; n++)
        r[n] = stk[n][LEVELS - 1u];

    // The subs' levels: h = nsub/2 .. 1 pairs sub i with sub i + h (classes g, g + h S).
    for (uint h = nsub >> 1; h >= 1u; h >>= 1) {
        barrier();
        if (sub >= h && sub < 2u * h)
            [[unroll]] for (uint n = 0u; n < BATCH; n++) {
                uint i = ((sub - h) * ROWS + rho) * BATCH + n; // a float of s_act
                s_act[i >> 2][i & 3u] = floatBitsToUint(r[n]);
            }
        barrier();
        if (sub < h)
            [[unroll]] for (uint n = 0u; n < BATCH; n++) {
                uint i = (sub * ROWS + rho) * BATCH + n;
                precise float v = r[n] + uintBitsToFloat(s_act[i >> 2][i & 3u]);
                r[n] = v;
            }
    }

    uint row = grp * ROWS + rho;
    if (slices == 1u) {
        if (sub == 0u && row < pc.rows)
            [[unroll]] for (uint n = 0u; n < BATCH; n++)
                yw[pc.y_base + n * pc.y_stride + row] = floatBitsToUint(r[n]);
        return;
    }

    // Across the row group's workgroups: partial sums to the scratch, the last one adds them.
    if (sub == 0u)
        [[unroll]] for (uint n = 0u; n < BATCH; n++)
            scr[pc.scratch_parts + ((grp * slices + s) * BATCH + n) * ROWS + rho] = floatBitsToUint(r[n]);
    memoryBarrierBuffer();
    barrier();
    if (lid == 0u)
        s_last = atomicAdd(scr[grp], 1u) == slices - 1u ? 1u : 0u;
    barrier();
    if (s_last == 0u)
        return;
    memoryBarrierBuffer();
    if (sub == 0u) {
        [[unroll]] for (uint n = 0u; n < BATCH; n++) {
            // The S partials as a counter in bit-reversed order, their loads four at a time
            // in flight (S >= 2 here, a power of two: S = 2 takes the first two).
            float fin[S_LEVELS];
            for (uint j0 = 0u; j0 < slices; j0 += 4u) {
                uint part[4];
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    uint j = j0 + c;
                    uint from = S_LEVELS == 1u ? 0u : bitfieldReverse(j) >> (33u - S_LEVELS);
                    part[c] = j < slices
                                  ? scr[pc.scratch_parts + ((grp * slices + from) * BATCH + n) * ROWS + rho]
                                  : 0u;
                }
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    uint j = j0 + c;
                    if (j >= slices)
                        break;
                    precise float v = uintBitsToFloat(part[c]);
                    [[unroll]] for (uint lev = 0u; lev < S_LEVELS; lev++) {
                        if (((j >> lev) & 1u) == 0u) {
                            fin[lev] = v;
                            break;
                        }
                        v = fin[lev] + v;
                    }
                }
            }
            if (row < pc.rows)
                yw[pc.y_base + n * pc.y_stride + row] = floatBitsToUint(fin[S_LEVELS - 1u]);
        }
    }
    if (lid == 0u)
        atomicExchange(scr[grp], 0u); // ready for the next product
}
