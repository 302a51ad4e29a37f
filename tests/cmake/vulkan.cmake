# Vulkan backend tests: bit-identical to the scalar decoder on whatever Vulkan
# device is present (lavapipe in CI); exit 77 (skipped) where there is none.
# The random containers come from the test-data generator that `sgfp4 bench --backend
# vulkan` uses too (tools/datagen/generator.c).
# SPDX-License-Identifier: MIT
# The bf16 rounding of the decode's RTE pipeline, evaluated on the CPU (no device).
sgfp4_add_unit_test(test_shader_bf16_split ${CMAKE_CURRENT_LIST_DIR}/../vulkan/test_shader_bf16_split.c)
sgfp4_add_unit_test(test_vulkan_decode ${CMAKE_CURRENT_LIST_DIR}/../vulkan/test_vulkan_decode.c)
target_include_directories(test_vulkan_decode PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_vulkan_decode PRIVATE sgfp4_datagen)
set_tests_properties(vulkan.decode PROPERTIES TIMEOUT 600 LABELS vulkan)

# The matrix-vector products and the device quantizer against the CPU oracle (D8).
sgfp4_add_unit_test(test_vulkan_matvec ${CMAKE_CURRENT_LIST_DIR}/../vulkan/test_vulkan_matvec.c)
target_include_directories(test_vulkan_matvec PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_vulkan_matvec PRIVATE sgfp4_datagen ${JANSSON_LIBRARY})
if(TARGET sgfp4_vk_kit) # its plain read and stream (tools/bench/vulkan)
  target_link_libraries(test_vulkan_matvec PRIVATE sgfp4_vk_kit)
endif()
set_tests_properties(vulkan.matvec PROPERTIES TIMEOUT 900 LABELS vulkan)
set_property(TEST vulkan.matvec APPEND PROPERTY ENVIRONMENT
             "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../vulkan/lsan.supp:print_suppressions=0")

# The fast products (DECISIONS D9) within their stated bound of D8 and of a float64
# product, the same bits run to run and on every split, opt-in only.
sgfp4_add_unit_test(test_vulkan_fast ${CMAKE_CURRENT_LIST_DIR}/../vulkan/test_vulkan_fast.c)
target_link_libraries(test_vulkan_fast PRIVATE sgfp4_datagen)
set_tests_properties(vulkan.fast PROPERTIES TIMEOUT 900 LABELS vulkan)
set_property(TEST vulkan.fast APPEND PROPERTY ENVIRONMENT
             "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../vulkan/lsan.supp:print_suppressions=0")

# The complete program of docs/vulkan.md, extracted at configure time, built and run.
sgfp4_add_doc_program(docs_vulkan_example ${PROJECT_SOURCE_DIR}/docs/vulkan.md)
set_tests_properties(vulkan.docs_vulkan_example PROPERTIES SKIP_RETURN_CODE 77 LABELS vulkan)

# Under LeakSanitizer, ignore what the Vulkan loader and lavapipe keep until exit. The
# documentation program does not pin the driver's libraries as test_vulkan_decode does
# (which checks the library for leaks), so leak detection is off for it.
set_property(TEST vulkan.decode APPEND PROPERTY ENVIRONMENT
             "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../vulkan/lsan.supp:print_suppressions=0")
set_property(TEST vulkan.docs_vulkan_example APPEND PROPERTY ENVIRONMENT
             "LSAN_OPTIONS=detect_leaks=0")

# The CLI: decode --backend vulkan against --backend scalar, and info --devices.
add_test(NAME vulkan.cli COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../vulkan/cli_vulkan.sh
         $<TARGET_FILE:sgfp4> ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/cli_vulkan)
set_tests_properties(vulkan.cli PROPERTIES SKIP_RETURN_CODE 77 LABELS vulkan
                     ENVIRONMENT "LSAN_OPTIONS=detect_leaks=0")

# The GPU benchmark's operations at tiny sizes (code paths, not timings).
add_test(NAME vulkan.cli_bench COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../vulkan/cli_vulkan_bench.sh
         $<TARGET_FILE:sgfp4>)
set_tests_properties(vulkan.cli_bench PROPERTIES SKIP_RETURN_CODE 77 LABELS vulkan TIMEOUT 600
                     ENVIRONMENT "LSAN_OPTIONS=detect_leaks=0")

# The products' layout built on the CPU at upload against the generator's expected weights
# (host memory only: runs without a Vulkan device, but needs the backend built: it calls
# its internal layout builder, which the stub of a build without Vulkan lacks).
if(SGFP4_HAVE_VULKAN)
  sgfp4_add_unit_test(test_vulkan_layout ${CMAKE_CURRENT_LIST_DIR}/../vulkan/test_vulkan_layout.c)
  target_link_libraries(test_vulkan_layout PRIVATE sgfp4_datagen)
  set_tests_properties(vulkan.layout PROPERTIES LABELS vulkan)
endif()
