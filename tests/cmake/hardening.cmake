# Hardening tests: crash-safe CLI outputs under SIGKILL, hostile inputs through the CLI, and
# resource limits (tests/hardening/test_limits.c).
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_limits ${CMAKE_CURRENT_LIST_DIR}/../hardening/test_limits.c)

# Under the sanitizers (a Debug build) the commands are ~10x slower: fewer kills, a smaller
# encode input, so the suite stays within a few minutes.
if(SGFP4_SANITIZE)
  set(crash_safe_default 10)
  set(crash_safe_env "SGFP4_CRASH_ENCODE_SHAPE=128x512")
else()
  set(crash_safe_default 20)
  set(crash_safe_env "")
endif()
set(SGFP4_CRASH_SAFE_ITERATIONS ${crash_safe_default} CACHE STRING
    "Kills per command in the crash_safe_outputs test (the release check runs 100)")
add_test(NAME hardening.crash_safe_outputs
         COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/crash_safe_output.sh $<TARGET_FILE:sgfp4>
                 ${SGFP4_CRASH_SAFE_ITERATIONS})
set_tests_properties(hardening.crash_safe_outputs PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${crash_safe_env}")

# decode, verify and info over every hostile file kept (fuzz corpora and findings, model
# regression files, the shared reproducers) in 1 GB of address space: clean errors only.
# Under the sanitizers (no address-space limit there) every 8th run.
find_program(SGFP4_HOSTILE_PYTHON3 python3)
if(SGFP4_HOSTILE_PYTHON3)
  if(SGFP4_SANITIZE)
    set(hostile_args --sanitized --stride 8)
  else()
    set(hostile_args "")
  endif()
  add_test(NAME hardening.hostile_corpus
           COMMAND ${SGFP4_HOSTILE_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/hostile_corpus.py
                   $<TARGET_FILE:sgfp4> ${CMAKE_CURRENT_BINARY_DIR}/hostile-corpus
                   ${PROJECT_SOURCE_DIR} --shared ${SGFP4_SHARED_DIR} ${hostile_args})
  set_tests_properties(hardening.hostile_corpus PROPERTIES TIMEOUT 600)
endif()

# Benchmark (not a test): opening a header of n tensors against jansson alone
# (docs/benchmarks.md, "Safetensors headers").
add_executable(header_open_bench ${PROJECT_SOURCE_DIR}/tests/bench/header_open_bench.c)
target_include_directories(header_open_bench PRIVATE ${PROJECT_SOURCE_DIR}/tools/common)
target_link_libraries(header_open_bench PRIVATE sgfp4_static)
