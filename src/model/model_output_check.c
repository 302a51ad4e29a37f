/* Checks of a model file just written, before it replaces anything (model_output.c): what
 * an encode wrote is a verified D6 quantized model whose pass-through tensors are the
 * source's byte for byte; what a decode wrote is a strict safetensors file with every
 * tensor; what a caller wrote opens as a safetensors file. A failure of the first two is a
 * bug of this library (SGFP4_ERR_INTERNAL); messages start with the output's name.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/diag.h"
#include "model/model_internal.h"
#include "model/model_output_check.h"

sgfp4_status sgfp4_model_check_opens(const char *path, const char *shown, sgfp4_model **out,
                                     sgfp4_status failure, sgfp4_diag *diag)
{
    sgfp4_diag why;
    const sgfp4_status s = sgfp4_model_open(path, out, NULL, &why);
    if (s != SGFP4_OK)
        return sgfp4_fail(diag, failure == SGFP4_OK ? s : failure, -1, -1, -1,
                          "%s: %sthe written file does not open: %.120s [%s]", shown,
                          failure == SGFP4_ERR_INTERNAL ? "internal error: " : "", why.message,
                          sgfp4_status_name(s));
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_check_encoded(const char *path, const char *shown,
                                       const sgfp4_model *src, sgfp4_diag *diag)
{
    sgfp4_model *m = NULL;
    sgfp4_status s = sgfp4_model_check_opens(path, shown, &m, SGFP4_ERR_INTERNAL, diag);
    if (s != SGFP4_OK)
        return s;
    sgfp4_model_verify_result r;
    sgfp4_model_verify_result_init(&r);
    sgfp4_diag why;
    const sgfp4_status v = sgfp4_model_verify(m, &r, &why);
    if (v != SGFP4_OK)
        s = sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1,
                       "%s: internal error: the written model fails verification: %.120s [%s]",
                       shown, why.message, sgfp4_status_name(v));
    else if (!sgfp4_model_is_quantized(m) || !r.d6_aligned ||
             r.tensors != sgfp4_model_tensor_count(src))
        s = sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1,
                       "%s: internal error: the written model fails the D6 layout self-check",
                       shown);
    for (size_t k = 0; s == SGFP4_OK && k < r.tensors; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        const sgfp4_model_tensor *o = sgfp4_model_tensor_find(src, t->name);
        if (!o || (!t->quant && (t->nbytes != o->nbytes || memcmp(t->data, o->data, t->nbytes))))
            s = sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1,
                           "%s: internal error: tensor '%.80s' differs from the source", shown,
                           t->name);
        sgfp4_model_tensor_evict(m, t);
        if (o)
            sgfp4_model_tensor_evict(src, o);
    }
    sgfp4_model_close(m);
    return s;
}

sgfp4_status sgfp4_model_check_decoded(const char *path, const char *shown,
                                       const sgfp4_model *src, sgfp4_diag *diag)
{
    sgfp4_model *back = NULL;
    sgfp4_status s = sgfp4_model_check_opens(path, shown, &back, SGFP4_ERR_INTERNAL, diag);
    if (s == SGFP4_OK && sgfp4_model_tensor_count(back) != sgfp4_model_tensor_count(src))
        s = sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1,
                       "%s: internal error: the restored model lacks tensors", shown);
    sgfp4_model_close(back);
    return s;
}
