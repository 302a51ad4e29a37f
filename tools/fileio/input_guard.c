/* Mapped inputs that another program truncates while the tool reads them.
 *
 * The tool maps its input files (fileio_read, and the library's sgfp4_model_open). When a
 * mapped file shrinks, reading a page past its new end raises SIGBUS (si_code BUS_ADRERR) in
 * the thread that reads it, which would kill the tool with "Bus error" and leave its
 * temporary outputs behind. The handler installed here turns that into the tool's error
 * convention: the temporary files of every open output are removed, one line names the file
 * (`sgfp4: COMMAND: PATH: changed while being read ... [IO]`) and the tool exits 1.
 *
 * The inputs are a list that only grows, newest first, each entry immutable once published,
 * so the handler reads it without locks. Everything the handler does is async-signal-safe:
 * atomic loads, unlink() (sgfp4_output_remove_temporaries), write() and _exit(). The first thread
 * to take the signal reports; another that takes it meanwhile waits for the exit.
 * SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"

typedef struct guarded {
    const struct guarded *next;  /* the input noted before this one */
    uintptr_t begin, end;        /* its mapping; 0, 0 while it is being opened */
    size_t line_size;
    char line[];                 /* the error line, newline included */
} guarded;

static _Atomic(const guarded *) newest;
static const char *guard_command; /* NULL until fileio_guard_begin(): no guarding */

/* The input the faulting address lies in; else the newest (a file being opened). */
static const guarded *input_at(uintptr_t address)
{
    const guarded *first = atomic_load(&newest);
    for (const guarded *g = first; g; g = g->next)
        if (address >= g->begin && address < g->end)
            return g;
    return first;
}

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)context;
    static atomic_flag reporting = ATOMIC_FLAG_INIT;
    const guarded *g = info->si_code == BUS_ADRERR ? input_at((uintptr_t)info->si_addr) : NULL;
    if (!g) {
        /* not a file that shrank: the default action, when the access is made again */
        signal(sig, SIG_DFL);
        return;
    }
    if (atomic_flag_test_and_set(&reporting))
        for (;;)
            pause(); /* another thread reports and ends the process */
    sgfp4_output_remove_temporaries();
    ssize_t written = write(STDERR_FILENO, g->line, g->line_size);
    (void)written;
    _exit(1);
}

void fileio_guard_begin(const char *command)
{
    if (guard_command)
        return;
    guard_command = command;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
}

void fileio_guard_input(const char *path, const void *begin, size_t size)
{
    if (!guard_command)
        return;
    static const char format[] =
        "sgfp4: %s: %s: changed while being read (truncated or rewritten by another program) "
        "[%s]\n";
    const char *status = sgfp4_status_name(SGFP4_ERR_IO);
    const int n = snprintf(NULL, 0, format, guard_command, path, status);
    guarded *g = n > 0 ? malloc(sizeof *g + (size_t)n + 1) : NULL;
    if (!g)
        return; /* unguarded: the signal keeps its default action for this file */
    snprintf(g->line, (size_t)n + 1, format, guard_command, path, status);
    g->line_size = (size_t)n;
    g->begin = (uintptr_t)begin;
    g->end = begin ? (uintptr_t)begin + size : 0;
    /* published whole: the handler sees it complete or not at all */
    const guarded *first = atomic_load(&newest);
    do
        g->next = first;
    while (!atomic_compare_exchange_weak(&newest, &first, g));
}
