/* Status names and descriptions: the contract of sgfp4_status_name() (no "ERR_" prefix, as
 * include/sgfp4.h documents and golden/manifest.json relies on).
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"

static void names_have_no_prefix(void **state)
{
    (void)state;
    assert_string_equal(sgfp4_status_name(SGFP4_OK), "OK");
    assert_string_equal(sgfp4_status_name(SGFP4_ERR_V2_LAYOUT), "V2_LAYOUT");
    assert_string_equal(sgfp4_status_name(SGFP4_ERR_SHAPE), "SHAPE");
    assert_string_equal(sgfp4_status_name(SGFP4_ERR_TRUNCATED), "TRUNCATED");
    assert_string_equal(sgfp4_status_name((sgfp4_status)9999), "UNKNOWN");
}

static void every_listed_status_has_its_name(void **state)
{
    (void)state;
#define CHECK_(name, value, text)                                                             \
    do {                                                                                      \
        const char *full = #name;                                                             \
        const char *want = strncmp(full, "ERR_", 4) == 0 ? full + 4 : full;                   \
        assert_string_equal(sgfp4_status_name((sgfp4_status)(value)), want);                  \
        assert_string_equal(sgfp4_status_str((sgfp4_status)(value)), text);                   \
    } while (0);
    SGFP4_STATUS_LIST(CHECK_)
#undef CHECK_
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_have_no_prefix),
        cmocka_unit_test(every_listed_status_has_its_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
