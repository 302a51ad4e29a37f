/* The defaults of the model options structs (docs/model.md).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "sgfp4_model.h"

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
