/* Filling a caller's sgfp4_diag (diag.h).
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "common/diag.h"

sgfp4_status sgfp4_fail(sgfp4_diag *diag, sgfp4_status status, int64_t offset, int64_t block,
                        int32_t leaf, const char *format, ...)
{
    if (diag) {
        diag->status = status;
        diag->offset = offset;
        diag->block = block;
        diag->leaf = leaf;
        diag->row = diag->col = -1;
        va_list args;
        va_start(args, format);
        vsnprintf(diag->message, sizeof diag->message, format, args);
        va_end(args);
    }
    return status;
}

sgfp4_status sgfp4_fail_at_element(sgfp4_diag *diag, sgfp4_status status, uint64_t row,
                                   uint64_t col)
{
    if (diag) {
        diag->row = (int64_t)row;
        diag->col = (int64_t)col;
    }
    return status;
}

void sgfp4_diag_clear(sgfp4_diag *diag)
{
    if (diag) {
        diag->status = SGFP4_OK;
        diag->offset = diag->block = -1;
        diag->leaf = -1;
        diag->row = diag->col = -1;
        diag->message[0] = '\0';
    }
}
