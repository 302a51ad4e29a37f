# The model-level quality benchmark (docs/eval.md): sgfp4-eval (built with the tools,
# tools/eval), its quick checks on stories260K and stories3M, and the
# build-and-run commands of docs/eval.md.
# SPDX-License-Identifier: MIT

add_test(NAME eval.stories260K
         COMMAND ${PROJECT_SOURCE_DIR}/tests/eval/eval_check.sh $<TARGET_FILE:sgfp4-eval>
                 $<TARGET_FILE:sgfp4> ${SGFP4_SHARED_DIR}/weights
                 ${CMAKE_CURRENT_BINARY_DIR}/eval-work)
set_tests_properties(eval.stories260K PROPERTIES SKIP_RETURN_CODE 77 LABELS eval)
add_test(NAME eval.stories3M
         COMMAND ${PROJECT_SOURCE_DIR}/tests/eval/eval_stories3M.sh $<TARGET_FILE:sgfp4-eval>
                 ${SGFP4_SHARED_DIR}/weights ${CMAKE_CURRENT_BINARY_DIR}/eval-3M)
set_tests_properties(eval.stories3M PROPERTIES SKIP_RETURN_CODE 77 LABELS eval)
# docs/eval.md's build-and-run block as written (sanitizer builds: a shorter table).
if(SGFP4_SANITIZE)
  set(_eval_doc_quick quick)
else()
  set(_eval_doc_quick "")
endif()
add_test(NAME eval.doc_commands
         COMMAND ${PROJECT_SOURCE_DIR}/tests/eval/doc_commands.sh $<TARGET_FILE:sgfp4-eval>
                 ${PROJECT_SOURCE_DIR} ${SGFP4_SHARED_DIR}/weights
                 ${CMAKE_CURRENT_BINARY_DIR}/eval-doc ${_eval_doc_quick})
set_tests_properties(eval.doc_commands PROPERTIES SKIP_RETURN_CODE 77 LABELS eval TIMEOUT 900)
# The output rules for sgfp4-eval's outputs (--imatrix-out): never the model it reads, an
# existing file only with -f, refused before any work, FIFOs in place, links through, sets.
add_test(NAME eval.outputs
         COMMAND ${PROJECT_SOURCE_DIR}/tests/eval/eval_outputs.sh $<TARGET_FILE:sgfp4-eval>
                 ${SGFP4_SHARED_DIR}/weights ${CMAKE_CURRENT_BINARY_DIR}/eval-outputs)
set_tests_properties(eval.outputs PROPERTIES SKIP_RETURN_CODE 77 LABELS eval)
