#!/usr/bin/env bash
# The README's "Using the tool" commands run as written: the first ```sh block after that
# heading, line by line (comments stripped), in a fresh folder with the checkout's golden/
# beside it and the built sgfp4 first on PATH. Each must exit 0 and leave no temporary file.
# usage: readme_commands.sh SGFP4 SOURCE_DIR SCRATCH_DIR
# SPDX-License-Identifier: MIT
set -euo pipefail
sgfp4=$1 source_dir=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch/bin"
ln -s "$sgfp4" "$scratch/bin/sgfp4"
ln -s "$source_dir/golden" "$scratch/golden"
awk '/^## Using the tool/ { on = 1 } on && /^```sh/ { inside = 1; next }
     inside && /^```/ { exit } inside { print }' "$source_dir/README.md" >"$scratch/commands.txt"
[ -s "$scratch/commands.txt" ] || { echo "FAIL: no sh block under '## Using the tool'"; exit 1; }
cd "$scratch"
n=0
while IFS= read -r line; do
  command=${line%%#*}
  [ -n "${command// /}" ] || continue
  case $command in sgfp4\ *) ;; *) echo "FAIL: not an sgfp4 command: $line"; exit 1 ;; esac
  echo "\$ $command"
  if ! PATH="$scratch/bin:$PATH" bash -c "$command" >out.txt 2>&1 </dev/null; then
    cat out.txt
    echo "FAIL: README command failed: $command"
    exit 1
  fi
  n=$((n + 1))
done <commands.txt
[ -z "$(find . -name '.*sgfp4-tmp-*')" ] || { echo "FAIL: temporary files left"; exit 1; }
echo "README: $n commands ran as written"
