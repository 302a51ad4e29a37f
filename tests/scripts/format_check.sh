#!/bin/sh
# The C files listed in tests/scripts/formatted_files.txt are formatted as .clang-format says
# (clang-format 14, which scripts/install-deps.sh installs: another version may format the
# same file differently, so the check skips there). A file joins the list once it is
# formatted (`clang-format -i FILE`); the list only grows.
# Usage: format_check.sh REPO      exit 0 formatted, 1 not, 77 skipped (no clang-format 14)
# SPDX-License-Identifier: MIT
repo=${1:?usage: format_check.sh REPO}
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
    echo "source.format: SKIP: clang-format 14 not installed (Debian package clang-format)"
    exit 77
fi
case $("$cf" --version) in
*" version 14."*) ;;
*)
    echo "source.format: SKIP: $("$cf" --version) is not clang-format 14"
    exit 77
    ;;
esac
status=0
while read -r f; do
    case $f in '' | '#'*) continue ;; esac
    if [ ! -f "$repo/$f" ]; then
        echo "$f: listed in tests/scripts/formatted_files.txt but missing"
        status=1
    elif ! out=$(cd "$repo" && "$cf" --dry-run --Werror "$f" 2>&1); then
        printf '%s\n' "$out" | head -6
        echo "$f: not formatted as .clang-format says (clang-format -i $f)"
        status=1
    fi
done < "$repo/tests/scripts/formatted_files.txt"
[ $status -eq 0 ] && echo "source.format: $(grep -c '^[a-z]' "$repo/tests/scripts/formatted_files.txt") files formatted"
exit $status
