/* Whole-model forms of encode / decode / verify / info on safetensors files (issue 5).
 * SPDX-License-Identifier: MIT */
#include "cli.h"

static int unsupported(const char *cmd)
{
    return cli_error(cmd, "safetensors model files are not supported yet");
}

int cmd_model_encode(int argc, char **argv) { (void)argc; (void)argv; return unsupported("encode"); }
int cmd_model_decode(int argc, char **argv) { (void)argc; (void)argv; return unsupported("decode"); }
int cmd_model_verify(int argc, char **argv) { (void)argc; (void)argv; return unsupported("verify"); }
int cmd_model_info(int argc, char **argv) { (void)argc; (void)argv; return unsupported("info"); }
