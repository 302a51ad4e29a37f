# Container acceptance: the fast path of v2 open against the full record check, record by
# record, on generated and encoded containers and on corrupted copies of them.
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_open_screen ${PROJECT_SOURCE_DIR}/tests/container/test_open_screen.c)
target_link_libraries(test_open_screen PRIVATE sgfp4_datagen)

# Container bytes that change after the open (a file rewritten under its mapping): no read
# moves, every output stays the same; the copy option survives the file's truncation.
sgfp4_add_unit_test(test_mapped_input ${PROJECT_SOURCE_DIR}/tests/container/test_mapped_input.c)
target_link_libraries(test_mapped_input PRIVATE sgfp4_datagen)
set_property(TEST container.mapped_input APPEND PROPERTY ENVIRONMENT
             "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/vulkan/lsan.supp:print_suppressions=0")
