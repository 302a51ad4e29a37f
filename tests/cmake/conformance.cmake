# Conformance tests beyond the golden set: MNN's fixtures (tests/unit/test_mnn.c parses their
# manifest with jansson), the random differential corpus (tests/decodecorpus.c) and the CLI
# tests (tests/cli/test_cli.sh).
# SPDX-License-Identifier: MIT
target_include_directories(test_mnn PRIVATE ${JANSSON_INCLUDE_DIR})
target_link_libraries(test_mnn PRIVATE ${JANSSON_LIBRARY})
