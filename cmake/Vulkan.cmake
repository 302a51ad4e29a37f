# The Vulkan backend, included by the top CMakeLists.txt.
# SGFP4_VULKAN = AUTO (build it when Vulkan and glslangValidator are found), ON (require
# them) or OFF. Without it, src/vulkan_stub/ gives the same API reporting "unavailable".
# Shaders (shaders/*.comp, GLSL 450) are compiled at build time into C headers embedded in
# the library; nothing compiles shaders at run time.
# SPDX-License-Identifier: MIT

set(_sgfp4_vk_mode "${SGFP4_VULKAN}")
string(TOUPPER "${_sgfp4_vk_mode}" _sgfp4_vk_mode)
if(NOT _sgfp4_vk_mode MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "SGFP4_VULKAN must be AUTO, ON or OFF (got '${SGFP4_VULKAN}')")
endif()

set(SGFP4_HAVE_VULKAN 0)
if(NOT _sgfp4_vk_mode MATCHES "^(OFF|FALSE|NO|0)$")
  if(_sgfp4_vk_mode STREQUAL "AUTO")
    find_package(Vulkan QUIET COMPONENTS glslangValidator)
  else()
    find_package(Vulkan REQUIRED COMPONENTS glslangValidator)
  endif()
  if(Vulkan_FOUND AND Vulkan_glslangValidator_FOUND)
    set(SGFP4_HAVE_VULKAN 1)
  endif()
endif()

# sgfp4_compile_shaders(<target> <out_dir> <shader.comp>...): a custom target that compiles
# each shader into <out_dir>/<name>.spv.h, a C array named sgfp4_spv_<name> (the library's
# shaders/ and the benchmark kit's tools/bench/vulkan/shaders/ each use it).
function(sgfp4_compile_shaders target out_dir)
  file(MAKE_DIRECTORY ${out_dir})
  set(headers "")
  foreach(src ${ARGN})
    get_filename_component(name ${src} NAME_WE)
    get_filename_component(dir ${src} DIRECTORY)
    set(out ${out_dir}/${name}.spv.h)
    # --depfile records the #include'd files.
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE} --quiet --target-env vulkan1.1
              -I${dir} --vn sgfp4_spv_${name} --depfile ${out}.d -o ${out} ${src}
      DEPENDS ${src}
      DEPFILE ${out}.d
      COMMENT "Compiling shader ${name}.comp"
      VERBATIM)
    list(APPEND headers ${out})
  endforeach()
  add_custom_target(${target} DEPENDS ${headers})
endfunction()

if(SGFP4_HAVE_VULKAN)
  message(STATUS "libsgfp4: Vulkan backend ON (${Vulkan_LIBRARY}, ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE})")
  set(_sgfp4_spv_dir ${PROJECT_BINARY_DIR}/generated/shaders)
  file(GLOB _sgfp4_shaders CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/*.comp)
  sgfp4_compile_shaders(sgfp4_shaders ${_sgfp4_spv_dir} ${_sgfp4_shaders})
  list(APPEND SGFP4_OBJECT_DEPENDS sgfp4_shaders)

  file(GLOB _sgfp4_vk_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/vulkan/*.c)
  list(APPEND SGFP4_SOURCES ${_sgfp4_vk_sources})
  list(APPEND SGFP4_PRIVATE_INCLUDES ${_sgfp4_spv_dir})
  # The plain library path (like jansson's), so the exported static target stays usable;
  # a static link needs the loader too, so sgfp4.pc requires it (Debian's vulkan.pc).
  list(APPEND SGFP4_PRIVATE_LIBS ${Vulkan_LIBRARY})
  set(SGFP4_PC_REQUIRES_PRIVATE "vulkan")
  # sgfp4_vulkan.h includes <vulkan/vulkan_core.h>: make it visible to every target here.
  include_directories(${Vulkan_INCLUDE_DIRS})
else()
  message(STATUS "libsgfp4: Vulkan backend OFF (stubs report SGFP4_ERR_UNAVAILABLE)")
  file(GLOB _sgfp4_vk_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/vulkan_stub/*.c)
  list(APPEND SGFP4_SOURCES ${_sgfp4_vk_sources})
endif()
