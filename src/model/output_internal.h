/* What the output files of the model layer share: the temporary files and their removal on
 * signals (output_temp.c), the inputs an output must not be (output_inputs.c), and how a
 * path is shown in a message (output_file.c).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_OUTPUT_INTERNAL_H
#define SGFP4_MODEL_OUTPUT_INTERNAL_H

#include <signal.h>
#include <stddef.h>

#include "sgfp4_model.h"

/* The last write error of an output (errno), 0 if none. */
int sgfp4_output_error(const sgfp4_output *output);

/* Removes the leftovers of `base` in `dir` (their count in *stale), then creates, locks and
 * lists for removal on fatal signals a new temporary file for it. Returns its descriptor,
 * its malloc'ed path in *tmp_path and its entry in the list in *slot; or -1 with *diag
 * naming `shown` (SGFP4_ERR_OUTPUT_REFUSED for a missing folder, else SGFP4_ERR_IO). */
int sgfp4_temp_create(const char *dir, const char *base, char **tmp_path, int *slot,
                      size_t *stale, const char *shown, sgfp4_diag *diag);
/* Takes the temporary file off the list (after its rename or removal) and frees its path
 * (NULL allowed); a signal handler reading the list meanwhile never sees a freed path. */
void sgfp4_temp_forget(int slot, char *path);
/* Blocks the fatal signals on the calling thread (the previous mask into *previous), and
 * restores the mask. */
void sgfp4_temp_hold_signals(sigset_t *previous);
void sgfp4_temp_release_signals(const sigset_t *previous);

/* The name of the input that is the file (dev, ino), or NULL (inputs may be NULL). */
const char *sgfp4_inputs_find(const sgfp4_inputs *inputs, unsigned long long dev,
                              unsigned long long ino);

/* Adds every input of `more` (NULL: none) to `inputs`. */
sgfp4_status sgfp4_inputs_add_all(sgfp4_inputs *inputs, const sgfp4_inputs *more);

/* `path` as a message shows it: whole up to 80 bytes, else its start and end around "...",
 * so that a message naming two paths and why always fits a diagnostic. Writes into buf. */
#define SGFP4_SHOWN_SIZE 88
const char *sgfp4_path_shown(const char *path, char buf[SGFP4_SHOWN_SIZE]);

#endif
