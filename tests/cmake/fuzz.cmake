# Fuzz targets (tests/fuzz/*.c): each builds as a regression driver that CTest runs over its
# seed corpus and its past crashers with any compiler (under the sanitizers in the ASan
# build of scripts/test.sh), and, with -DSGFP4_FUZZ=ON and clang, as a libFuzzer binary.
# docs/security.md says how to run them.
# SPDX-License-Identifier: MIT
option(SGFP4_FUZZ "Build the libFuzzer targets too (clang only)" OFF)
set(SGFP4_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)

if(SGFP4_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SGFP4_FUZZ=ON needs clang (libFuzzer): configure with CC=clang")
  endif()
  if(NOT SGFP4_SANITIZE)
    # The coverage hooks of fuzzer-no-link code are provided by the sanitizer runtime in
    # executables that do not link libFuzzer (the CLI, the unit tests).
    message(FATAL_ERROR "SGFP4_FUZZ=ON wants -DSGFP4_SANITIZE=address,undefined too")
  endif()
  # Coverage feedback from the library itself (the core and the model component), not only
  # from the harnesses.
  foreach(_objects sgfp4_core_static_objects sgfp4_model_static_objects)
    if(TARGET ${_objects})
      target_compile_options(${_objects} PRIVATE -fsanitize=fuzzer-no-link)
    endif()
  endforeach()
  # Except in the encoder's numeric kernels (the leaf fits, block analysis, error metrics,
  # quantization, the rate-distortion pruning and its lambda search): their loops run over
  # one leaf's floats or one block's costs, so coverage counters and
  # comparison tracing guide nothing there (the values come out of arithmetic, not from the
  # input's bytes), and with UBSan's pointer-overflow, alignment and null checks they stop
  # the loops' vectorization, which costs the round-trip target most of its time. ASan and
  # UBSan's other checks stay on them here, and every check on them in the CI sanitizer
  # build, which replays the fuzz corpora. The rest of the encoder keeps edge coverage,
  # without comparison tracing.
  file(GLOB _encoder_sources ${PROJECT_SOURCE_DIR}/src/encode/*.c)
  foreach(_source ${_encoder_sources})
    if(_source MATCHES "/(fit_[^/]*|analyze|error_metric|quantize|policy_rate|rate_control)\\.c$")
      set(_flags -fno-sanitize=fuzzer-no-link -fno-sanitize=pointer-overflow,alignment,null)
    else()
      set(_flags -fno-sanitize-coverage=trace-cmp)
    endif()
    set_source_files_properties(${_source} DIRECTORY ${PROJECT_SOURCE_DIR}
                                PROPERTIES COMPILE_OPTIONS "${_flags}")
  endforeach()
endif()

# sgfp4_add_fuzz_target(NAME SOURCES...): regression driver fuzz_NAME_regress, CTest test
# fuzz.NAME over corpus/NAME and crashers/NAME, and libFuzzer binary fuzz_NAME if enabled.
function(sgfp4_add_fuzz_target name)
  set(dirs ${SGFP4_FUZZ_DIR}/corpus/${name})
  if(EXISTS ${SGFP4_FUZZ_DIR}/crashers/${name})
    list(APPEND dirs ${SGFP4_FUZZ_DIR}/crashers/${name})
  endif()
  add_executable(fuzz_${name}_regress ${SGFP4_FUZZ_DIR}/regression_driver.c ${ARGN})
  add_test(NAME fuzz.${name} COMMAND fuzz_${name}_regress ${dirs})
  set(targets fuzz_${name}_regress)
  if(SGFP4_FUZZ)
    add_executable(fuzz_${name} ${ARGN})
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    list(APPEND targets fuzz_${name})
  endif()
  foreach(t ${targets})
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests
                                            ${SGFP4_FUZZ_DIR})
    target_link_libraries(${t} PRIVATE sgfp4_static)
  endforeach()
endfunction()

sgfp4_add_fuzz_target(v1_decode ${SGFP4_FUZZ_DIR}/fuzz_v1_decode.c ${SGFP4_FUZZ_DIR}/fuzz_common.c)
sgfp4_add_fuzz_target(v2_decode ${SGFP4_FUZZ_DIR}/fuzz_v2_decode.c ${SGFP4_FUZZ_DIR}/fuzz_common.c)

# The CLI's own parsers, compiled from the tool's sources.
set(SGFP4_CLI_DIR ${PROJECT_SOURCE_DIR}/tools/sgfp4)
sgfp4_add_fuzz_target(cli_parse ${SGFP4_FUZZ_DIR}/fuzz_cli_parse.c
                      ${PROJECT_SOURCE_DIR}/tools/fileio/npy.c
                      ${PROJECT_SOURCE_DIR}/tools/fileio/output.c ${SGFP4_CLI_DIR}/cli_values.c)
foreach(t fuzz_cli_parse_regress fuzz_cli_parse)
  if(TARGET ${t})
    target_include_directories(${t} PRIVATE ${SGFP4_CLI_DIR} ${PROJECT_SOURCE_DIR}/tools/fileio)
  endif()
endforeach()
sgfp4_add_fuzz_target(roundtrip ${SGFP4_FUZZ_DIR}/fuzz_roundtrip.c)
# Whole models: safetensors reader, manifest, quantized tensors, restore (and the round trip
# as an oracle), policy parser; with the structure-aware safetensors mutator (st_mutate.c).
sgfp4_add_fuzz_target(model ${SGFP4_FUZZ_DIR}/fuzz_model.c ${SGFP4_FUZZ_DIR}/fuzz_common.c
                      ${SGFP4_FUZZ_DIR}/st_mutate.c)
if(SGFP4_FUZZ)
  target_sources(fuzz_model PRIVATE ${SGFP4_FUZZ_DIR}/fuzz_model_mutator.c)
  # the round trip's error bound compares floats: no comparison tracing there either
  set_source_files_properties(${SGFP4_FUZZ_DIR}/fuzz_roundtrip.c
                              PROPERTIES COMPILE_OPTIONS -fno-sanitize-coverage=trace-cmp)
endif()
# CI runs structured variants of every model seed too: the regression driver's --mutants
# (what the libFuzzer mutator would try first, deterministically).
add_test(NAME fuzz.model_mutants
         COMMAND fuzz_model_regress --mutants 24 ${SGFP4_FUZZ_DIR}/corpus/model)
# Sharded sets: the index over fixed shards the target writes into a temporary folder.
sgfp4_add_fuzz_target(model_index ${SGFP4_FUZZ_DIR}/fuzz_model_index.c ${SGFP4_FUZZ_DIR}/fuzz_common.c)
