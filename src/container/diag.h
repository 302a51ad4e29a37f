/* The diagnostics helpers moved to the floor every layer shares: include "common/diag.h".
 * This forwarding header stays until the model and Vulkan files (and branches in flight)
 * include the new place.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_CONTAINER_DIAG_H
#define SGFP4_CONTAINER_DIAG_H

#include "common/diag.h"

#endif
