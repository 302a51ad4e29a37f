# The calls that check decoded output: contract hashes, error statistics, the D6 2-D view
# and whole-model verification (tests/verify/).
# SPDX-License-Identifier: MIT
sgfp4_add_unit_test(test_verify ${CMAKE_CURRENT_LIST_DIR}/../verify/test_verify.c)
