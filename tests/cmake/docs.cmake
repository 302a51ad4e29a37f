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
# docs/api.md's "Output files" function is compiled into test_output_files (model.cmake).
