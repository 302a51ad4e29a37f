// SGFP4 decode with float reconstruction and f16 outputs through the device's f32 -> f16
// conversion (OpFConvert; needs the Float16 capability, i.e. shaderFloat16). The module
// declares RoundingModeRTE and SignedZeroInfNanPreserve for 32-bit floats here; the same
// modes for 16-bit results, and DenormPreserve 16 where the device supports it, are added to
// the SPIR-V when the pipeline is created (glslang keeps one width per execution mode:
// src/vulkan/vk_spirv.c). Used where the device reports shaderFloat16,
// shaderRoundingModeRTEFloat16/32 and shaderSignedZeroInfNanPreserveFloat16/32.
// SPDX-License-Identifier: MIT
#version 450
#extension GL_EXT_spirv_intrinsics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
spirv_execution_mode(4462, 32); // RoundingModeRTE, 32-bit floats
spirv_execution_mode(4461, 32); // SignedZeroInfNanPreserve, 32-bit floats
spirv_instruction(extensions = ["SPV_KHR_float_controls"], capabilities = [4467, 4466], id = 0)
void sgfp4_require_float_controls();
#define SGFP4_F16_HARDWARE 1

#extension GL_GOOGLE_include_directive : require
#include "decode_body.glsl"
