# Hardening tests: crash-safe CLI outputs under SIGKILL, and resource limits
# (tests/unit/test_limits.c is picked up as a unit test on its own).
# SPDX-License-Identifier: MIT
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
add_test(NAME crash_safe_outputs
         COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/crash_safe_output.sh $<TARGET_FILE:sgfp4>
                 ${SGFP4_CRASH_SAFE_ITERATIONS})
set_tests_properties(crash_safe_outputs PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${crash_safe_env}")

# Benchmark (not a test): opening a header of n tensors against jansson alone
# (docs/benchmarks.md, "Safetensors headers").
add_executable(header_open_bench ${PROJECT_SOURCE_DIR}/tests/bench/header_open_bench.c)
target_link_libraries(header_open_bench PRIVATE sgfp4_static)
