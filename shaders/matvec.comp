// The D8 matrix-vector product (matvec_body.glsl) with the integer dot products written out:
// for devices without the shaderIntegerDotProduct feature enabled (an adopted device, or one
// without it). Declares RoundingModeRTE and SignedZeroInfNanPreserve for 32-bit floats
// (SPV_KHR_float_controls); used only where the device reports both.
// SPDX-License-Identifier: MIT
#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(4462, 32); // RoundingModeRTE, 32-bit floats
spirv_execution_mode(4461, 32); // SignedZeroInfNanPreserve, 32-bit floats
spirv_instruction(extensions = ["SPV_KHR_float_controls"], capabilities = [4467, 4466], id = 0)
void sgfp4_require_float_controls();

#extension GL_GOOGLE_include_directive : require
#include "matvec_body.glsl"
