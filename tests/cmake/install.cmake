# The installed package works for a downstream project (tests/consumer/run.sh): find_package
# with the core and model targets, pkg-config for shared and static links, one version.
# Installs into the build tree. Not registered in sanitizer builds: the installed static
# libraries then need the sanitizer runtimes, which a plain downstream build does not link
# (the packaging does not depend on the sanitizers).
# SPDX-License-Identifier: MIT
if(NOT SGFP4_SANITIZE AND SGFP4_SHARED AND SGFP4_STATIC)
  add_test(NAME install.package
    COMMAND sh ${PROJECT_SOURCE_DIR}/tests/consumer/run.sh ${CMAKE_BINARY_DIR}
            ${CMAKE_BINARY_DIR}/install-test ${PROJECT_SOURCE_DIR}/tests/consumer ${CMAKE_COMMAND}
            ${PROJECT_VERSION} ${SGFP4_SOVERSION})
  set_tests_properties(install.package PROPERTIES RUN_SERIAL TRUE)
endif()

# The smallest build, the core alone (tests/consumer/minimal.sh): configured and built on its
# own (about half a minute on two cores), once, in the plain build.
if(NOT SGFP4_SANITIZE)
  add_test(NAME install.build_minimal
    COMMAND sh ${PROJECT_SOURCE_DIR}/tests/consumer/minimal.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_BINARY_DIR}/minimal-build ${CMAKE_COMMAND} ${PROJECT_SOURCE_DIR}/tests/consumer)
  set_tests_properties(install.build_minimal PROPERTIES TIMEOUT 600)
endif()
