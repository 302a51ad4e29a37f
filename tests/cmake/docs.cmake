# Documentation code is compiled and run, so it cannot rot: the complete program at the end
# of docs/api.md is built against the static library and run.
sgfp4_add_doc_program(docs_api_example ${PROJECT_SOURCE_DIR}/docs/api.md)
