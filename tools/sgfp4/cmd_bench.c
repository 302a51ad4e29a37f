/* sgfp4 bench: decode speed against memset/memcpy (issue 6).
 * SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("bench", "not implemented yet");
}
