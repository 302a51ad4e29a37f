#!/bin/bash
# An input file truncated while the tool reads it (another program doing `cp new old`, which
# truncates first): the tool maps its inputs, so the read past the file's new end raises
# SIGBUS. It must end with exit 1 and one line naming the file ("PATH: changed while being
# read"), and leave no temporary file and no output behind, never die of "Bus error".
# The truncation is placed exactly (no timing): truncate_on_temp.so (LD_PRELOAD) truncates
# the input when the tool creates its output's temporary file, after the inputs are open
# and before any of their data is read.
# Usage: mapped_input.sh SGFP4_CLI TRUNCATE_SHIM WORKDIR
# SPDX-License-Identifier: MIT
set -u
cli=$1 shim=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

"$cli" example -q -o plain.safetensors --layers 1 --dim 128 --ffn 256 --vocab 256 --dtype f32 ||
    exit 1
"$cli" encode -q plain.safetensors -o q.sgfp4.safetensors || exit 1
"$cli" encode -q plain.safetensors --tensor lm_head.weight -o w.sgfp4 || exit 1

# truncated INPUT, then the command and its output file
check() {
    local input=$1 out=$2
    shift 2
    cp "$input" victim
    rm -f victim.truncated "$out" ".$out".sgfp4-tmp-* err
    LD_PRELOAD=$shim SGFP4_TEST_TRUNCATE=$PWD/victim "$cli" "$@" 2>err
    local rc=$?
    if [ ! -e victim.truncated ]; then
        fail "$*: the truncation did not happen (no temporary file created through the preload?)"
        return
    fi
    [ "$rc" -eq 1 ] || fail "$*: exit $rc, expected 1"
    [ "$(wc -l <err)" -eq 1 ] || fail "$*: expected one line on stderr, got: $(cat err)"
    grep -q "^sgfp4: $1: victim: changed while being read .*\[IO\]$" err ||
        fail "$*: unexpected message: $(cat err)"
    [ ! -e "$out" ] || fail "$*: $out was written"
    ls -A | grep -q "sgfp4-tmp" && fail "$*: temporary file left: $(ls -A | grep sgfp4-tmp)"
    echo "ok: $* -> $(cat err)"
}

check q.sgfp4.safetensors out.safetensors decode victim -o out.safetensors
check q.sgfp4.safetensors out.f32 decode victim --tensor lm_head.weight -o out.f32
check w.sgfp4 out.f32 decode victim --profile v2 --shape 256x128 -o out.f32
check plain.safetensors out.sgfp4.safetensors encode victim -o out.sgfp4.safetensors

[ "$failures" -eq 0 ] || exit 1
echo "all passed"
