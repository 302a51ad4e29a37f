/* The real trained matrices the product and decode tests run on: a GPT-2 attention
 * projection and two stories260K feed-forward matrices from ../shared/weights (or
 * $SGFP4_SHARED_DIR/weights). real_matrices_each() hands each one found to a visitor as a
 * float32 copy the visitor may read until it returns; a model file that is absent is
 * skipped, one that opens without the matrix fails the test. Include after <cmocka.h>; the
 * caller skips its test when none was found.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TEST_REAL_MATRICES_H
#define SGFP4_TEST_REAL_MATRICES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgfp4_model.h"

typedef void (*real_matrix_visit)(void *ctx, const char *name, const float *w, uint64_t rows,
                                  uint64_t cols);

/* Visits every matrix found, in a fixed order; returns how many were visited. */
static inline unsigned real_matrices_each(real_matrix_visit visit, void *ctx)
{
    static const struct {
        const char *file, *tensor;
    } picks[] = {
        {"gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors", "decoder12/att.proj.w"},
        {"stories260K/stories260K.safetensors", "layers.0.feed_forward.w1.weight"},
        {"stories260K/stories260K.safetensors", "layers.4.feed_forward.w2.weight"},
    };
    const char *shared = getenv("SGFP4_SHARED_DIR");
    unsigned found = 0;
    for (unsigned i = 0; i < sizeof picks / sizeof picks[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/weights/%s", shared ? shared : "../shared", picks[i].file);
        sgfp4_model *model;
        if (sgfp4_model_open(path, &model, NULL, NULL) != SGFP4_OK)
            continue;
        const sgfp4_model_tensor *mt = sgfp4_model_tensor_find(model, picks[i].tensor);
        if (!mt || mt->dtype != SGFP4_ST_F32 || mt->rank != 2) {
            sgfp4_model_close(model);
            fail_msg("%s: no F32 matrix %s", path, picks[i].tensor);
        }
        const uint64_t rows = mt->shape[0], cols = mt->shape[1];
        float *w = malloc(rows * cols * 4);
        assert_non_null(w);
        memcpy(w, mt->data, rows * cols * 4);
        sgfp4_model_close(model);
        visit(ctx, picks[i].tensor, w, rows, cols);
        free(w);
        found++;
    }
    return found;
}

#endif
