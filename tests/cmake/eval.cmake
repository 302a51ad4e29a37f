# The model-level quality benchmark (docs/eval.md): sgfp4-eval, a llama2.c-architecture
# forward pass on the library, and its quick checks on stories260K.
# SPDX-License-Identifier: MIT
file(GLOB SGFP4_EVAL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/eval/*.c)
add_executable(sgfp4-eval ${SGFP4_EVAL_SOURCES})
target_include_directories(sgfp4-eval PRIVATE ${PROJECT_SOURCE_DIR}/tools/eval ${JANSSON_INCLUDE_DIR})
target_link_libraries(sgfp4-eval PRIVATE sgfp4_static ${JANSSON_LIBRARY} Threads::Threads)
if(MATH_LIBRARY)
  target_link_libraries(sgfp4-eval PRIVATE ${MATH_LIBRARY})
endif()

add_test(NAME eval.stories260K
         COMMAND ${PROJECT_SOURCE_DIR}/tests/eval/eval_check.sh $<TARGET_FILE:sgfp4-eval>
                 $<TARGET_FILE:sgfp4> ${SGFP4_SHARED_DIR}/weights
                 ${CMAKE_CURRENT_BINARY_DIR}/eval-work)
set_tests_properties(eval.stories260K PROPERTIES SKIP_RETURN_CODE 77 LABELS eval)
