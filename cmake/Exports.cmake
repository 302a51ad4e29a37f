# What libsgfp4.so exports: exactly the functions the public headers declare with SGFP4_API
# (include/*.h: the stable and the experimental tier), nothing else. -fvisibility=hidden
# already hides internal functions, but GCC exports the dispatchers of target_clones
# functions whatever their visibility; a linker version script generated from the headers
# makes everything else local. tests/scripts/exported_symbols.sh checks the result.
# Included by the top CMakeLists.txt after the sgfp4_shared target exists.
# SPDX-License-Identifier: MIT

file(GLOB _sgfp4_api_headers ${PROJECT_SOURCE_DIR}/include/*.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_sgfp4_api_headers})
set(_sgfp4_exports "")
foreach(header ${_sgfp4_api_headers})
  # Every declaration starts a line with SGFP4_API and names the function before its '('.
  file(STRINGS ${header} _lines REGEX "^SGFP4_API ")
  foreach(line ${_lines})
    if(NOT line MATCHES "([a-z][a-z0-9_]*)\\(")
      message(FATAL_ERROR "${header}: cannot find the function name in: ${line}")
    endif()
    string(APPEND _sgfp4_exports "    ${CMAKE_MATCH_1};\n")
  endforeach()
endforeach()
set(SGFP4_VERSION_SCRIPT ${PROJECT_BINARY_DIR}/sgfp4.map)
file(CONFIGURE OUTPUT ${SGFP4_VERSION_SCRIPT}
     CONTENT "{\n  global:\n${_sgfp4_exports}  local:\n    *;\n};\n")
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang" AND NOT APPLE AND NOT WIN32)
  target_link_options(sgfp4_shared PRIVATE "LINKER:--version-script=${SGFP4_VERSION_SCRIPT}")
  set_property(TARGET sgfp4_shared APPEND PROPERTY LINK_DEPENDS ${SGFP4_VERSION_SCRIPT})
endif()
