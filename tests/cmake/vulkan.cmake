# Vulkan backend tests (issue 4): bit-identical to the scalar decoder on whatever Vulkan
# device is present (lavapipe in CI); exit 77 (skipped) where there is none.
# The random-container generator is shared with `sgfp4 bench --backend vulkan`.
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_vulkan_decode ${CMAKE_CURRENT_LIST_DIR}/../vulkan/test_vulkan_decode.c
                    ${PROJECT_SOURCE_DIR}/tools/sgfp4/random_container.c)
target_include_directories(test_vulkan_decode PRIVATE ${JANSSON_INCLUDE_DIR}
                           ${PROJECT_SOURCE_DIR}/tools/sgfp4)
set_tests_properties(test_vulkan_decode PROPERTIES TIMEOUT 600 LABELS vulkan)
