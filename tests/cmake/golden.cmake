# Golden vectors (golden/manifest.json, written by tools/gen_golden.py): one named CTest per
# vector, `sgfp4 verify --golden golden --only NAME`, plus the whole set through the scalar
# reference backend, plus a check that the generator reproduces golden/ byte for byte.
# SPDX-License-Identifier: MIT
set(SGFP4_GOLDEN_DIR ${PROJECT_SOURCE_DIR}/golden)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SGFP4_GOLDEN_DIR}/manifest.json)
file(READ ${SGFP4_GOLDEN_DIR}/manifest.json golden_manifest)
string(JSON golden_count LENGTH "${golden_manifest}" vectors)
math(EXPR golden_last "${golden_count} - 1")
foreach(i RANGE ${golden_last})
  string(JSON golden_name GET "${golden_manifest}" vectors ${i} name)
  add_test(NAME golden.${golden_name}
           COMMAND sgfp4 verify --golden ${SGFP4_GOLDEN_DIR} --only ${golden_name})
  set_tests_properties(golden.${golden_name} PROPERTIES LABELS golden)
endforeach()

add_test(NAME golden.all_scalar_backend
         COMMAND sgfp4 verify -q --golden ${SGFP4_GOLDEN_DIR} --backend scalar)
set_tests_properties(golden.all_scalar_backend PROPERTIES LABELS golden)

find_program(SGFP4_PYTHON3 python3)
if(SGFP4_PYTHON3)
  add_test(NAME golden.generator_reproduces
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/golden/check_regen.sh ${PROJECT_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/golden-regen)
  set_tests_properties(golden.generator_reproduces PROPERTIES LABELS golden)
endif()
