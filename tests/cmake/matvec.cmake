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

# A fuzz target for the products, replayed over the v1 and v2 decode corpora (the decode
# fuzzers' inputs are containers with the same 4-byte prefix); with -DSGFP4_FUZZ=ON and
# clang also a libFuzzer binary (docs/security.md).
set(SGFP4_MATVEC_FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/tests/matvec/fuzz_matvec.c
    ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_common.c ${SGFP4_MATVEC_TEST_SUPPORT})
add_executable(fuzz_matvec_regress ${PROJECT_SOURCE_DIR}/tests/fuzz/regression_driver.c
               ${SGFP4_MATVEC_FUZZ_SOURCES})
set(matvec_fuzz_targets fuzz_matvec_regress)
if(SGFP4_FUZZ)
  add_executable(fuzz_matvec ${SGFP4_MATVEC_FUZZ_SOURCES})
  target_compile_options(fuzz_matvec PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_matvec PRIVATE -fsanitize=fuzzer)
  list(APPEND matvec_fuzz_targets fuzz_matvec)
endif()
foreach(t ${matvec_fuzz_targets})
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests
                                          ${PROJECT_SOURCE_DIR}/tests/fuzz)
  target_link_libraries(${t} PRIVATE sgfp4_static)
endforeach()
add_test(NAME fuzz_matvec COMMAND fuzz_matvec_regress
         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/v1_decode
         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/v2_decode)
set_tests_properties(fuzz_matvec PROPERTIES LABELS matvec)
