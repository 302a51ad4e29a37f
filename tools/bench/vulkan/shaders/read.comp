// A plain read of a byte range: the ceiling of a kernel that does nothing but read the bytes
// a product reads, at the product's size (`sgfp4 bench --backend vulkan --op matvec`, its
// "read" arm; vkit_read_prepare). A few MB are a few microseconds on a GPU, where
// the launch, the ramp-up of the loads and the drain weigh as much as the streaming rate.
//
// 256 invocations a workgroup, each with LOADS = 8 independent 16-byte loads issued before any
// of them is used: a workgroup reads a chunk of 8 * 256 vectors (32 KiB), each load
// instruction of a subgroup covering consecutive vectors (coalesced). Eight loads in flight
// per invocation is twice the copy's four (the copy also holds them for its stores); with
// chunks of 32 KiB a 9 MB range is about 280 workgroups, all of whose loads can be in flight
// at once. Workgroups beyond the dispatch's take the next chunks (a grid-stride loop), so a
// range larger than groups * 32 KiB is read too.
//
// The words are XORed together, and an invocation writes its result only where it equals a
// push constant that the host chooses not to expect: the compiler cannot drop the loads (the
// store depends on every word) and the write traffic is nil (a match, 2^-32 an invocation,
// writes one word of the kit's sink). No float arithmetic, so no float controls.
// SPDX-License-Identifier: MIT
#version 450
layout(local_size_x = 256) in;

const uint LOADS = 8u;
const uint CHUNK = 256u * LOADS; // vectors per workgroup and step of the loop

// The range, bound twice: as 16-byte vectors and as words (the tail that is not a whole
// vector).
layout(std430, set = 0, binding = 0) readonly buffer Vectors { uvec4 src[]; };
layout(std430, set = 0, binding = 1) readonly buffer Words { uint src_words[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Sink { uint sink[]; };

layout(push_constant) uniform Params {
    uint count;     // whole vectors to read
    uint base;      // first vector in binding 0 (its word base * 4 in binding 1)
    uint groups;    // workgroups of the dispatch (the loop's stride in chunks)
    uint tail;      // words after the last whole vector (0..3)
    uint unexpected; // the sum that writes the sink
} pc;

void main()
{
    uint lane = gl_LocalInvocationID.x;
    uvec4 acc = uvec4(0u);
    for (uint chunk = gl_WorkGroupID.x; chunk * CHUNK < pc.count; chunk += pc.groups) {
        uint first = chunk * CHUNK + lane;
        uvec4 v[LOADS];
        for (uint k = 0u; k < LOADS; k++) {
            uint i = first + 256u * k;
            v[k] = i < pc.count ? src[pc.base + i] : uvec4(0u);
        }
        for (uint k = 0u; k < LOADS; k++)
            acc ^= v[k];
    }
    if (gl_WorkGroupID.x == 0u && lane < pc.tail)
        acc.x ^= src_words[4u * (pc.base + pc.count) + lane];
    uint sum = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (sum == pc.unexpected)
        sink[0] = sum;
}
