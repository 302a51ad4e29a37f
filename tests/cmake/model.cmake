# Whole models: the library's model calls (tests/model/test_model_*.c: the reader, writer and
# policy, round trips, dtypes, limits, sets, zstd bounds, importance and rates, the output
# files); the CLI round trips of the real models in shared/weights, checked by an independent
# Python reader (tests/model/st_check.py), malformed files, and bounded memory on a large
# synthetic model (SGFP4_TEST_LARGE=1 in the environment runs the 4 GB case).
# SPDX-License-Identifier: MIT

foreach(t test_model_calibrated test_model_decode_bounds test_model_dtypes
          test_model_header_memory test_model_importance test_model_limits test_model_rates
          test_model_reader test_model_roundtrip test_model_set test_model_zstd_bounds
          test_output_files)
  sgfp4_add_unit_test(${t} ${CMAKE_CURRENT_LIST_DIR}/../model/${t}.c)
endforeach()
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

# A model file rewritten or truncated while it is open: views keep their places (mapped),
# the copy option reads the file no more.
sgfp4_add_unit_test(test_model_mapped_input ${PROJECT_SOURCE_DIR}/tests/model/test_model_mapped_input.c)

find_program(SGFP4_PYTHON3 python3)
if(NOT SGFP4_PYTHON3)
  message(STATUS "python3 not found: whole-model CLI tests disabled")
  return()
endif()
set(_m ${CMAKE_CURRENT_SOURCE_DIR}/model)
set(_w ${SGFP4_SHARED_DIR}/weights)
set(_work ${CMAKE_CURRENT_BINARY_DIR}/model-work)

add_test(NAME model.roundtrip.stories260K
         COMMAND ${_m}/roundtrip.sh $<TARGET_FILE:sgfp4> ${_w}/stories260K/stories260K.safetensors
                 ${_work}/stories260K --zst)
# The two larger models: every default decision in a plain build; under the sanitizers (ten
# times slower) a policy that quantizes fewer matrices, still mixing v1, v2 and pass-through.
# (A rule without "action" keeps the default decision: these matrices are quantized.)
if(SGFP4_SANITIZE)
  set(_gpt2_policy ${_m}/gpt2_sanitized_policy.json)
  set(_neo_args -- --policy ${_m}/gptneo_sanitized_policy.json)
else()
  set(_gpt2_policy ${_m}/gpt2_mixed_policy.json)
  set(_neo_args)
endif()
add_test(NAME model.roundtrip.gpt2-mixed-policy
         COMMAND ${_m}/roundtrip.sh $<TARGET_FILE:sgfp4>
                 ${_w}/gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors ${_work}/gpt2
                 -- --policy ${_gpt2_policy})
add_test(NAME model.roundtrip.gpt-neo
         COMMAND ${_m}/roundtrip.sh $<TARGET_FILE:sgfp4>
                 ${_w}/gpt-neo-125m-attn/gpt-neo-125m-attn-L0-L11.safetensors ${_work}/gptneo
                 ${_neo_args})
add_test(NAME model.malformed
         COMMAND ${_m}/malformed_cli.sh $<TARGET_FILE:sgfp4> ${_work}/malformed
                 ${_w}/stories260K/stories260K.safetensors)
# Hugging Face's own safetensors reader, where its Python module is installed (else skipped).
add_test(NAME model.hf_safetensors_reader
         COMMAND ${SGFP4_PYTHON3} ${_m}/hf_check.py $<TARGET_FILE:sgfp4> ${_work}/hf
                 ${_w}/stories260K/stories260K.safetensors)
add_test(NAME model.odd_tensors
         COMMAND ${_m}/odd_tensors.sh $<TARGET_FILE:sgfp4> ${_work}/odd)
set_tests_properties(model.roundtrip.stories260K model.roundtrip.gpt2-mixed-policy
                     model.roundtrip.gpt-neo model.malformed model.odd_tensors
                     model.hf_safetensors_reader
                     PROPERTIES SKIP_RETURN_CODE 77 LABELS model)
# Peak RSS is meaningless under ASan (shadow memory): only in plain builds.
if(NOT SGFP4_SANITIZE)
  add_test(NAME model.bounded_rss
           COMMAND ${SGFP4_PYTHON3} ${_m}/large_rss.py $<TARGET_FILE:sgfp4> ${_work}/rss)
  set_tests_properties(model.bounded_rss PROPERTIES LABELS model TIMEOUT 3600)
endif()

# Sharded sets: a real model split into shards with an index at test time (make_set.py, with
# FP8 matrices and tensors of every other dtype), through the library's set API (set_driver)
# and the independent checker. The larger model in plain builds only.
add_executable(model_set_driver ${_m}/set_driver.c)
target_link_libraries(model_set_driver PRIVATE sgfp4_static)
add_test(NAME model.set_roundtrip.stories260K
         COMMAND ${_m}/set_roundtrip.sh $<TARGET_FILE:model_set_driver>
                 ${_w}/stories260K/stories260K.safetensors ${_work}/set-stories260K 3)
set_tests_properties(model.set_roundtrip.stories260K PROPERTIES SKIP_RETURN_CODE 77 LABELS model)
if(NOT SGFP4_SANITIZE)
  add_test(NAME model.set_roundtrip.gpt2
           COMMAND ${_m}/set_roundtrip.sh $<TARGET_FILE:model_set_driver>
                   ${_w}/gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors ${_work}/set-gpt2 2)
  set_tests_properties(model.set_roundtrip.gpt2 PROPERTIES SKIP_RETURN_CODE 77 LABELS model)
endif()

# The same through the CLI (sgfp4 encode -> verify -> decode, sets and one file, info and
# --tensor over a set).
add_test(NAME model.set_cli.stories260K
         COMMAND ${_m}/set_cli.sh $<TARGET_FILE:sgfp4> ${_w}/stories260K/stories260K.safetensors
                 ${_work}/set-cli-stories260K 3)
set_tests_properties(model.set_cli.stories260K PROPERTIES SKIP_RETURN_CODE 77 LABELS model)
if(NOT SGFP4_SANITIZE)
  add_test(NAME model.set_cli.gpt2
           COMMAND ${_m}/set_cli.sh $<TARGET_FILE:sgfp4>
                   ${_w}/gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors ${_work}/set-cli-gpt2 2)
  set_tests_properties(model.set_cli.gpt2 PROPERTIES SKIP_RETURN_CODE 77 LABELS model)
endif()
