# Encoder area: the benchmark driver for docs/benchmarks.md ("Encode speed", "Encode quality").
# Built with the tests, not run by CTest (it takes minutes on the real weights).
# SPDX-License-Identifier: MIT
add_executable(sgfp4-encode-bench ${PROJECT_SOURCE_DIR}/tools/encode_bench/encode_bench.c)
target_include_directories(sgfp4-encode-bench PRIVATE ${PROJECT_SOURCE_DIR}/tools/common)
target_link_libraries(sgfp4-encode-bench PRIVATE sgfp4_static)
