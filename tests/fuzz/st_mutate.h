/* A structure-aware mutator for safetensors files: it parses the header (jansson) and changes
 * it the way real writers and attackers differ, which byte-level mutation almost never
 * reaches: keys in another order than the data, the data itself in another order,
 * __metadata__ anywhere, zero-size and odd-dtype tensors, shifted and swapped offsets,
 * reshaped tensors, nested metadata, duplicate keys, and the sgfp4 manifest's fields.
 * Used by the model target's libFuzzer mutator (fuzz_model_mutator.c) and by the regression
 * driver's --mutants option, so that CI runs structured variants of every corpus file.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_FUZZ_ST_MUTATE_H
#define SGFP4_FUZZ_ST_MUTATE_H

#include <stddef.h>
#include <stdint.h>

/* Mutates the safetensors file in file[0..size) in place (at most max_size bytes), driven by
 * `seed` (the same seed, the same result). Returns the new size, or 0 when the bytes are not
 * a file it can parse (the caller then mutates bytes instead). */
size_t st_mutate(uint8_t *file, size_t size, size_t max_size, uint32_t seed);

#endif
