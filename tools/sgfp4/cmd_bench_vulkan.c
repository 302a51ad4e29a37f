/* sgfp4 bench --backend vulkan: GPU decode against a device copy (issue 4).
 * SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_bench_vulkan(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("bench", "--backend vulkan: %s", sgfp4_status_str(SGFP4_ERR_UNAVAILABLE));
}
