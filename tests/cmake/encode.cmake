# Encoder area: round trips, the pieces, the error metrics, edge padding, the calibrated
# encode and the cancel hooks (tests/encode/); and the benchmark driver for
# docs/benchmarks.md ("Encode speed", "Encode quality"), built with the tests, not run by
# CTest (it takes minutes on the real weights).
# SPDX-License-Identifier: MIT
foreach(t test_encode test_encode_calibrated test_encode_cancel test_encode_metric
          test_encode_padding test_encode_parts)
  sgfp4_add_unit_test(${t} ${CMAKE_CURRENT_LIST_DIR}/../encode/${t}.c)
endforeach()

add_executable(sgfp4-encode-bench ${PROJECT_SOURCE_DIR}/tools/encode_bench/encode_bench.c)
target_include_directories(sgfp4-encode-bench PRIVATE ${PROJECT_SOURCE_DIR}/tools/common)
target_link_libraries(sgfp4-encode-bench PRIVATE sgfp4_static)
