/* The defaults of the model options structs (docs/model.md).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/options.h"
#include "model/model_internal.h"

void sgfp4_model_open_options_init(sgfp4_model_open_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
}

void sgfp4_model_write_options_init(sgfp4_model_write_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
}

sgfp4_status sgfp4_model_write_options_read(const sgfp4_model_write_options *given,
                                            sgfp4_model_write_options *out, sgfp4_diag *diag)
{
    if (SGFP4_OPTIONS_READ(sgfp4_model_write_options, given, out) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_model_write_options_init)",
                          given->struct_size);
    return SGFP4_OK;
}
