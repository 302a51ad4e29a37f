/* sgfp4-eval's outputs (--imatrix-out, --from-llama2c): the library's output rules, as the
 * `sgfp4` tool applies them (tools/fileio): never a file this run reads, an existing file
 * only with -f, devices and FIFOs written in place, a set for a name ending in .index.json,
 * refused before any work, temporary files removed on fatal signals.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "eval.h"
#include "fileio.h"

void eval_note_input(const char *path)
{
    if (path)
        fileio_note_input(path);
}

sgfp4_model_output *eval_output_open(const char *path, int force)
{
    (void)sgfp4_output_remove_on_signals();
    const sgfp4_output_options o = fileio_output_options(force ? FILEIO_FORCE : 0);
    sgfp4_model_output *out = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_output_open(path, NULL, SGFP4_MODEL_OUTPUT_WRITE, &o, &out, &diag) !=
        SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s\n", diag.message);
        return NULL;
    }
    return out;
}
