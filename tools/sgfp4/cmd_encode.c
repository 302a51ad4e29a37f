/* sgfp4 encode: quantize a tensor (issue 3) or a whole model (issue 5).
 * SPDX-License-Identifier: MIT */
#include "cli.h"

static const char *const valued[] = {"-o", "--output", "--shape", "--profile", "--bpw",
                                     "--policy", "--delta", "--threads", "--tensor", NULL};

int cmd_encode(int argc, char **argv)
{
    if (cli_is_model_path(cli_first_positional(argc, argv, valued)))
        return cmd_model_encode(argc, argv);
    return cli_error("encode", "not implemented yet");
}
