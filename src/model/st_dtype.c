/* safetensors dtype names and sizes.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "sgfp4_model.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[SGFP4_ST_DTYPE_COUNT] = {
    [SGFP4_ST_BOOL] = {"BOOL", 1},       [SGFP4_ST_U8] = {"U8", 1},
    [SGFP4_ST_I8] = {"I8", 1},           [SGFP4_ST_F8_E4M3] = {"F8_E4M3", 1},
    [SGFP4_ST_F8_E5M2] = {"F8_E5M2", 1}, [SGFP4_ST_I16] = {"I16", 2},
    [SGFP4_ST_U16] = {"U16", 2},         [SGFP4_ST_F16] = {"F16", 2},
    [SGFP4_ST_BF16] = {"BF16", 2},       [SGFP4_ST_I32] = {"I32", 4},
    [SGFP4_ST_U32] = {"U32", 4},         [SGFP4_ST_F32] = {"F32", 4},
    [SGFP4_ST_I64] = {"I64", 8},         [SGFP4_ST_U64] = {"U64", 8},
    [SGFP4_ST_F64] = {"F64", 8},
};

const char *sgfp4_st_dtype_name(sgfp4_st_dtype dtype)
{
    return (unsigned)dtype < SGFP4_ST_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

size_t sgfp4_st_dtype_size(sgfp4_st_dtype dtype)
{
    return (unsigned)dtype < SGFP4_ST_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

int sgfp4_st_dtype_parse(const char *name, sgfp4_st_dtype *dtype)
{
    for (unsigned k = 0; k < SGFP4_ST_DTYPE_COUNT; k++)
        if (strcmp(name, dtypes[k].name) == 0) {
            *dtype = (sgfp4_st_dtype)k;
            return 0;
        }
    return -1;
}
