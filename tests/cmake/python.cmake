# The Python binding (python/, docs/python.md): its pytest suite, one CTest per test file,
# run against this build's libsgfp4_model.so (and the libsgfp4.so it links) and sgfp4 tool;
# and the README's route to `import sgfp4` (a fresh venv by scripts/python-venv.sh, then
# the README's two lines).
# SPDX-License-Identifier: MIT
set(SGFP4_PYTHON "" CACHE FILEPATH
    "Python 3 with numpy and pytest for the binding's tests (default: Debian's /usr/bin/python3, else python3 on PATH)")
set(_py "")
set(_py_candidates ${SGFP4_PYTHON})
if(NOT SGFP4_PYTHON)
  find_program(_py_on_path python3)
  set(_py_candidates /usr/bin/python3 ${_py_on_path})
endif()
foreach(candidate ${_py_candidates})
  if(EXISTS ${candidate})
    execute_process(COMMAND ${candidate} -c "import numpy, pytest"
                    RESULT_VARIABLE _py_missing OUTPUT_QUIET ERROR_QUIET)
    if(_py_missing EQUAL 0)
      set(_py ${candidate})
      break()
    endif()
  endif()
endforeach()

set(_py_tests_dir ${PROJECT_SOURCE_DIR}/python/tests)
file(GLOB _py_tests CONFIGURE_DEPENDS ${_py_tests_dir}/test_*.py)

# Not runnable here: one skipped test per file that says why (the tests exist, the tools not).
set(_py_skip "")
if(NOT _py)
  set(_py_skip "no Python 3 with numpy and pytest (Debian: python3-numpy python3-pytest, which scripts/install-deps.sh installs)")
endif()

# Under the sanitizers: the library is an ASan build, which an uninstrumented interpreter
# can load only with the ASan runtime preloaded. The interpreter does not free everything
# at exit, so LeakSanitizer stays off here (the library's leaks: the plain build's heap
# measurement and the C suite's LeakSanitizer run).
set(_py_env "")
if(SGFP4_SANITIZE AND NOT _py_skip)
  # GCC's shared runtime is libasan.so; clang's (which carries UBSan's handlers too) is
  # libclang_rt.asan-<arch>.so.
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    set(_asan_rt_name libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
  else()
    set(_asan_rt_name libasan.so)
  endif()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_asan_rt_name}
                  OUTPUT_VARIABLE _asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${_asan_rt}" OR NOT EXISTS "${_asan_rt}")
    set(_py_skip "the compiler names no ${_asan_rt_name} to preload into the interpreter")
  else()
    list(APPEND _py_env "LD_PRELOAD=${_asan_rt}" "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
                        "SGFP4_PY_SANITIZED=1")
  endif()
endif()

file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/python-tmp)
foreach(src ${_py_tests})
  get_filename_component(_name ${src} NAME_WE)
  string(REGEX REPLACE "^test_" "" _name ${_name})
  if(_py_skip)
    add_test(NAME python.${_name} COMMAND sh -c "echo 'skipped: ${_py_skip}'; exit 77")
  else()
    add_test(NAME python.${_name}
             COMMAND ${_py} -m pytest -q -p no:cacheprovider
                     --basetemp=${CMAKE_CURRENT_BINARY_DIR}/python-tmp/${_name} ${src})
  endif()
  set_tests_properties(python.${_name} PROPERTIES LABELS python SKIP_RETURN_CODE 77
    ENVIRONMENT "SGFP4_LIBRARY=$<TARGET_FILE:sgfp4_model_shared>;SGFP4_CLI=$<TARGET_FILE:sgfp4>;SGFP4_SOURCE_DIR=${PROJECT_SOURCE_DIR};SGFP4_SHARED_DIR=${SGFP4_SHARED_DIR};PYTHONPATH=${PROJECT_SOURCE_DIR}/python;PYTHONDONTWRITEBYTECODE=1;${_py_env}")
endforeach()

# The README's route (plain builds, like install_package: an installed ASan library would
# need the preload in every program that loads it).
if(NOT SGFP4_SANITIZE)
  add_test(NAME python.readme_route
           COMMAND bash ${_py_tests_dir}/readme_route.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/python-venv)
  set_tests_properties(python.readme_route PROPERTIES LABELS python SKIP_RETURN_CODE 77)
  if(_py_skip)
    set_tests_properties(python.readme_route PROPERTIES ENVIRONMENT "SGFP4_README_SKIP=${_py_skip}")
  endif()
endif()
