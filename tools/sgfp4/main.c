/* sgfp4: encode, decode, verify and inspect SGFP4 containers and quantized models.
 * Dispatches to one command (cmd_*.c, tools/bench). Contract: docs/cli.md.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "cli.h"

/* bench and example live in tools/bench, built in unless the build says SGFP4_BENCH=OFF. */
static const cli_command *const commands[] = {&cli_encode, &cli_decode, &cli_verify, &cli_info,
                                              &cli_matvec,
#if SGFP4_CLI_BENCH
                                              &cli_bench,  &cli_example
#endif
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const cli_command *find(const char *name)
{
    for (size_t k = 0; name && k < COMMAND_COUNT; k++)
        if (strcmp(name, commands[k]->name) == 0)
            return commands[k];
    return NULL;
}

static void usage(FILE *f)
{
    fputs("usage: sgfp4 COMMAND [options]\n\ncommands:\n", f);
    for (size_t k = 0; k < COMMAND_COUNT; k++)
        fprintf(f, "  %-8s %s\n", commands[k]->name, commands[k]->summary);
    fputs("\n'sgfp4 help COMMAND' or 'sgfp4 COMMAND --help' describes a command's options.\n"
          "Exit status: 0 success, 1 failure, 2 usage error.\n"
          "Documentation: man sgfp4; the Markdown pages it names are installed in\n"
          SGFP4_DOC_DIR " (docs/ in the source tree).\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 ||
        (strcmp(first, "help") == 0 && argc == 2)) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "help") == 0) {
        const cli_command *c = find(argv[2]);
        if (!c || argc > 3)
            return cli_usage_error("help", "no command '%s'", argv[2]);
        cli_print_help(c, stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        printf("sgfp4 %s (libsgfp4 %s)\n", SGFP4_VERSION_STRING, sgfp4_version_string());
        return CLI_EXIT_OK;
    }
    const cli_command *c = find(first);
    if (!c) {
        fprintf(stderr, "sgfp4: unknown command '%s'\n\n", first);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    /* an interrupted run leaves no temporary file behind (docs/cli.md, "Outputs") */
    (void)sgfp4_output_remove_on_signals();
    cli_args args;
    const int parsed = cli_parse(c, argc - 1, argv + 1, &args);
    if (parsed >= 0)
        return parsed;
    fileio_guard_begin(c->name); /* a mapped input truncated meanwhile: one line, exit 1 */
    const int rc = c->run(&args);
    cli_flush_warnings(rc);
    return rc;
}
