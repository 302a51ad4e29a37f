#!/usr/bin/env bash
# The build commands the documentation and the scripts give: every parallel `cmake --build`
# or `ctest` has a job count (a bare `-j` is an unbounded `make -j`, which starts one compiler
# per file at once), and scripts/example.sh shows the build's progress instead of sending it
# to /dev/null (a first build takes minutes).
# usage: build_commands.sh SOURCE_DIR
# SPDX-License-Identifier: MIT
set -euo pipefail
src=$1
cd "$src"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
checked=0
while IFS= read -r hit; do
  checked=$((checked + 1))
  line=${hit#*:*:}
  if grep -qE -- '(^|[[:space:]])(-j|--parallel)([[:space:]]|$)' <<<"$line"; then
    fail "${hit%%:*}: an unbounded job count: $line"
  fi
done < <(grep -nE 'cmake --build|ctest ' README.md docs/*.md python/README.md scripts/*.sh)
[ "$checked" -gt 0 ] || fail "no build command found"
grep -qE '^[^#]*cmake --build.*>[[:space:]]*/dev/null' scripts/example.sh &&
  fail "scripts/example.sh hides the build's progress: $(grep -E 'cmake --build' scripts/example.sh)"
[ "$failures" -eq 0 ] || exit 1
echo "build commands: $checked lines, every job count bounded; example.sh shows the build"
