/* The inputs of a job, by device and inode, so that no output ever replaces one: an output
 * is the same file as an input when both name one inode, whatever the path (links, "./",
 * hard links).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/diag.h"
#include "model/model_internal.h"
#include "model/output_internal.h"

typedef struct noted {
    unsigned long long dev, ino;
    char *name;
} noted;

struct sgfp4_inputs {
    noted *items;
    size_t count, capacity;
};

sgfp4_status sgfp4_inputs_create(sgfp4_inputs **out)
{
    if (!out)
        return SGFP4_ERR_ARGUMENT;
    *out = calloc(1, sizeof **out);
    return *out ? SGFP4_OK : SGFP4_ERR_NOMEM;
}

void sgfp4_inputs_free(sgfp4_inputs *inputs)
{
    if (!inputs)
        return;
    for (size_t k = 0; k < inputs->count; k++)
        free(inputs->items[k].name);
    free(inputs->items);
    free(inputs);
}

const char *sgfp4_inputs_find(const sgfp4_inputs *inputs, unsigned long long dev,
                              unsigned long long ino)
{
    for (size_t k = 0; inputs && k < inputs->count; k++)
        if (inputs->items[k].dev == dev && inputs->items[k].ino == ino)
            return inputs->items[k].name;
    return NULL;
}

static sgfp4_status note(sgfp4_inputs *in, unsigned long long dev, unsigned long long ino,
                         const char *name)
{
    if (sgfp4_inputs_find(in, dev, ino))
        return SGFP4_OK;
    if (in->count == in->capacity) {
        const size_t cap = in->capacity ? 2 * in->capacity : 8;
        noted *bigger = realloc(in->items, cap * sizeof *bigger);
        if (!bigger)
            return SGFP4_ERR_NOMEM;
        in->items = bigger;
        in->capacity = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return SGFP4_ERR_NOMEM;
    in->items[in->count++] = (noted){dev, ino, copy};
    return SGFP4_OK;
}

sgfp4_status sgfp4_inputs_add_path(sgfp4_inputs *inputs, const char *path)
{
    if (!inputs || !path)
        return SGFP4_ERR_ARGUMENT;
    struct stat st;
    if (strcmp(path, "-") == 0)
        return fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)
                   ? note(inputs, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                          "standard input")
                   : SGFP4_OK;
    if (stat(path, &st) != 0)
        return SGFP4_OK; /* nothing there to replace */
    return note(inputs, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, path);
}

sgfp4_status sgfp4_inputs_add_model(sgfp4_inputs *inputs, const sgfp4_model *model)
{
    if (!inputs || !model)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_status s = SGFP4_OK;
    if (model->file_path)
        s = note(inputs, model->file_dev, model->file_ino, model->file_path);
    for (size_t k = 0; s == SGFP4_OK && model->shards && k < model->shard_count; k++)
        s = sgfp4_inputs_add_model(inputs, model->shards[k]);
    return s;
}

sgfp4_status sgfp4_inputs_add_all(sgfp4_inputs *inputs, const sgfp4_inputs *more)
{
    sgfp4_status s = SGFP4_OK;
    for (size_t k = 0; more && s == SGFP4_OK && k < more->count; k++)
        s = note(inputs, more->items[k].dev, more->items[k].ino, more->items[k].name);
    return s;
}
