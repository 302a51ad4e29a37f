# The format layer against the spec's own words: code unpacking, leaf geometry and the exact
# half / bf16 conversions (tests/format/).
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_format ${CMAKE_CURRENT_LIST_DIR}/../format/test_format.c)
sgfp4_add_unit_test(test_half ${CMAKE_CURRENT_LIST_DIR}/../format/test_half.c)
