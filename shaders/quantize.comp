// The Class A activation quantizer of DECISIONS D8 on the device, writing the q8 layout of
// sgfp4_matvec_quantize (docs/matvec.md) byte for byte:
//   m = max |x_j| over the 64-column block (padding columns count as 0);
//   m < 2^-40:  d_b = +0 and every q_j = 0;
//   otherwise:  d_b = 2^e, e the smallest integer with m <= 127 * 2^e, and
//               q_j = round_half_even(x_j * 2^-e) (|q_j| <= 127).
// Everything is exact without any floating-point mode: the maximum is an integer maximum of
// magnitude bits (in any order), e comes from m's bits, x_j * 2^-e is a scaling by a power of
// two whose result is either exact or below one half in magnitude (then rounded to 0 either
// way), and roundEven is exact. A NaN or infinite x_j sets the status word to the smallest
// n * cols + j seen (atomicMin: the same index whatever the order), for the host to report.
// One workgroup of 64 invocations per (block, vector): gl_WorkGroupID = (b, n).
// SPDX-License-Identifier: MIT
#version 450

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint X_F16 = 0; // 1: x is f16, 0: f32

layout(std430, set = 0, binding = 0) readonly buffer Input { uint xw[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { uint qw[]; };
layout(std430, set = 0, binding = 2) buffer Status { uint status[]; };

layout(push_constant) uniform Params {
    uint cols;
    uint tiles_x;   // T = ceil(cols / 64)
    uint x_base;    // first element of x in binding 0
    uint x_stride;  // elements per vector
    uint q_base;    // first word of q8 in binding 1
    uint q_stride;  // words per vector: align64(68 T) / 4
} pc;

shared uint s_max;
shared uint s_q[64];

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
        return sign | 0x7F800000u | (m << 13);
    return sign | ((e + 112u) << 23) | (m << 13);
}

void main()
{
    uint j = gl_LocalInvocationID.x;
    uint b = gl_WorkGroupID.x, n = gl_WorkGroupID.y;
    uint col = b * 64u + j;
    uint bits = 0u;
    if (col < pc.cols) {
        uint e = pc.x_base + n * pc.x_stride + col;
        bits = X_F16 == 1u ? half_to_float_bits((xw[e >> 1] >> ((e & 1u) * 16u)) & 0xFFFFu)
                           : xw[e];
    }
    uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u)
        atomicMin(status[0], n * pc.cols + col);
    if (j == 0u)
        s_max = 0u;
    barrier();
    atomicMax(s_max, magnitude); // magnitude bits order like magnitudes for finite values
    barrier();
    uint m = s_max;
    int q = 0;
    uint d = 0u;                                // +0 below the 2^-40 floor
    if (m >= ((127u - 40u) << 23)) {
        int p = int(m >> 23) - 127;             // m = (1 + f) 2^p
        int e = (m & 0x7FFFFFu) <= 0x7E0000u ? p - 6 : p - 5;
        d = uint(e + 127) << 23;                // 2^e, e in [-46, 122]
        float scale = uintBitsToFloat(uint(127 - e) << 23);
        q = int(roundEven(uintBitsToFloat(bits) * scale));
    }
    s_q[j] = uint(q) & 0xFFu;
    barrier();
    uint qv = pc.q_base + n * pc.q_stride;
    if (j < 16u)
        qw[qv + b * 16u + j] = s_q[4u * j] | (s_q[4u * j + 1u] << 8) | (s_q[4u * j + 2u] << 16) |
                               (s_q[4u * j + 3u] << 24);
    if (j == 16u)
        qw[qv + pc.tiles_x * 16u + b] = d;
    if (b == 0u) // the zero pad of the vector, after the scales
        for (uint w = pc.tiles_x * 17u + j; w < pc.q_stride; w += 64u)
            qw[qv + w] = 0u;
}
