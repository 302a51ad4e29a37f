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

# The golden matvec vectors: one named test per vector (public API only).
add_executable(test_matvec_golden ${PROJECT_SOURCE_DIR}/tests/matvec/test_matvec_golden.c)
target_include_directories(test_matvec_golden PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_matvec_golden PRIVATE sgfp4_static ${JANSSON_LIBRARY})
if(MATH_LIBRARY)
  target_link_libraries(test_matvec_golden PRIVATE ${MATH_LIBRARY})
endif()
set(SGFP4_MATVEC_GOLDEN ${PROJECT_SOURCE_DIR}/golden/matvec/manifest.json)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SGFP4_MATVEC_GOLDEN})
file(READ ${SGFP4_MATVEC_GOLDEN} matvec_golden_manifest)
string(JSON matvec_golden_count LENGTH "${matvec_golden_manifest}" vectors)
math(EXPR matvec_golden_last "${matvec_golden_count} - 1")
foreach(i RANGE ${matvec_golden_last})
  string(JSON matvec_golden_name GET "${matvec_golden_manifest}" vectors ${i} name)
  add_test(NAME matvec_golden.${matvec_golden_name}
           COMMAND test_matvec_golden ${PROJECT_SOURCE_DIR}/golden --only ${matvec_golden_name})
  set_tests_properties(matvec_golden.${matvec_golden_name} PROPERTIES LABELS "golden;matvec")
endforeach()

# The worked example of docs/matvec.md, compiled and run.
sgfp4_add_doc_program(docs_matvec_example ${PROJECT_SOURCE_DIR}/docs/matvec.md)
