/* A tensor prepared for products. In this version the plan holds no table: every kernel set
 * reads the validated container through the view, so the plan's memory is the object alone
 * (docs/matvec.md says why, and what a later table would be).
 * SPDX-License-Identifier: MIT */
#include "matvec/matvec_internal.h"

sgfp4_status sgfp4_matvec_plan_create(const sgfp4_tensor *tensor, sgfp4_matvec_plan **out)
{
    if (out)
        *out = NULL;
    if (!tensor || !out)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_matvec_plan *plan = sgfp4_alloc_with(&tensor->allocator, sizeof *plan);
    if (!plan)
        return SGFP4_ERR_NOMEM;
    plan->tensor = tensor;
    plan->bytes = sizeof *plan;
    *out = plan;
    return SGFP4_OK;
}

void sgfp4_matvec_plan_free(sgfp4_matvec_plan *plan)
{
    if (plan)
        sgfp4_free_with(&plan->tensor->allocator, plan);
}

size_t sgfp4_matvec_plan_bytes(const sgfp4_matvec_plan *plan)
{
    return plan ? plan->bytes : 0;
}
