# The CLI on real files (tests/cli/): outputs that never destroy a user's file (refusals,
# -f, devices and descriptors, links, long names, signals, leftovers), whole models and
# sharded sets through the CLI, the encoder's objective options (--fit, --metric,
# --importance, the low-rate warning), the conventions (messages, --json, --tensor), the
# README's commands as written, the man page and the bash completion, the limits on model
# inputs, the .npy reader, golden sets as JSON and models on streams; and `sgfp4 encode` end
# to end from C (tests/cli/test_encode_cli.c).
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_encode_cli ${CMAKE_CURRENT_LIST_DIR}/../cli/test_encode_cli.c)
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
add_test(NAME cli.encode_options
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_encode_options.sh
                 $<TARGET_FILE:sgfp4> ${CMAKE_CURRENT_BINARY_DIR}/cli-encode-options)
set_tests_properties(cli.encode_options PROPERTIES LABELS cli TIMEOUT 300)
if(SGFP4_SANITIZE)
  set(_cli_sanitized 1)
else()
  set(_cli_sanitized 0)
endif()
add_test(NAME cli.limits
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_limits.sh $<TARGET_FILE:sgfp4>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli-limits ${PROJECT_SOURCE_DIR} ${_cli_sanitized})
set_tests_properties(cli.limits PROPERTIES LABELS cli TIMEOUT 300)
add_test(NAME cli.npy
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_npy.sh $<TARGET_FILE:sgfp4>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli-npy ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.npy PROPERTIES LABELS cli)
add_test(NAME cli.inputs
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_inputs.sh $<TARGET_FILE:sgfp4>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli-inputs ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.inputs PROPERTIES LABELS cli)
add_test(NAME cli.readme_commands
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/readme_commands.sh
                 $<TARGET_FILE:sgfp4> ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/cli-readme)
set_tests_properties(cli.readme_commands PROPERTIES LABELS cli TIMEOUT 900)
if(SGFP4_MAN_PAGE)
  add_test(NAME cli.man_completion
           COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/man_completion.sh
                   $<TARGET_FILE:sgfp4> ${SGFP4_MAN_PAGE} ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/cli-man ${CMAKE_COMMAND})
  set_tests_properties(cli.man_completion PROPERTIES LABELS cli)
endif()

# An input truncated while the tool reads it (the mapped file's SIGBUS): one line naming the
# file, exit 1, no temporary file left. The preloaded truncate_on_temp library places the
# truncation between the open and the first read; it is built without the sanitizers (it
# runs inside the tool, before its own runtime could matter).
add_library(sgfp4_truncate_on_temp MODULE ${CMAKE_CURRENT_SOURCE_DIR}/cli/truncate_on_temp.c)
set_property(TARGET sgfp4_truncate_on_temp PROPERTY SGFP4_NO_BUILD_FLAGS ON)
set_property(TARGET sgfp4_truncate_on_temp PROPERTY C_VISIBILITY_PRESET default)
target_link_libraries(sgfp4_truncate_on_temp PRIVATE ${CMAKE_DL_LIBS})
add_test(NAME cli.mapped_input
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/mapped_input.sh $<TARGET_FILE:sgfp4>
                 $<TARGET_FILE:sgfp4_truncate_on_temp> ${CMAKE_CURRENT_BINARY_DIR}/cli-mapped-input)
set_tests_properties(cli.mapped_input PROPERTIES LABELS cli)
add_test(NAME cli.build_commands
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/build_commands.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.build_commands PROPERTIES LABELS cli)
add_test(NAME cli.reports
         COMMAND ${SGFP4_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_reports.sh $<TARGET_FILE:sgfp4>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli-reports)
set_tests_properties(cli.reports PROPERTIES LABELS cli TIMEOUT 300)
