/* The compiled shaders, embedded: the only file that includes the generated headers
 * (glslangValidator --vn writes a non-static array without <stdint.h>).
 * SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdint.h>

#include "vulkan/vk_internal.h"

#include "decode_rte.spv.h"
#include "decode_int.spv.h"
#include "decode_rte16.spv.h"
#include "matvec.spv.h"
#include "matvec_dot.spv.h"
#include "quantize.spv.h"

const uint32_t *const sgfp4_vk_spv_rte = sgfp4_spv_decode_rte;
const size_t sgfp4_vk_spv_rte_size = sizeof sgfp4_spv_decode_rte;
const uint32_t *const sgfp4_vk_spv_int = sgfp4_spv_decode_int;
const size_t sgfp4_vk_spv_int_size = sizeof sgfp4_spv_decode_int;
const uint32_t *const sgfp4_vk_spv_rte16 = sgfp4_spv_decode_rte16;
const size_t sgfp4_vk_spv_rte16_size = sizeof sgfp4_spv_decode_rte16;
const uint32_t *const sgfp4_vk_spv_matvec = sgfp4_spv_matvec;
const size_t sgfp4_vk_spv_matvec_size = sizeof sgfp4_spv_matvec;
const uint32_t *const sgfp4_vk_spv_matvec_dot = sgfp4_spv_matvec_dot;
const size_t sgfp4_vk_spv_matvec_dot_size = sizeof sgfp4_spv_matvec_dot;
const uint32_t *const sgfp4_vk_spv_quantize = sgfp4_spv_quantize;
const size_t sgfp4_vk_spv_quantize_size = sizeof sgfp4_spv_quantize;
