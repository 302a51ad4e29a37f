// A plain device-to-device copy in 16-byte vectors: the memory-bandwidth reference that
// `sgfp4 bench --backend vulkan` measures beside the decode (vkit_copy_prepare).
// Each workgroup copies 1024 vectors (16 KiB): four coalesced loads in flight per
// invocation, then four stores.
// SPDX-License-Identifier: MIT
#version 450
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Params {
    uint count;      // vectors to copy
    uint groups_x;   // workgroups per row of the dispatch grid
    uint src_base;   // first vector in binding 0
    uint dst_base;   // first vector in binding 1
} pc;

void main()
{
    uint group = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x;
    uint first = group * 1024u + gl_LocalInvocationID.x;
    uvec4 v[4];
    for (uint k = 0u; k < 4u; k++) {
        uint i = first + 256u * k;
        v[k] = i < pc.count ? src[pc.src_base + i] : uvec4(0u);
    }
    for (uint k = 0u; k < 4u; k++) {
        uint i = first + 256u * k;
        if (i < pc.count)
            dst[pc.dst_base + i] = v[k];
    }
}
