/* The opened-model structure shared by the files of src/model/.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_INTERNAL_H
#define SGFP4_MODEL_INTERNAL_H

#include <stdbool.h>

#include "container/diag.h"
#include "sgfp4_model.h"

/* One tensor plus the storage its pointers refer to. */
typedef struct model_entry {
    sgfp4_model_tensor pub;
    uint64_t shape[SGFP4_MODEL_MAX_RANK];
    uint64_t begin, end;          /* data_offsets as written (relative to the data section) */
    sgfp4_model_quant quant;      /* valid when pub.quant != NULL */
    uint64_t original_shape[SGFP4_MODEL_MAX_RANK];
    char *encoder_json;           /* owned */
} model_entry;

struct sgfp4_model {
    const uint8_t *base;          /* the whole file */
    uint64_t size;
    uint64_t data_offset;         /* 8 + header length */
    void *mapping;                /* non-NULL when we mapped the file (munmap on close) */
    bool compressed;
    model_entry *entries;         /* in data-offset order */
    size_t count;
    char **meta_keys, **meta_values;
    size_t meta_count;
    bool quantized;
    size_t *by_name;              /* entry indices sorted by name (for lookups) */
};

/* Parses and checks header + manifest of the bytes model->base[0..size). */
sgfp4_status sgfp4_model_parse(sgfp4_model *model, const sgfp4_limits *limits, sgfp4_diag *diag);
/* Parses the manifest JSON text into the entries (called by sgfp4_model_parse). */
sgfp4_status sgfp4_model_parse_manifest(sgfp4_model *model, const char *json, sgfp4_diag *diag);
/* Builds model->by_name (entries must be final). */
sgfp4_status sgfp4_model_index_names(sgfp4_model *model, sgfp4_diag *diag);
/* Frees everything but the model struct and mapping. */
void sgfp4_model_free_parsed(sgfp4_model *model);

/* Fails (SGFP4_ERR_ARGUMENT, naming element and byte offset) if a F32 tensor holds a NaN or
 * infinity. */
sgfp4_status sgfp4_model_tensor_to_f32_check(const sgfp4_model_tensor *tensor, sgfp4_diag *diag);

/* sha256 of bytes as 64 lowercase hex digits + NUL. */
void sgfp4_sha256_hex(const void *data, size_t size, char hex[65]);

/* The temporary-file folder: dir if given, else $TMPDIR, else /tmp. */
const char *sgfp4_temp_dir(const char *dir);
/* Creates an unlinked read/write temporary file in `dir`; returns its fd or -1. */
int sgfp4_temp_file(const char *dir);

/* Writes all bytes to the sink. */
static inline sgfp4_status sgfp4_sink_put(const sgfp4_sink *s, const void *data, size_t size)
{
    return size ? s->write(s->user, data, size) : SGFP4_OK;
}

#define SGFP4_DEFAULT_MAX_HEADER (100u * 1000u * 1000u)

#endif
