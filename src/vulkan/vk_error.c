/* Vulkan failures as library statuses (vk_error.h).
 * SPDX-License-Identifier: MIT */
#include "vulkan/vk_error.h"
#include "common/diag.h"

sgfp4_status sgfp4_vk_fail(sgfp4_diag *diag, VkResult result, const char *what)
{
    sgfp4_status status = SGFP4_ERR_VK;
    if (result == VK_ERROR_DEVICE_LOST)
        status = SGFP4_ERR_VK_DEVICE_LOST;
    else if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
             result == VK_ERROR_OUT_OF_POOL_MEMORY)
        status = SGFP4_ERR_VK_OUT_OF_MEMORY;
    return sgfp4_fail(diag, status, -1, -1, -1, "Vulkan: %s failed (VkResult %d)", what,
                      (int)result);
}
