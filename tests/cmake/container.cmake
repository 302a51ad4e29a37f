# Container acceptance: the fast path of v2 open against the full record check, record by
# record, on generated and encoded containers and on corrupted copies of them.
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_open_screen ${PROJECT_SOURCE_DIR}/tests/container/test_open_screen.c)
target_link_libraries(test_open_screen PRIVATE sgfp4_testdata)
