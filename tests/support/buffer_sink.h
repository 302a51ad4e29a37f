/* A growing memory buffer behind an sgfp4_sink: the one sink into memory of the tests and
 * fuzz targets that write a safetensors file (a model, an importance file, a decoded model)
 * and open or compare it (sgfp4_model_open_memory()); also the bytes of a file they build or
 * read whole. Zero-initialize it (`buffer b = {0};`); free(b.data) when done.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TEST_BUFFER_SINK_H
#define SGFP4_TEST_BUFFER_SINK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sgfp4.h"

typedef struct buffer {
    uint8_t *data;
    size_t size, cap;
} buffer;

/* The sink's write: appends, doubling the capacity as needed. */
static inline sgfp4_status buffer_write(void *user, const void *data, size_t size)
{
    buffer *b = user;
    if (b->size + size > b->cap) {
        const size_t cap = (b->size + size) * 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown)
            return SGFP4_ERR_NOMEM;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->size, data, size);
    b->size += size;
    return SGFP4_OK;
}

#endif
