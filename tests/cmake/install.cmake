# The installed package works for a downstream project: find_package(sgfp4) with the shared
# and static targets, and pkg-config. Installs into the build tree. Not registered in
# sanitizer builds: the installed static library then needs the sanitizer runtimes, which a
# plain downstream build does not link (the packaging does not depend on the sanitizers).
if(NOT SGFP4_SANITIZE)
  add_test(NAME install_package
    COMMAND sh ${PROJECT_SOURCE_DIR}/tests/consumer/run.sh ${CMAKE_BINARY_DIR}
            ${CMAKE_BINARY_DIR}/install-test ${PROJECT_SOURCE_DIR}/tests/consumer ${CMAKE_COMMAND})
  set_tests_properties(install_package PROPERTIES RUN_SERIAL TRUE)
endif()
