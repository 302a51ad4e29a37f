# The source tree's layers (docs/api.md, "Source layers"): every #include goes to the file's
# own layer or one below (never to a sibling), tools/ uses the public API only, no header
# includes itself through others and no file name is used twice in src/. And no macro of
# src/ uses a variable of the place it is expanded that it is not given (macro_locals.py).
# And the files of tests/scripts/formatted_files.txt stay formatted as .clang-format says
# (skipped without clang-format 14).
# SPDX-License-Identifier: MIT
add_test(NAME source.format
         COMMAND sh ${PROJECT_SOURCE_DIR}/tests/scripts/format_check.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(source.format PROPERTIES SKIP_RETURN_CODE 77)
find_program(SGFP4_PYTHON3 python3)
if(SGFP4_PYTHON3)
  add_test(NAME source.include_layers
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/include_layers.py
                   ${PROJECT_SOURCE_DIR})
  add_test(NAME source.include_layers_self_test
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/include_layers.py
                   --self-test)
  add_test(NAME source.macro_locals
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/macro_locals.py
                   ${PROJECT_SOURCE_DIR})
  add_test(NAME source.macro_locals_self_test
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/macro_locals.py
                   --self-test)
endif()
