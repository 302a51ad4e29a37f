// The D8 matrix-vector product (matvec_body.glsl) with the Class A cell sums through OpSDot
// (SPV_KHR_integer_dot_product, 4x8-bit packed: the same exact integers). For a context's own
// device created with shaderIntegerDotProduct. Declares RoundingModeRTE and
// SignedZeroInfNanPreserve for 32-bit floats, as matvec.comp.
// SPDX-License-Identifier: MIT
#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(4462, 32); // RoundingModeRTE, 32-bit floats
spirv_execution_mode(4461, 32); // SignedZeroInfNanPreserve, 32-bit floats
spirv_instruction(extensions = ["SPV_KHR_float_controls"], capabilities = [4467, 4466], id = 0)
void sgfp4_require_float_controls();
// OpSDot (4450) on two words of 4 signed bytes; format 0 = PackedVectorFormat4x8Bit.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sgfp4_sdot(uint a, uint b, spirv_literal int format);
#define SGFP4_DOT_PRODUCT 1
int sdot4x8(uint a, uint b)
{
    return sgfp4_sdot(a, b, 0);
}

#extension GL_GOOGLE_include_directive : require
#include "matvec_body.glsl"
