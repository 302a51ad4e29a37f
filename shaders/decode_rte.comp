// SGFP4 decode with float reconstruction: declares RoundingModeRTE for 32-bit floats
// (SPV_KHR_float_controls), so the one rounding add is round-to-nearest-even. Used where
// the device reports shaderRoundingModeRTEFloat32.
// SPDX-License-Identifier: MIT
#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(4462, 32); // RoundingModeRTE, 32-bit floats
// Declared, never called: pulls in OpCapability RoundingModeRTE and the extension.
spirv_instruction(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], id = 0)
void sgfp4_require_rte();

#extension GL_GOOGLE_include_directive : require
#include "decode_body.glsl"
