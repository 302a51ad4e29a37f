# The CLI on real files (tests/cli/): outputs that never destroy a user's file (refusals,
# -f, devices and descriptors, links, long names, signals, leftovers), whole models and
# sharded sets through the CLI, the conventions (messages, --json, --tensor), the README's
# commands as written, the man page and the bash completion.
# SPDX-License-Identifier: MIT
find_program(SGFP4_BASH bash)
find_program(SGFP4_PYTHON3 python3)
if(NOT SGFP4_BASH OR NOT SGFP4_PYTHON3)
  message(STATUS "bash or python3 not found: CLI file tests disabled")
  return()
endif()
add_test(NAME cli.outputs
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_outputs.sh $<TARGET_FILE:sgfp4>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli-outputs ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.outputs PROPERTIES LABELS cli TIMEOUT 900)
add_test(NAME cli.conventions
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_conventions.sh
                 $<TARGET_FILE:sgfp4> ${CMAKE_CURRENT_BINARY_DIR}/cli-conventions ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.conventions PROPERTIES LABELS cli TIMEOUT 900)
