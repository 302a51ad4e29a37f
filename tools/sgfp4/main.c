/* sgfp4: encode, decode, verify and inspect SGFP4 containers and quantized models.
 * Dispatches to one cmd_*.c file per command. Contract: docs/cli.md.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: sgfp4 COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  encode IN -o OUT    quantize a tensor (raw f32, .npy, safetensors) or a whole model\n"
    "  decode IN -o OUT    decode a container (or a quantized model) back to floats\n"
    "  verify IN           check a container strictly and print its hashes\n"
    "  verify --golden DIR run a golden vector set\n"
    "  info IN             describe a container: layouts, modes, leaf sizes, bits per weight\n"
    "  bench               measure decode speed against memset/memcpy\n"
    "  example -o OUT      write the built-in synthetic transformer-like model\n"
    "\n"
    "'sgfp4 COMMAND --help' describes a command's options. Docs: docs/cli.md\n";

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*run)(int, char **); } commands[] = {
        {"encode", cmd_encode}, {"decode", cmd_decode}, {"verify", cmd_verify},
        {"info", cmd_info},     {"bench", cmd_bench},   {"example", cmd_example},
    };
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("sgfp4 %s (libsgfp4 %s)\n", "0.1.0", sgfp4_version_string());
        return CLI_EXIT_OK;
    }
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(argv[1], commands[k].name) == 0)
            return commands[k].run(argc - 1, argv + 1);
    fprintf(stderr, "sgfp4: unknown command '%s'\n\n%s", argv[1], usage);
    return CLI_EXIT_USAGE;
}
