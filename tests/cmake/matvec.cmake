# Matrix-vector products (DECISIONS D8): the oracle against the test's own D8 and a float64
# product, every kernel set / thread count / row split against the oracle, on the random
# corpus, golden containers, encoder output and real tensors; and the golden matvec vectors
# (golden/matvec, written by tools/gen_golden.py) checked bit for bit.
# SPDX-License-Identifier: MIT
set(SGFP4_MATVEC_TEST_SUPPORT ${PROJECT_SOURCE_DIR}/tests/matvec/d8_reference.c
                              ${PROJECT_SOURCE_DIR}/tests/matvec/matvec_paths.c)

sgfp4_add_unit_test(test_matvec ${PROJECT_SOURCE_DIR}/tests/matvec/test_matvec.c
                    ${SGFP4_MATVEC_TEST_SUPPORT} ${PROJECT_SOURCE_DIR}/tests/support/generator.c)
target_include_directories(test_matvec PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_matvec PRIVATE ${JANSSON_LIBRARY})
if(SGFP4_SANITIZE)
  set_property(TEST test_matvec APPEND PROPERTY ENVIRONMENT "SGFP4_MATVEC_CORPUS=20")
endif()
set_tests_properties(test_matvec PROPERTIES LABELS matvec)
