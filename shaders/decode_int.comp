// SGFP4 decode with integer-only reconstruction: the same bits as decode_rte.comp on
// devices whose float adds may not round to nearest even (no RoundingModeRTE).
// SPDX-License-Identifier: MIT
#version 450
#define SGFP4_INTEGER_RECONSTRUCTION 1

#extension GL_GOOGLE_include_directive : require
#include "decode_body.glsl"
