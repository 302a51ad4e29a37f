# The man page sgfp4(1), generated at build time from docs/cli.md (the one source of the CLI's
# contract) with go-md2man (Debian package go-md2man, installed by scripts/install-deps.sh),
# and the bash completion script; both installed by `cmake --install`. Without go-md2man
# the page is not built (and its test is not registered).
# SPDX-License-Identifier: MIT
find_program(SGFP4_GO_MD2MAN go-md2man)
install(FILES ${PROJECT_SOURCE_DIR}/tools/completion/sgfp4
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
if(NOT SGFP4_GO_MD2MAN)
  message(STATUS "go-md2man not found: no man page (scripts/install-deps.sh installs it)")
  return()
endif()
set(SGFP4_MAN_PAGE ${PROJECT_BINARY_DIR}/man/sgfp4.1)
add_custom_command(
  OUTPUT ${SGFP4_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -DIN=${PROJECT_SOURCE_DIR}/docs/cli.md
          -DOUT=${PROJECT_BINARY_DIR}/man/sgfp4.1.md -DVERSION=${PROJECT_VERSION}
          -DDOCDIR=${CMAKE_INSTALL_FULL_DOCDIR} -P ${PROJECT_SOURCE_DIR}/cmake/ManSource.cmake
  COMMAND ${SGFP4_GO_MD2MAN} -in ${PROJECT_BINARY_DIR}/man/sgfp4.1.md -out ${SGFP4_MAN_PAGE}
  DEPENDS ${PROJECT_SOURCE_DIR}/docs/cli.md ${PROJECT_SOURCE_DIR}/cmake/ManSource.cmake
  COMMENT "Generating the man page sgfp4.1 from docs/cli.md"
  VERBATIM)
add_custom_target(sgfp4_man ALL DEPENDS ${SGFP4_MAN_PAGE})
install(FILES ${SGFP4_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
