/* Vulkan failures as library statuses: what every file of the backend reports a failed
 * Vulkan call with.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_VULKAN_VK_ERROR_H
#define SGFP4_VULKAN_VK_ERROR_H

#include <vulkan/vulkan.h>

#include "sgfp4.h"

/* Records a failed Vulkan call `what` in diag ("Vulkan: what failed (VkResult N)") and
 * returns the matching status: SGFP4_ERR_VK_DEVICE_LOST, SGFP4_ERR_VK_OUT_OF_MEMORY (host,
 * device or pool memory) or SGFP4_ERR_VK. */
sgfp4_status sgfp4_vk_fail(sgfp4_diag *diag, VkResult result, const char *what);

#endif
