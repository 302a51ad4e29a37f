/* The temporary files of crash-safe outputs (output_temp.c), for output.c.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_FILEIO_OUTPUT_TEMP_H
#define SGFP4_FILEIO_OUTPUT_TEMP_H

/* Removes the leftovers of `base` in `dir` (their count in *stale), then creates, locks and
 * registers for removal on fatal signals a new temporary file for it. Returns its
 * descriptor, its malloc'ed path in *tmp_path and its signal-list entry in *slot; or -1
 * with a message naming `shown` in err (which must start empty). */
int temp_create(const char *dir, const char *base, char **tmp_path, int *slot, int *stale,
                char *err, const char *shown);
/* Removes the temporary file of every open output (async-signal-safe: for signal handlers). */
void fileio_remove_temporaries(void);
/* Takes the temporary file off the signal list (after its rename or removal) and frees
 * its path (NULL allowed), with the signals held meanwhile. */
void temp_forget(int slot, char *path);

#endif
