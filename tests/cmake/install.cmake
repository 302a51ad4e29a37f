# The installed package works for a downstream project: find_package(sgfp4) with the shared
# and static targets, and pkg-config. Installs into the build tree.
add_test(NAME install_package
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/consumer/run.sh ${CMAKE_BINARY_DIR}
          ${CMAKE_BINARY_DIR}/install-test ${PROJECT_SOURCE_DIR}/tests/consumer ${CMAKE_COMMAND})
set_tests_properties(install_package PROPERTIES RUN_SERIAL TRUE)
