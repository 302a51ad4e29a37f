# What each shared library exports: exactly the functions its public headers declare with
# SGFP4_API, nothing else. libsgfp4.so: sgfp4.h, sgfp4_experimental.h, sgfp4_vulkan.h;
# libsgfp4_model.so: sgfp4_model.h. -fvisibility=hidden already hides internal functions,
# but GCC exports the dispatchers of target_clones functions whatever their visibility; a
# linker version script generated from the headers makes everything else local.
# tests/scripts/exported_symbols.sh checks the result. Included by the top CMakeLists.txt
# after the shared targets exist.
# SPDX-License-Identifier: MIT

# sgfp4_exports(TARGET HEADER...): TARGET exports the functions the headers declare.
function(sgfp4_exports target)
  set(exports "")
  foreach(header ${ARGN})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})
    # Every declaration starts a line with SGFP4_API and names the function before its '('.
    file(STRINGS ${header} lines REGEX "^SGFP4_API ")
    foreach(line ${lines})
      if(NOT line MATCHES "([a-z][a-z0-9_]*)\\(")
        message(FATAL_ERROR "${header}: cannot find the function name in: ${line}")
      endif()
      string(APPEND exports "    ${CMAKE_MATCH_1};\n")
    endforeach()
  endforeach()
  set(script ${PROJECT_BINARY_DIR}/${target}.map)
  file(CONFIGURE OUTPUT ${script} CONTENT "{\n  global:\n${exports}  local:\n    *;\n};\n")
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang" AND NOT APPLE AND NOT WIN32)
    target_link_options(${target} PRIVATE "LINKER:--version-script=${script}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${script})
  endif()
endfunction()

set(SGFP4_CORE_HEADERS ${PROJECT_SOURCE_DIR}/include/sgfp4.h
    ${PROJECT_SOURCE_DIR}/include/sgfp4_experimental.h ${PROJECT_SOURCE_DIR}/include/sgfp4_vulkan.h)
set(SGFP4_MODEL_HEADERS ${PROJECT_SOURCE_DIR}/include/sgfp4_model.h)
if(TARGET sgfp4_shared)
  sgfp4_exports(sgfp4_shared ${SGFP4_CORE_HEADERS})
endif()
if(TARGET sgfp4_model_shared)
  sgfp4_exports(sgfp4_model_shared ${SGFP4_MODEL_HEADERS})
endif()
