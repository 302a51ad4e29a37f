/* Whole-model checks: the D6 2-D view of a tensor, and verifying every container of a
 * quantized model with the D6 alignment it promises (docs/model.md).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/results.h"
#include "model/model_internal.h"

sgfp4_status sgfp4_model_tensor_matrix(const sgfp4_model_tensor *t, uint64_t *rows,
                                       uint64_t *cols)
{
    if (!t || !rows || !cols)
        return SGFP4_ERR_ARGUMENT;
    *rows = *cols = 0;
    if (t->elements == 0)
        return SGFP4_ERR_SHAPE;
    *cols = t->rank ? t->shape[t->rank - 1] : 1;
    *rows = t->elements / *cols;
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_verify(const sgfp4_model *m, sgfp4_model_verify_result *result,
                                sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (result && !SGFP4_RESULT_KNOWN(sgfp4_model_verify_result, result))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "result: struct_size %zu is no layout of sgfp4_model_verify_result "
                          "(initialise it with sgfp4_model_verify_result_init)",
                          result->struct_size);
    sgfp4_model_verify_result r;
    memset(&r, 0, sizeof r);
    if (result)
        sgfp4_result_clear(result);
    if (!m)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL model");
    r.tensors = sgfp4_model_tensor_count(m);
    r.d6_aligned = sgfp4_model_data_offset(m) % 64 == 0;
    for (size_t k = 0; k < r.tensors; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, k);
        if (!t->quant)
            continue;
        const sgfp4_status s = sgfp4_model_tensor_verify(m, t, diag);
        sgfp4_model_tensor_evict(m, t);
        if (s != SGFP4_OK)
            return s;
        if (t->quant->profile == SGFP4_PROFILE_V2) {
            r.quantized_v2++;
            r.d6_aligned = r.d6_aligned && t->offset % 16 == 0;
        } else {
            r.quantized_v1++;
        }
    }
    if (result)
        sgfp4_result_store(result, &r);
    return SGFP4_OK;
}
