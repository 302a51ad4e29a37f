# The public API as the shared libraries present it: each exports every function its headers
# declare (stable and experimental tier) and nothing else (docs/api.md, "Stability tiers"),
# and the core library needs no library of the model component (docs/api.md, "Libraries").
# SPDX-License-Identifier: MIT
if(TARGET sgfp4_shared)
  add_test(NAME api.exported_symbols
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/scripts/exported_symbols.sh
                   $<TARGET_FILE:sgfp4_shared> ${SGFP4_CORE_HEADERS})
  add_test(NAME api.core_dependencies
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/scripts/core_dependencies.sh
                   $<TARGET_FILE:sgfp4_shared>)
endif()
if(TARGET sgfp4_model_shared)
  add_test(NAME api.exported_symbols_model
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/scripts/exported_symbols.sh
                   $<TARGET_FILE:sgfp4_model_shared> ${SGFP4_MODEL_HEADERS})
endif()
if(TARGET sgfp4_shared AND TARGET sgfp4_model_shared)
  # the check can fail: the model library does need OpenSSL, jansson and zstd
  add_test(NAME api.core_dependencies_detects
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/scripts/core_dependencies.sh
                   $<TARGET_FILE:sgfp4_model_shared>)
  set_tests_properties(api.core_dependencies_detects PROPERTIES WILL_FAIL TRUE)
endif()

# The conventions every call shares, called the wrong way: NULLs, sizes, options of older
# callers, result structs of unknown sizes, status names.
sgfp4_add_unit_test(test_api_robustness ${CMAKE_CURRENT_LIST_DIR}/../api/test_api_robustness.c)
sgfp4_add_unit_test(test_options ${CMAKE_CURRENT_LIST_DIR}/../api/test_options.c)
sgfp4_add_unit_test(test_results ${CMAKE_CURRENT_LIST_DIR}/../api/test_results.c)
# It opens a Vulkan context where a device exists: the loader's and lavapipe's allocations
# kept until exit are not libsgfp4's.
set_property(TEST api.results APPEND PROPERTY ENVIRONMENT
             "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/vulkan/lsan.supp:print_suppressions=0")
sgfp4_add_unit_test(test_status ${CMAKE_CURRENT_LIST_DIR}/../api/test_status.c)
