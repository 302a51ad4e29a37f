#!/usr/bin/env bash
# CLI contract tests for `sgfp4` (ARCHITECTURE.md "CLI contract", docs/cli.md):
#   exit codes; one line on stderr on failure; --help / --version; '-' for stdin / stdout;
#   .npy output (header and data checked byte by byte); and, over a few hundred random valid
#   and malformed containers written by decodecorpus --write-dir, `sgfp4 decode` output equal
#   to the independently computed bytes, and every malformed container rejected with a
#   non-zero exit, the right status in its one-line message, and NO output or temporary file
#   left behind (an existing output file is left untouched).
# usage: test_cli.sh SGFP4 DECODECORPUS GOLDEN_DIR SCRATCH_DIR [COUNT [SEED]]
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
corpus=$2
golden=$3
scratch=$4
count=${5:-150}
seed=${6:-77}

. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
mkdir -p corpus out

# The failure contract: non-zero exit ($1 = expected code or "nonzero") and one stderr line.
expect_failure() {
    local want=$1
    shift
    run "$@"
    if [ "$want" = nonzero ]; then
        [ "$rc" -ne 0 ] || { fail "sgfp4 $* exited 0"; return; }
    else
        [ "$rc" -eq "$want" ] || { fail "sgfp4 $* exited $rc, want $want"; return; }
    fi
    local lines
    lines=$(wc -l <"$err")
    [ "$lines" -eq 1 ] || { fail "sgfp4 $*: $lines lines on stderr, want 1: $(cat "$err")"; return; }
    grep -q '^sgfp4: ' "$err" || { fail "sgfp4 $*: stderr does not start with 'sgfp4: '"; return; }
    ok
}

# The output folder must be empty (no output, no temporary file).
expect_no_output() {
    local left
    left=$(ls -A "$scratch/out")
    [ -z "$left" ] || { fail "$1: files left behind: $left"; rm -f "$scratch/out/"*; return; }
    ok
}

# ---- help, version, usage errors --------------------------------------------------------
run --help
[ "$rc" -eq 0 ] && grep -q '^usage: sgfp4' "$scratch/stdout.txt" && [ ! -s "$err" ] && ok ||
    fail "--help: exit $rc or no usage on stdout"
run --version
[ "$rc" -eq 0 ] && grep -Eq '^sgfp4 [0-9]+\.[0-9]+\.[0-9]+' "$scratch/stdout.txt" && ok ||
    fail "--version: exit $rc, output '$(cat "$scratch/stdout.txt")'"
for cmd in decode verify info; do
    run "$cmd" --help
    [ "$rc" -eq 0 ] && grep -q "usage: sgfp4 $cmd" "$scratch/stdout.txt" && ok ||
        fail "$cmd --help: exit $rc"
done
# every command's --help lists each option once
for cmd in encode decode verify info matvec bench example; do
    run "$cmd" --help
    dup=$(grep -oE '^ +--[a-z0-9-]+' "$scratch/stdout.txt" | sort | uniq -d | tr -d ' ' | tr '\n' ' ')
    [ "$rc" -eq 0 ] && [ -z "$dup" ] && ok || fail "$cmd --help: exit $rc, listed twice: $dup"
done
run
[ "$rc" -eq 2 ] && ok || fail "no command: exit $rc, want 2"
run no-such-command
[ "$rc" -eq 2 ] && ok || fail "unknown command: exit $rc, want 2"

v2=$golden/decode/v2_shape_3x130.sgfp4
v1=$golden/decode/v1_shape_3x130.fp4
expect_failure 2 decode "$v2" --shape 3x130                      # no -o
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32"            # no --shape
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape 3x # bad shape
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape 3x130 --dtype f64
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape 3x130 --bogus
expect_failure 2 decode "$v2" -o "$scratch/out/x.npy" --shape 3x130 --dtype bf16
expect_failure 1 decode "$scratch/missing.sgfp4" -o "$scratch/out/x.f32" --shape 3x130
expect_failure 1 decode "$v2" -o "$scratch/out/x.f32" --shape 3x200    # wrong shape
expect_failure 1 decode "$v2" -o "$scratch/no-such-dir/x.f32" --shape 3x130
expect_no_output "usage errors"
expect_failure nonzero verify "$golden/reject/v2_layout_6.sgfp4" --shape 64x64
grep -q 'V2_LAYOUT' "$err" && ok || fail "verify of a bad layout does not name V2_LAYOUT"

# ---- the option parser's conventions (getopt_long), the same for every command ---------
# help CMD is CMD --help; encode --help lists the whole-model options too.
for cmd in encode decode verify info bench example; do
    run help "$cmd"
    cp "$scratch/stdout.txt" "$scratch/help.txt"
    run "$cmd" --help
    [ "$rc" -eq 0 ] && cmp -s "$scratch/stdout.txt" "$scratch/help.txt" &&
        grep -q -- '--quiet' "$scratch/help.txt" && grep -q -- '--verbose' "$scratch/help.txt" &&
        ok || fail "help $cmd differs from $cmd --help, or lacks -q/-v"
done
run encode --help
grep -q -- '--embeddings' "$scratch/stdout.txt" && grep -q -- '--zstd-level' "$scratch/stdout.txt" &&
    ok || fail "encode --help does not list the whole-model options"
expect_failure 2 help no-such-command
# Usage errors exit 2 with one line, whatever the command and the mistake.
for cmd in encode decode verify info bench example; do
    expect_failure 2 "$cmd" --no-such-option
    expect_failure 2 "$cmd" -Z
done
expect_failure 2 encode "$v2"                                     # no -o
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape     # a value missing
expect_failure 2 verify "$v2"                                     # no --shape
expect_failure 2 info "$v2"                                       # no --shape
expect_failure 2 info "$v2" --shape 3x130 --threads 257           # above the maximum
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape 3x130 --threads many
expect_failure 2 example                                          # no -o
expect_failure 2 verify "$v2" "$v1" --shape 3x130                 # two inputs
expect_failure 2 decode m.safetensors -o "$scratch/out/m.safetensors" --shape 3x130
expect_failure 2 encode "$v2" -o "$scratch/out/x.sgfp4" --zstd-level 3 --shape 3x130
expect_no_output "usage errors of every command"
# -oFILE, --output=FILE and "--" before an input all reach the same decode; --threads 0 (every
# CPU) and --threads 1 give the same bytes.
run decode "$v2" --shape 3x130 -o "$scratch/ref0.f32"
run decode "$v2" --shape=3x130 -o"$scratch/out/a.f32" --threads 0
[ "$rc" -eq 0 ] && cmp -s "$scratch/out/a.f32" "$scratch/ref0.f32" && ok || fail "-oFILE, --threads 0"
run decode --shape 3x130 --output="$scratch/out/b.f32" --threads 1 -- "$v2"
[ "$rc" -eq 0 ] && cmp -s "$scratch/out/b.f32" "$scratch/ref0.f32" && ok || fail "--output=, --"
rm -f "$scratch/out/a.f32" "$scratch/out/b.f32"
# -q silences the summary and progress, -v adds what was decided; neither changes stdout.
printf '\000\000\200\077%.0s' $(seq 1 64) >"$scratch/w.f32"
run encode "$scratch/w.f32" --shape 8x8 -o "$scratch/out/w.sgfp4" --quiet
[ "$rc" -eq 0 ] && [ ! -s "$err" ] && ok || fail "encode --quiet wrote to stderr: $(cat "$err")"
run encode "$scratch/w.f32" --shape 8x8 -o "$scratch/out/w.sgfp4" -f
# the summary line, then (an 8x8 tensor in a 64x64 block misses --bpw 4.5) the warnings
[ "$rc" -eq 0 ] && head -1 "$err" | grep -q 'bits/weight, rel-L2' &&
    [ "$(grep -vc '^sgfp4: encode: \(warning\|note\): ' "$err")" -eq 1 ] && ok ||
    fail "encode: no one-line summary: $(cat "$err")"
run decode "$scratch/out/w.sgfp4" --shape 8x8 -o "$scratch/out/w.f32" -v
[ "$rc" -eq 0 ] && grep -q 'decoded by' "$err" && ok || fail "decode -v says nothing"
run verify "$scratch/out/w.sgfp4" --shape 8x8 -q
[ "$rc" -eq 0 ] && grep -q '^container sha256' "$scratch/stdout.txt" && [ ! -s "$err" ] && ok ||
    fail "verify -q: exit $rc"
rm -f "$scratch/out/w.sgfp4" "$scratch/out/w.f32"

# ---- verify and info ---------------------------------------------------------------------
# verify prints the two hashes an execution contract pins: the container's bytes (checked
# with sha256sum) and the decoded float32 tensor (checked against golden/manifest.json).
known=$golden/decode/v2_mixed_known_tree.sgfp4
run verify "$known" --shape 64x64
want_tensor=$(python3 -c 'import json, sys
print([v["sha256"] for v in json.load(open(sys.argv[1]))["vectors"]
       if v["name"] == "v2_mixed_known_tree"][0])' "$golden/manifest.json")
want_container=$(sha256sum "$known" | cut -d' ' -f1)
[ "$rc" -eq 0 ] && grep -q "^container sha256: $want_container\$" "$scratch/stdout.txt" &&
    grep -q "^decoded f32 sha256: $want_tensor\$" "$scratch/stdout.txt" && ok ||
    fail "verify $known: exit $rc or wrong hashes: $(cat "$scratch/stdout.txt")"
reserved=$golden/decode/v2_t158_reserved_symbol.sgfp4
run verify "$reserved" --shape 64x64
[ "$rc" -eq 0 ] && grep -q 'reserved T158 symbols' "$scratch/stdout.txt" && ok ||
    fail "verify without --strict must accept reserved symbols and note them"
expect_failure 1 verify --strict "$reserved" --shape 64x64
run info "$known" --shape 64x64 --json
if [ "$rc" -eq 0 ] && python3 - "$scratch/stdout.txt" "$want_container" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
assert info['leaves'] == 7, info['leaves']
assert info['layouts']['MIXED'] == 1, info['layouts']
assert info['sha256'] == sys.argv[2], info['sha256']
EOF
then ok; else fail "info --json of the known tree: exit $rc or wrong facts"; fi

# ---- valid decodes: raw, stdin/stdout, npy ----------------------------------------------
# (this vector's padding leaves are random, not an encoder's zeros: the shape check says so)
run decode "$v2" -o "$scratch/out/a.f32" --shape 3x130
[ "$rc" -eq 0 ] && { [ ! -s "$err" ] || [ "$(grep -vc 'looks wrong' "$err")" -eq 0 ]; } &&
    [ "$(stat -c %s "$scratch/out/a.f32")" -eq $((3 * 130 * 4)) ] &&
    ok || fail "decode $v2: exit $rc, $(cat "$err")"
"$sgfp4" decode - -o - --shape 3x130 --profile v2 <"$v2" >"$scratch/b.f32" 2>"$err"
rc=$?
[ "$rc" -eq 0 ] && cmp -s "$scratch/out/a.f32" "$scratch/b.f32" && ok ||
    fail "decode from stdin to stdout differs from the file decode (exit $rc)"
"$sgfp4" decode - -o - --shape 3x130 --profile v1 <"$v1" >"$scratch/b1.f32" 2>"$err"
[ $? -eq 0 ] && [ "$(stat -c %s "$scratch/b1.f32")" -eq 1560 ] && ok || fail "v1 from stdin"
rm -f "$scratch/out/a.f32"

# Every CPU backend and store kind gives the default decode's bytes; a forced kernel set
# this CPU cannot run fails like any other error (exit 1, one line, nothing written).
run decode "$v2" -o "$scratch/ref.f32" --shape 3x130
for backend in auto cpu scalar generic avx2 avx512 neon; do
    for store in auto cached streaming; do
        run decode "$v2" -o "$scratch/out/k.f32" --shape 3x130 --backend $backend --store $store
        if [ "$rc" -eq 0 ]; then
            cmp -s "$scratch/out/k.f32" "$scratch/ref.f32" && ok ||
                fail "decode --backend $backend --store $store: other bytes"
        elif [ "$rc" -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q 'not available' "$err" &&
            case $backend in avx2 | avx512 | neon) true ;; *) false ;; esac; then
            ok
        else
            fail "decode --backend $backend --store $store: exit $rc: $(cat "$err")"
        fi
        rm -f "$scratch/out/k.f32"
        expect_no_output "decode --backend $backend --store $store"
    done
done
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape 3x130 --backend sse9
expect_failure 2 decode "$v2" -o "$scratch/out/x.f32" --shape 3x130 --store sideways
expect_failure 2 bench --shape 64x64 --backend sse9
expect_failure 2 bench --shape 64x64 --offset 64
expect_failure 2 bench --shape 64x64 --store sideways

# bench: the report's facts are the ones asked for, and its ratios agree with its speeds.
run bench --shape 64x256 --runs 1 --threads 2 --gather-rows 8 --store streaming --offset 16 --json
if [ "$rc" -eq 0 ] && python3 - "$scratch/stdout.txt" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['shape'] == [64, 256] and r['output_offset'] == 16 and r['output_bytes'] == 64 * 256 * 4, r
assert [x['threads'] for x in r['results']] == [1, 2], r
for x in r['results']:
    assert x['stores'] == 'streaming', x
    assert x['decode_gbps'] > 0 and x['memset_gbps'] > 0 and x['gather_rows_per_s'] > 0, x
    assert abs(x['decode_vs_memset'] - x['decode_gbps'] / x['memset_gbps']) < 1e-6 * x['decode_vs_memset'], x
EOF
then ok; else fail "bench --json: exit $rc or a wrong report: $(cat "$err")"; fi

# bench --op open: open against decode of the same container, one JSON object.
run bench --shape 64x256 --runs 3 --threads 2 --op open --json
if [ "$rc" -eq 0 ] && python3 - "$scratch/stdout.txt" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['op'] == 'open' and r['shape'] == [64, 256] and r['runs'] == 3 and r['leaves'] > 0, r
assert r['open_ms_min'] <= r['open_ms'] <= r['open_ms_max'], r
assert [x['threads'] for x in r['results']] == [1, 2], r
for x in r['results']:
    assert x['decode_ms_min'] <= x['decode_ms'] <= x['decode_ms_max'], x
    assert abs(x['open_vs_decode'] - r['open_ms'] / x['decode_ms']) < 1e-6 * x['open_vs_decode'], x
EOF
then ok; else fail "bench --op open --json: exit $rc or a wrong report: $(cat "$err")"; fi
# bench --op matvec: every arm at both thread counts, cold and warm, each row with its range
# and the count of calls the scheduler interrupted (those are timed again, not kept).
run bench --shape 64x256 --runs 3 --threads 2 --op matvec --json
if [ "$rc" -eq 0 ] && python3 - "$scratch/stdout.txt" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['shape'] == [64, 256] and r['runs'] == 3 and r['checked'] is True, r
rows = r['results']
assert sorted({(x['threads'], x['cache']) for x in rows}) == \
    [(1, 'cold'), (1, 'warm'), (2, 'cold'), (2, 'warm')], rows
assert len(rows) == 16, rows
for x in rows:
    assert x['best_s'] <= x['worst_s'] and x['gbytes_per_s'] > 0, x
    assert isinstance(x['interrupted'], int) and x['interrupted'] >= 0, x
    assert isinstance(x['kept_interrupted'], int) and 0 <= x['kept_interrupted'] <= 3, x
EOF
then ok; else fail "bench --op matvec --json: exit $rc or a wrong report: $(cat "$err")"; fi
expect_failure 2 bench --shape 64x64 --op sideways
expect_failure 2 bench --shape 64x64 --op open --gather-rows 8
expect_failure 2 bench --op open --backend vulkan

# .npy: magic, version 1.0, header length, dict, 64-byte aligned data, then the f32 bytes
check_npy() { # FILE DESCR ROWS COLS RAWFILE
    python3 - "$@" <<'EOF'
import ast, sys
path, descr, rows, cols, raw = sys.argv[1:]
d = open(path, 'rb').read()
assert d[:6] == b'\x93NUMPY', 'bad magic'
assert d[6:8] in (b'\x01\x00', b'\x02\x00', b'\x03\x00'), 'bad version'
if d[6] == 1:
    hlen, start = int.from_bytes(d[8:10], 'little'), 10
else:
    hlen, start = int.from_bytes(d[8:12], 'little'), 12
header = d[start:start + hlen].decode('latin1')
assert header.endswith('\n'), 'header does not end in a newline'
assert (start + hlen) % 16 == 0, 'data not 16-byte aligned'
h = ast.literal_eval(header.strip())
assert h['descr'] == descr, h
assert h['fortran_order'] is False, h
assert tuple(h['shape']) == (int(rows), int(cols)), h
assert d[start + hlen:] == open(raw, 'rb').read(), 'data differs from the raw decode'
EOF
}
for dtype in f32 f16; do
    descr='<f4'
    [ $dtype = f16 ] && descr='<f2'
    run decode "$v2" -o "$scratch/out/n.npy" --shape 3x130 --dtype $dtype
    rc_npy=$rc
    run decode "$v2" -o "$scratch/raw.$dtype" --shape 3x130 --dtype $dtype
    if [ "$rc_npy" -eq 0 ] && [ "$rc" -eq 0 ] && check_npy "$scratch/out/n.npy" "$descr" 3 130 "$scratch/raw.$dtype"; then
        ok
    else
        fail ".npy output ($dtype) is not a valid NumPy file of the decoded data"
    fi
    rm -f "$scratch/out/n.npy"
done

# A failing decode leaves an existing output file exactly as it was.
echo keep >"$scratch/out/keep.f32"
expect_failure 1 decode "$golden/reject/v2_trailing_byte.sgfp4" -o "$scratch/out/keep.f32" \
    --shape 64x64
[ "$(cat "$scratch/out/keep.f32")" = keep ] && [ "$(ls -A "$scratch/out")" = keep.f32 ] && ok ||
    fail "a failing decode changed or added files next to an existing output"
rm -f "$scratch/out/keep.f32"

# ---- random valid and malformed containers ----------------------------------------------
if ! "$corpus" --seed "$seed" --count "$count" --write-dir "$scratch/corpus" >/dev/null; then
    fail "decodecorpus --write-dir failed"
fi
decoded=0
rejected=0
while IFS=$'\t' read -r file profile rows cols expect what; do
    in=$scratch/corpus/$file
    out=$scratch/out/${file%.*}.f32
    if [ "$expect" = decode ]; then
        run decode "$in" -o "$out" --shape "${rows}x${cols}" --profile "$profile"
        if [ "$rc" -ne 0 ] || ! cmp -s "$out" "$scratch/corpus/$what"; then
            fail "$file: decode exit $rc or output differs from $what: $(cat "$err")"
        else
            ok
            decoded=$((decoded + 1))
        fi
        rm -f "$out"
    else
        if [ "$rows" = 0 ] || [ "$cols" = 0 ]; then
            expect_failure 2 decode "$in" -o "$out" --shape "${rows}x${cols}" --profile "$profile"
        else
            expect_failure 1 decode "$in" -o "$out" --shape "${rows}x${cols}" --profile "$profile"
            grep -q "\[$what\]" "$err" && ok || fail "$file: message does not name $what: $(cat "$err")"
        fi
        expect_no_output "$file (malformed, $what)"
        rejected=$((rejected + 1))
    fi
done <"$scratch/corpus/index.tsv"
[ "$decoded" -gt 0 ] && [ "$rejected" -gt 0 ] || fail "the corpus produced no cases"

echo "test_cli: $checks checks passed, $failures failed ($decoded random containers decoded" \
     "bit for bit, $rejected malformed ones rejected with no output)"
[ "$failures" -eq 0 ]
