// Dense y = W x, the peer that the SGFP4 matrix-vector product is measured against
// (vkit_gemv_prepare, `sgfp4 bench --backend vulkan --op gemv`): W f16, rows x cols,
// row-major; x and y f32, BATCH columns (x: BATCH x cols, y: BATCH x rows).
//
// A straightforward memory-bound kernel: each subgroup takes ROWS rows at a time (a
// grid-stride loop over row groups); lane l reads the 16-byte weight vectors (8 weights)
// l, l + width, ... of each row, UNROLL per row per iteration, so ROWS * UNROLL independent
// loads are in flight per lane; x comes through the caches. The sums are reduced with
// subgroupAdd (no shared memory, no barrier). Not bit-exact: the order of the sum follows the
// subgroup size.
// SPDX-License-Identifier: MIT
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint BATCH = 1;
const uint ROWS = 2;
const uint UNROLL = 2;

layout(std430, set = 0, binding = 0) readonly buffer Weights { uvec4 w[]; };
layout(std430, set = 0, binding = 1) readonly buffer Input { vec4 x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
    uint rows, cols;
    uint w_base; // first vector of W in binding 0
    uint x_base; // first vec4 of x in binding 1
    uint y_base; // first float of y in binding 2
} pc;

void main()
{
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint nv = pc.cols / 8u;    // weight vectors per row
    uint x_row = pc.cols / 4u; // vec4 per column of x
    uint row_groups = (pc.rows + ROWS - 1u) / ROWS;
    uint lane = gl_SubgroupInvocationID, width = gl_SubgroupSize;
    // The loop is uniform in a subgroup: subgroupAdd sees every lane.
    for (uint rg = group * gl_NumSubgroups + gl_SubgroupID; rg < row_groups;
         rg += groups * gl_NumSubgroups) {
        uint r0 = rg * ROWS;
        float acc[ROWS][BATCH];
        for (uint r = 0u; r < ROWS; r++)
            for (uint b = 0u; b < BATCH; b++)
                acc[r][b] = 0.0;
        for (uint v0 = lane; v0 < nv; v0 += UNROLL * width) {
            uvec4 q[UNROLL][ROWS];
            for (uint u = 0u; u < UNROLL; u++) {
                uint v = v0 + u * width;
                for (uint r = 0u; r < ROWS; r++)
                    q[u][r] = v < nv && r0 + r < pc.rows ? w[pc.w_base + (r0 + r) * nv + v]
                                                         : uvec4(0u);
            }
            for (uint u = 0u; u < UNROLL; u++) {
                uint v = v0 + u * width;
                if (v >= nv)
                    break;
                vec4 lo[ROWS], hi[ROWS];
                for (uint r = 0u; r < ROWS; r++) {
                    lo[r] = vec4(unpackHalf2x16(q[u][r].x), unpackHalf2x16(q[u][r].y));
                    hi[r] = vec4(unpackHalf2x16(q[u][r].z), unpackHalf2x16(q[u][r].w));
                }
                for (uint b = 0u; b < BATCH; b++) {
                    vec4 xa = x[pc.x_base + b * x_row + 2u * v];
                    vec4 xb = x[pc.x_base + b * x_row + 2u * v + 1u];
                    for (uint r = 0u; r < ROWS; r++)
                        acc[r][b] += dot(lo[r], xa) + dot(hi[r], xb);
                }
            }
        }
        for (uint r = 0u; r < ROWS; r++) {
            for (uint b = 0u; b < BATCH; b++) {
                float t = subgroupAdd(acc[r][b]);
                if (subgroupElect() && r0 + r < pc.rows)
                    y[pc.y_base + b * pc.rows + r0 + r] = t;
            }
        }
    }
}
