/* Status descriptions and names, generated from the one list in sgfp4.h.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "sgfp4.h"

const char *sgfp4_status_str(sgfp4_status status)
{
    switch (status) {
#define SGFP4_STATUS_TEXT_(name, value, text) case SGFP4_##name: return text;
        SGFP4_STATUS_LIST(SGFP4_STATUS_TEXT_)
#undef SGFP4_STATUS_TEXT_
    }
    return "unknown status";
}

/* The identifier without "SGFP4_": "OK", "ERR_V2_LAYOUT", ... */
static const char *status_identifier(sgfp4_status status)
{
    switch (status) {
#define SGFP4_STATUS_NAME_(id, value, text) case SGFP4_##id: return #id;
        SGFP4_STATUS_LIST(SGFP4_STATUS_NAME_)
#undef SGFP4_STATUS_NAME_
    }
    return "UNKNOWN";
}

/* The identifier without "SGFP4_" and without "ERR_": "OK", "V2_LAYOUT", ... */
const char *sgfp4_status_name(sgfp4_status status)
{
    const char *name = status_identifier(status);
    return strncmp(name, "ERR_", 4) == 0 ? name + 4 : name;
}

unsigned sgfp4_version(void) { return SGFP4_VERSION_NUMBER; }

const char *sgfp4_version_string(void) { return SGFP4_VERSION_STRING; }

size_t sgfp4_dtype_size(sgfp4_dtype dtype)
{
    switch (dtype) {
    case SGFP4_DTYPE_F32: return 4;
    case SGFP4_DTYPE_F16: return 2;
    case SGFP4_DTYPE_BF16: return 2;
    }
    return 0;
}
