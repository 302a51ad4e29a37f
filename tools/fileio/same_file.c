/* The inputs of this run, by device and inode, so that no output ever replaces one: an
 * output is the same file as an input when both name one inode, whatever the path (links,
 * "./", hard links).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

typedef struct noted {
    unsigned long long dev, ino;
    char *name;
} noted;

static noted *inputs;
static size_t input_count, input_capacity;

static void note(const struct stat *st, const char *name)
{
    if (fileio_same_input((unsigned long long)st->st_dev, (unsigned long long)st->st_ino))
        return;
    if (input_count == input_capacity) {
        const size_t cap = input_capacity ? 2 * input_capacity : 16;
        noted *bigger = realloc(inputs, cap * sizeof *bigger);
        if (!bigger)
            return; /* out of memory: the output's open fails soon enough */
        inputs = bigger;
        input_capacity = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return;
    inputs[input_count++] =
        (noted){(unsigned long long)st->st_dev, (unsigned long long)st->st_ino, copy};
}

void fileio_note_input(const char *path)
{
    struct stat st;
    if (strcmp(path, "-") == 0) {
        if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
            note(&st, "standard input");
    } else if (stat(path, &st) == 0) {
        note(&st, path);
    }
}

const char *fileio_same_input(unsigned long long dev, unsigned long long ino)
{
    for (size_t k = 0; k < input_count; k++)
        if (inputs[k].dev == dev && inputs[k].ino == ino)
            return inputs[k].name;
    return NULL;
}
