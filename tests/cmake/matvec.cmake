# Matrix-vector products (DECISIONS D8): the oracle against the test's own D8 and a float64
# product, every kernel set / thread count / row split against the oracle, on the random
# corpus, golden containers, encoder output and real tensors; and the golden matvec vectors
# (golden/matvec, written by tools/gen_golden.py) checked bit for bit.
# SPDX-License-Identifier: MIT
set(SGFP4_MATVEC_TEST_SUPPORT ${PROJECT_SOURCE_DIR}/tests/matvec/d8_reference.c
                              ${PROJECT_SOURCE_DIR}/tests/matvec/matvec_paths.c)

sgfp4_add_unit_test(test_matvec ${PROJECT_SOURCE_DIR}/tests/matvec/test_matvec.c
                    ${SGFP4_MATVEC_TEST_SUPPORT} ${PROJECT_SOURCE_DIR}/tools/datagen/generator.c
                    ${PROJECT_SOURCE_DIR}/tools/datagen/llm_weights.c)
target_include_directories(test_matvec PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_matvec PRIVATE ${JANSSON_LIBRARY})
if(SGFP4_SANITIZE)
  set_property(TEST matvec.matvec APPEND PROPERTY ENVIRONMENT "SGFP4_MATVEC_CORPUS=20")
endif()
set_tests_properties(matvec.matvec PROPERTIES LABELS matvec)

# The caller-owned thread pool: every item once, products on pools against the oracle.
sgfp4_add_unit_test(test_thread_pool ${PROJECT_SOURCE_DIR}/tests/matvec/test_thread_pool.c)
target_link_libraries(test_thread_pool PRIVATE sgfp4_datagen)
set_tests_properties(matvec.thread_pool PROPERTIES LABELS matvec)

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
  add_test(NAME matvec.golden.${matvec_golden_name}
           COMMAND test_matvec_golden ${PROJECT_SOURCE_DIR}/golden --only ${matvec_golden_name})
  set_tests_properties(matvec.golden.${matvec_golden_name} PROPERTIES LABELS "golden;matvec")
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
                                          ${PROJECT_SOURCE_DIR}/tools ${PROJECT_SOURCE_DIR}/tests/fuzz)
  target_link_libraries(${t} PRIVATE sgfp4_static)
endforeach()
add_test(NAME matvec.fuzz COMMAND fuzz_matvec_regress
         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/v1_decode
         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/v2_decode)
set_tests_properties(matvec.fuzz PROPERTIES LABELS "matvec;fuzz")

# Every matvec kernel set against the oracle with nothing but libc, pthreads and libm
# (tests/cross/cross_matvec_check.c): natively as `cross_matvec_check`, and cross-compiled
# for AArch64 and run under qemu-user as `cross.aarch64_matvec` (the NEON sets, with and
# without SDOT: qemu-user's default CPU has DotProd). The cross compiler, qemu and the
# AArch64 C library are found by tests/cmake/cross.cmake; without them the test skips (77).
set(matvec_cross_sources ${PROJECT_SOURCE_DIR}/tests/cross/cross_matvec_check.c
    ${PROJECT_SOURCE_DIR}/tests/matvec/matvec_paths.c ${PROJECT_SOURCE_DIR}/tools/datagen/generator.c
    ${PROJECT_SOURCE_DIR}/tools/datagen/llm_weights.c)
add_executable(cross_matvec_check ${matvec_cross_sources})
target_include_directories(cross_matvec_check PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests
                                                  ${PROJECT_SOURCE_DIR}/tools)
target_link_libraries(cross_matvec_check PRIVATE sgfp4_static)
add_test(NAME matvec.cross_check COMMAND cross_matvec_check)
set_tests_properties(matvec.cross_check PROPERTIES TIMEOUT 600 LABELS matvec)
# The AArch64 run only in the plain build, as the decode check's (tests/cmake/cross.cmake
# finds no cross tools for a sanitizer build): the cross-built binary has no sanitizers,
# so a sanitizer build would run the same check again, for minutes, for nothing.
if(NOT SGFP4_SANITIZE)
  if(cross_missing)
    add_test(NAME cross.aarch64_matvec
             COMMAND sh -c "echo \"cross.aarch64_matvec: SKIP: missing $0\"; exit 77"
                     "${cross_missing_text}")
  else()
    # The library core the products need (the encoder too, for the encoded containers),
    # compiled with the project's flags as for the decode check.
    file(GLOB matvec_cross_core CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/src/format/*.c ${PROJECT_SOURCE_DIR}/src/container/*.c
         ${PROJECT_SOURCE_DIR}/src/listing/*.c ${PROJECT_SOURCE_DIR}/src/decode/*.c
         ${PROJECT_SOURCE_DIR}/src/common/*.c
         ${PROJECT_SOURCE_DIR}/src/matvec/*.c ${PROJECT_SOURCE_DIR}/src/encode/*.c)
    file(GLOB matvec_cross_headers CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/include/*.h ${PROJECT_SOURCE_DIR}/src/*/*.h
         ${PROJECT_SOURCE_DIR}/tests/support/*.h ${PROJECT_SOURCE_DIR}/tools/datagen/*.h
         ${PROJECT_SOURCE_DIR}/tests/matvec/*.h)
    set(matvec_cross_binary ${CMAKE_CURRENT_BINARY_DIR}/cross_matvec_check.aarch64)
    add_custom_command(
      OUTPUT ${matvec_cross_binary}
      COMMAND ${SGFP4_AARCH64_CC} ${cross_flags} -I${PROJECT_SOURCE_DIR}/include
              -I${PROJECT_BINARY_DIR}/include -I${PROJECT_SOURCE_DIR}/src -I${PROJECT_SOURCE_DIR}/tests
              -I${PROJECT_SOURCE_DIR}/tools
              ${matvec_cross_core} ${matvec_cross_sources} -o ${matvec_cross_binary} -pthread -lm
      DEPENDS ${matvec_cross_core} ${matvec_cross_sources} ${matvec_cross_headers}
      COMMENT "Cross-compiling the matvec check for AArch64"
      VERBATIM)
    add_custom_target(cross_matvec_check_aarch64 ALL DEPENDS ${matvec_cross_binary})
    add_test(NAME cross.aarch64_matvec
             COMMAND ${SGFP4_QEMU_AARCH64} -L ${SGFP4_AARCH64_SYSROOT} ${matvec_cross_binary})
  endif()
  set_tests_properties(cross.aarch64_matvec PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
                       LABELS "matvec;cross")
endif()

# `sgfp4 matvec`: the golden vectors' expected bytes with every backend, a quantized model's
# tensor through --tensor, the error contract (tests/matvec/test_cli_matvec.py).
find_program(SGFP4_PYTHON3 python3)
if(SGFP4_PYTHON3)
  add_test(NAME cli.matvec
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/matvec/test_cli_matvec.py
                   $<TARGET_FILE:sgfp4> ${PROJECT_SOURCE_DIR}/golden
                   ${PROJECT_SOURCE_DIR}/../shared/weights ${CMAKE_CURRENT_BINARY_DIR}/cli-matvec)
  set_tests_properties(cli.matvec PROPERTIES LABELS "matvec;cli" TIMEOUT 600)
endif()

# `sgfp4 verify --golden` runs golden/matvec too: the whole set with the automatic and the
# portable kernel sets, 3 threads (the scalar reference runs in golden.all_scalar_backend).
foreach(backend auto generic)
  add_test(NAME golden.matvec_${backend}
           COMMAND sgfp4 verify -q --golden ${PROJECT_SOURCE_DIR}/golden --backend ${backend}
                   --threads 3)
  set_tests_properties(golden.matvec_${backend} PROPERTIES LABELS "golden;matvec")
endforeach()
