/* The defaults of the model options structs (docs/model.md).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/options.h"
#include "common/results.h"
#include "model/model_internal.h"

sgfp4_status sgfp4_model_open_options_init_sized(sgfp4_model_open_options *options,
                                                 size_t size)
{
    sgfp4_model_open_options defaults;
    memset(&defaults, 0, sizeof defaults); /* every default is 0 or NULL */
    return SGFP4_OPTIONS_INIT(sgfp4_model_open_options, options, size, &defaults);
}

sgfp4_status sgfp4_model_write_options_init_sized(sgfp4_model_write_options *options,
                                                  size_t size)
{
    sgfp4_model_write_options defaults;
    memset(&defaults, 0, sizeof defaults); /* every default is 0 or NULL */
    return SGFP4_OPTIONS_INIT(sgfp4_model_write_options, options, size, &defaults);
}

sgfp4_status sgfp4_model_write_options_read(const sgfp4_model_write_options *given,
                                            sgfp4_model_write_options *out, sgfp4_diag *diag)
{
    if (SGFP4_OPTIONS_READ(sgfp4_model_write_options, given, out) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_model_write_options_init)",
                          given->struct_size);
    if (out->summary && !SGFP4_RESULT_KNOWN(sgfp4_model_summary, out->summary))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options.summary: struct_size %zu is no layout of sgfp4_model_summary "
                          "(initialise it with sgfp4_model_summary_init)",
                          out->summary->struct_size);
    return SGFP4_OK;
}
