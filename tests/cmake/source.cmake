# The source tree's layers (docs/api.md, "Source layers"): every #include goes to the file's
# own layer or one below, tools/ uses the public API only, and no header includes itself
# through others.
# SPDX-License-Identifier: MIT
find_program(SGFP4_PYTHON3 python3)
if(SGFP4_PYTHON3)
  add_test(NAME source.include_layers
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/include_layers.py
                   ${PROJECT_SOURCE_DIR})
  add_test(NAME source.include_layers_self_test
           COMMAND ${SGFP4_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/scripts/include_layers.py
                   --self-test)
endif()
