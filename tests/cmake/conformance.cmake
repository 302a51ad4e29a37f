# Conformance tests beyond the golden set: MNN's fixtures (tests/conformance/test_mnn.c parses
# their manifest with jansson), the random differential corpus
# (tests/conformance/decodecorpus.c) and the CLI tests (tests/cli/test_cli.sh).
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_mnn ${CMAKE_CURRENT_LIST_DIR}/../conformance/test_mnn.c)
target_include_directories(test_mnn PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_mnn PRIVATE ${JANSSON_LIBRARY} OpenSSL::Crypto)

# The random differential corpus. It includes only the public headers: its container writer
# (tools/datagen/generator.c, the one test-data generator) must stay independent of src/.
add_executable(decodecorpus ${CMAKE_CURRENT_SOURCE_DIR}/conformance/decodecorpus.c)
target_include_directories(decodecorpus PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(decodecorpus PRIVATE sgfp4_datagen sgfp4_static)
# A few seconds in a normal build; fewer containers under the sanitizers. Run it long by
# hand: build/tests/decodecorpus --seed $RANDOM --count 1000000
if(SGFP4_SANITIZE)
  set(SGFP4_CORPUS_COUNT 600)
  set(SGFP4_CORPUS_COUNT2 150)
  set(SGFP4_CLI_CORPUS_COUNT 60)
else()
  set(SGFP4_CORPUS_COUNT 3000)
  set(SGFP4_CORPUS_COUNT2 500)
  set(SGFP4_CLI_CORPUS_COUNT 150)
endif()
add_test(NAME conformance.decodecorpus COMMAND decodecorpus --seed 1 --count ${SGFP4_CORPUS_COUNT})
add_test(NAME conformance.decodecorpus_seed2
         COMMAND decodecorpus --seed 20261129 --count ${SGFP4_CORPUS_COUNT2})
set_tests_properties(conformance.decodecorpus conformance.decodecorpus_seed2 PROPERTIES LABELS conformance)

# CLI contract tests, including a few hundred random valid / malformed containers that
# decodecorpus writes to files.
find_program(SGFP4_BASH bash)
find_program(SGFP4_PYTHON3 python3)
if(SGFP4_BASH AND SGFP4_PYTHON3)
  add_test(NAME conformance.cli COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.sh
                            $<TARGET_FILE:sgfp4> $<TARGET_FILE:decodecorpus>
                            ${PROJECT_SOURCE_DIR}/golden ${CMAKE_CURRENT_BINARY_DIR}/cli-scratch
                            ${SGFP4_CLI_CORPUS_COUNT})
  set_tests_properties(conformance.cli PROPERTIES LABELS conformance)
endif()
