/* Adding capabilities and execution modes to an embedded SPIR-V module before it is given to
 * the driver. glslang (GL_EXT_spirv_intrinsics) keeps one operand per execution mode, so a
 * module that needs RoundingModeRTE for 32-bit and for 16-bit floats declares the 32-bit modes
 * in GLSL and receives the 16-bit ones here; DenormPreserve 16 is added only where the device
 * supports it.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "vulkan/vk_internal.h"

enum { SPIRV_MAGIC = 0x07230203u, OP_CAPABILITY = 17, OP_ENTRY_POINT = 15,
       OP_EXECUTION_MODE = 16, OP_FUNCTION = 54 };

uint32_t *sgfp4_vk_spirv_add_modes(const uint32_t *words, size_t count,
                                   const uint32_t *capabilities, unsigned n_capabilities,
                                   const uint32_t (*modes)[2], unsigned n_modes,
                                   size_t *out_count)
{
    *out_count = 0;
    if (count < 5 || words[0] != SPIRV_MAGIC)
        return NULL;
    /* Where the new words go: after the last OpCapability and after the last OpExecutionMode
     * (the layout of a module fixes both sections' order), and the entry point's id. */
    size_t after_capabilities = 0, after_modes = 0;
    uint32_t entry = 0;
    for (size_t i = 5; i < count;) {
        const uint32_t op = words[i] & 0xFFFFu, len = words[i] >> 16;
        if (len == 0 || len > count - i)
            return NULL;
        if (op == OP_CAPABILITY)
            after_capabilities = i + len;
        else if (op == OP_ENTRY_POINT && len >= 3 && entry == 0)
            entry = words[i + 2];
        else if (op == OP_EXECUTION_MODE)
            after_modes = i + len;
        else if (op == OP_FUNCTION)
            break;
        i += len;
    }
    if (!after_capabilities || !after_modes || !entry)
        return NULL;
    const size_t n = count + 2 * (size_t)n_capabilities + 4 * (size_t)n_modes;
    uint32_t *out = malloc(n * sizeof *out);
    if (!out)
        return NULL;
    size_t o = 0;
    memcpy(out, words, after_capabilities * sizeof *out);
    o = after_capabilities;
    for (unsigned c = 0; c < n_capabilities; c++) {
        out[o++] = 2u << 16 | OP_CAPABILITY;
        out[o++] = capabilities[c];
    }
    memcpy(out + o, words + after_capabilities,
           (after_modes - after_capabilities) * sizeof *out);
    o += after_modes - after_capabilities;
    for (unsigned m = 0; m < n_modes; m++) {
        out[o++] = 4u << 16 | OP_EXECUTION_MODE;
        out[o++] = entry;
        out[o++] = modes[m][0];
        out[o++] = modes[m][1];
    }
    memcpy(out + o, words + after_modes, (count - after_modes) * sizeof *out);
    *out_count = n;
    return out;
}
