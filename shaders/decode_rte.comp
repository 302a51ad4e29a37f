// SGFP4 decode with float reconstruction: declares RoundingModeRTE and SignedZeroInfNanPreserve
// for 32-bit floats (SPV_KHR_float_controls), so the one rounding add is round-to-nearest-even
// and a -0.0 weight keeps its sign. Used where the device reports
// shaderRoundingModeRTEFloat32 and shaderSignedZeroInfNanPreserveFloat32.
// SPDX-License-Identifier: MIT
#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(4462, 32); // RoundingModeRTE, 32-bit floats
spirv_execution_mode(4461, 32); // SignedZeroInfNanPreserve, 32-bit floats
// Declared, never called: pulls in OpCapability RoundingModeRTE and SignedZeroInfNanPreserve
// and the extension.
spirv_instruction(extensions = ["SPV_KHR_float_controls"], capabilities = [4467, 4466], id = 0)
void sgfp4_require_float_controls();

#extension GL_GOOGLE_include_directive : require
#include "decode_body.glsl"
