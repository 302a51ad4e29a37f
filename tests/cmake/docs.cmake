# Documentation code is compiled and run, so it cannot rot: the complete program at the end
# of docs/api.md is built against the static library and run.
sgfp4_add_doc_program(docs_api_example ${PROJECT_SOURCE_DIR}/docs/api.md)
# The output rules are listed in docs/cli.md and docs/python.md in the same words.
find_program(SGFP4_PYTHON3 python3)
if(SGFP4_PYTHON3)
  add_test(NAME docs.output_rules
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/output_rules_docs.py
                   ${PROJECT_SOURCE_DIR})
endif()
# docs/api.md's "Output files" function is compiled into test_output_files, which calls it.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/api.md)
file(READ ${PROJECT_SOURCE_DIR}/docs/api.md _api_text)
string(FIND "${_api_text}" "## Output files" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "docs/api.md: no '## Output files' section")
endif()
string(SUBSTRING "${_api_text}" ${_at} -1 _api_text)
string(FIND "${_api_text}" "```c\n" _begin)
math(EXPR _begin "${_begin} + 5")
string(SUBSTRING "${_api_text}" ${_begin} -1 _api_text)
string(FIND "${_api_text}" "\n```" _end)
string(SUBSTRING "${_api_text}" 0 ${_end} _api_code)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/docs_api_output_files.h "${_api_code}\n")
target_include_directories(test_output_files PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
