# The decode kernels against the scalar oracle with nothing but libc, pthreads and libm
# (tests/cross/cross_decode_check.c): built natively as `cross_decode_check`, and
# cross-compiled for AArch64 and run under qemu-user as `cross.aarch64_decode`, so that the
# NEON kernels are checked on an x86-64 CI. Without the cross compiler, qemu-aarch64 or the
# AArch64 C library, `cross.aarch64_decode` is still registered and skips (77), saying what
# is missing (scripts/install-deps.sh installs all three).
# SPDX-License-Identifier: MIT
set(cross_check_sources
    ${PROJECT_SOURCE_DIR}/tests/cross/cross_decode_check.c
    ${PROJECT_SOURCE_DIR}/tests/cross/neon_parts_check.c
    ${PROJECT_SOURCE_DIR}/tests/support/decode_paths.c
    ${PROJECT_SOURCE_DIR}/tools/datagen/generator.c)
set(cross_check_includes ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/tools)

# ---- natively: the library as built here (sanitizers included in a sanitizer build) ----
add_executable(cross_decode_check ${cross_check_sources})
target_include_directories(cross_decode_check PRIVATE ${cross_check_includes})
target_link_libraries(cross_decode_check PRIVATE sgfp4_static)
add_test(NAME cross.decode_check COMMAND cross_decode_check)
# ~10 s on an idle 2-core machine, several times that under load (and the sanitizers)
set_tests_properties(cross.decode_check PROPERTIES TIMEOUT 900)

# ---- AArch64 under qemu-user -------------------------------------------------------------
# Built and run once, in the plain build: its binary has no sanitizers (they do not run under
# qemu-user), so a sanitizer build would run the same check again, for minutes, for nothing.
if(SGFP4_SANITIZE)
  return()
endif()
find_program(SGFP4_AARCH64_CC aarch64-linux-gnu-gcc)
find_program(SGFP4_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
set(SGFP4_AARCH64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH
    "The AArch64 C library that qemu-aarch64 -L runs the cross-built check with")
set(cross_missing "")
if(NOT SGFP4_AARCH64_CC)
  list(APPEND cross_missing "aarch64-linux-gnu-gcc (Debian package gcc-aarch64-linux-gnu)")
endif()
if(NOT SGFP4_QEMU_AARCH64)
  list(APPEND cross_missing "qemu-aarch64 (Debian package qemu-user)")
endif()
if(NOT EXISTS ${SGFP4_AARCH64_SYSROOT}/include/stdio.h OR
   NOT EXISTS ${SGFP4_AARCH64_SYSROOT}/lib/ld-linux-aarch64.so.1)
  list(APPEND cross_missing
       "the AArch64 C library in ${SGFP4_AARCH64_SYSROOT} (Debian package libc6-dev-arm64-cross)")
endif()

if(cross_missing)
  string(JOIN ", " cross_missing_text ${cross_missing})
  message(STATUS "libsgfp4: cross.aarch64_decode will skip: missing ${cross_missing_text}")
  add_test(NAME cross.aarch64_decode
           COMMAND sh -c "echo \"cross.aarch64_decode: SKIP: missing $0\"; exit 77"
                   "${cross_missing_text}")
else()
  # The decode core: no dependency beyond libc, pthreads and libm. Compiled with the
  # project's warning and floating-point flags (CMakeLists.txt), optimised, no sanitizers
  # (they do not run under qemu-user).
  file(GLOB cross_core_sources CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/src/format/*.c ${PROJECT_SOURCE_DIR}/src/container/*.c
       ${PROJECT_SOURCE_DIR}/src/listing/*.c ${PROJECT_SOURCE_DIR}/src/decode/*.c
       ${PROJECT_SOURCE_DIR}/src/common/*.c)
  file(GLOB cross_headers CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/include/*.h ${PROJECT_SOURCE_DIR}/src/*/*.h
       ${PROJECT_SOURCE_DIR}/tests/support/*.h ${PROJECT_SOURCE_DIR}/tools/datagen/*.h
       ${PROJECT_SOURCE_DIR}/tests/cross/*.h)
  set(cross_flags -O2 -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wvla
      -ffp-contract=off -D_DEFAULT_SOURCE)
  if(SGFP4_WERROR)
    list(APPEND cross_flags -Werror)
  endif()
  set(cross_binary ${CMAKE_CURRENT_BINARY_DIR}/cross_decode_check.aarch64)
  list(TRANSFORM cross_check_includes PREPEND -I OUTPUT_VARIABLE cross_include_flags)
  add_custom_command(
    OUTPUT ${cross_binary}
    COMMAND ${SGFP4_AARCH64_CC} ${cross_flags} -I${PROJECT_SOURCE_DIR}/include
            -I${PROJECT_BINARY_DIR}/include ${cross_include_flags} ${cross_core_sources} ${cross_check_sources}
            -o ${cross_binary} -pthread -lm
    DEPENDS ${cross_core_sources} ${cross_check_sources} ${cross_headers}
            ${PROJECT_BINARY_DIR}/include/sgfp4_config.h
    COMMENT "Cross-compiling the decode check for AArch64"
    VERBATIM)
  add_custom_target(cross_decode_check_aarch64 ALL DEPENDS ${cross_binary})
  add_test(NAME cross.aarch64_decode
           COMMAND ${SGFP4_QEMU_AARCH64} -L ${SGFP4_AARCH64_SYSROOT} ${cross_binary})
endif()
set_tests_properties(cross.aarch64_decode PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
