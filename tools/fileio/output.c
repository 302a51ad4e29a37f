/* The tool's outputs: the library's output rules (sgfp4_model.h, "output files") with this
 * run's inputs and the tool's name for forcing, "-f". A process of the tool is one run, so
 * its inputs are one list for the whole process.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

static sgfp4_inputs *run_inputs;

static sgfp4_inputs *inputs(void)
{
    if (!run_inputs && sgfp4_inputs_create(&run_inputs) != SGFP4_OK)
        run_inputs = NULL; /* out of memory: the next output's open fails soon enough */
    return run_inputs;
}

void fileio_note_input(const char *path)
{
    if (inputs())
        (void)sgfp4_inputs_add_path(run_inputs, path);
}

void fileio_note_model(const sgfp4_model *model)
{
    if (inputs())
        (void)sgfp4_inputs_add_model(run_inputs, model);
}

sgfp4_output_options fileio_output_options(unsigned flags)
{
    sgfp4_output_options o;
    sgfp4_output_options_init(&o);
    o.flags = flags & FILEIO_FORCE ? SGFP4_OUTPUT_FORCE : 0;
    o.inputs = inputs();
    o.force_name = "-f";
    return o;
}

bool fileio_output_open(const char *path, unsigned flags, fileio_output *out, char *err)
{
    memset(out, 0, sizeof *out);
    const sgfp4_output_options o = fileio_output_options(flags);
    sgfp4_diag diag;
    if (sgfp4_output_open(path, &o, &out->handle, &diag) != SGFP4_OK)
        return snprintf(err, FILEIO_ERROR_SIZE, "%s", diag.message), false;
    out->path = strdup(path);
    if (!out->path) {
        fileio_output_abort(out);
        return snprintf(err, FILEIO_ERROR_SIZE, "out of memory"), false;
    }
    out->stale_removed = sgfp4_output_leftovers_removed(out->handle);
    return true;
}

bool fileio_output_write(fileio_output *out, const void *data, size_t size)
{
    if (!out->failed && sgfp4_output_write(out->handle, data, size) != SGFP4_OK)
        out->failed = true;
    return !out->failed;
}

bool fileio_output_commit(fileio_output *out, char *err)
{
    sgfp4_diag diag;
    const bool ok = sgfp4_output_commit(out->handle, &diag) == SGFP4_OK;
    if (!ok)
        snprintf(err, FILEIO_ERROR_SIZE, "%s", diag.message);
    fileio_output_abort(out); /* frees; a failed commit removed the temporary file */
    return ok;
}

void fileio_output_abort(fileio_output *out)
{
    sgfp4_output_close(out->handle);
    free(out->path);
    memset(out, 0, sizeof *out);
}
