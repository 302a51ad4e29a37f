# Fast CPU decode: every kernel set, thread count, row range, stride and gather
# compared bit for bit with the scalar oracle.
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_decode_fast ${PROJECT_SOURCE_DIR}/tests/decode/test_decode_fast.c
                    ${PROJECT_SOURCE_DIR}/tests/support/decode_paths.c)
target_include_directories(test_decode_fast PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_decode_fast PRIVATE sgfp4_datagen)

# The caller's floating-point modes (flush-to-zero, rounding) change no decoded bit and no
# encoded byte.
sgfp4_add_unit_test(test_fp_environment ${PROJECT_SOURCE_DIR}/tests/decode/test_fp_environment.c)
target_link_libraries(test_fp_environment PRIVATE sgfp4_datagen)
