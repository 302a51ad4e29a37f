# The public API as the shared library presents it: every function the headers declare
# (stable and experimental tier) is exported, and nothing else is (docs/api.md, "Stability
# tiers").
# SPDX-License-Identifier: MIT
file(GLOB _api_headers ${PROJECT_SOURCE_DIR}/include/*.h)
add_test(NAME api.exported_symbols
         COMMAND sh ${PROJECT_SOURCE_DIR}/tests/scripts/exported_symbols.sh
                 $<TARGET_FILE:sgfp4_shared> ${_api_headers})
