# Encoder area: round trips, the pieces, the error metrics, edge padding, the calibrated
# encode and the cancel hooks (tests/encode/) (the benchmark driver for
# docs/benchmarks.md, sgfp4-encode-bench, is built with the tools).
# SPDX-License-Identifier: MIT
foreach(t test_encode test_encode_calibrated test_encode_cancel test_encode_metric
          test_encode_padding test_encode_parts)
  sgfp4_add_unit_test(${t} ${CMAKE_CURRENT_LIST_DIR}/../encode/${t}.c)
endforeach()
