#!/usr/bin/env bash
# docs/eval.md's "Building and running it" block runs as written, from a fresh folder:
# - the setup line (scripts/install-deps.sh) and the configure line are the suite's own:
#   checked to be the README's "Building by hand" ones, not run again;
# - the build line names the target this test runs (its binary is sgfp4-eval of the build
#   folder, the path the block uses);
# - the two downloads are replaced by the same files: a legacy llama2.c checkpoint written
#   here from the shared stories260K model (its tensors, then RoPE tables), and the shared
#   tok512.bin; the file names must be the downloads' names;
# - every other line runs with build/sgfp4-eval standing for the built binary.
# Then: the converted model holds the shared model's tensors bit for bit and its config;
# the standard table scores float32 exactly; the greedy text is llama2.c's; a second
# conversion onto the existing output is refused and leaves it intact; a truncated and a
# versioned checkpoint are refused without an output.
# usage: doc_commands.sh SGFP4_EVAL SOURCE_DIR WEIGHTS_DIR WORK_DIR [quick]
# (quick, for sanitizer builds: the standard table on 8 short sequences)
# SPDX-License-Identifier: MIT
set -euo pipefail
eval_bin=$1 source_dir=$2 weights=$3 work=$4 quick=${5:-}
model=$weights/stories260K/stories260K.safetensors
tok=$weights/stories260K/tok512.bin
[ -f "$model" ] && [ -f "$tok" ] || { echo "stories260K not found: skipped"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
case $eval_bin in */sgfp4-eval) ;; *) fail "the binary is not sgfp4-eval: $eval_bin" ;; esac
[ "$(basename "$(dirname "$eval_bin")")" != tests ] || fail "sgfp4-eval is built under tests/: $eval_bin"
rm -rf "$work" && mkdir -p "$work/build"
ln -s "$eval_bin" "$work/build/sgfp4-eval"

awk '/^## Building and running it/ { on = 1 } on && /^```sh/ { inside = 1; next }
     inside && /^```/ { exit } inside { print }' "$source_dir/docs/eval.md" >"$work/commands.txt"
[ -s "$work/commands.txt" ] || fail "no sh block under '## Building and running it' in docs/eval.md"
readme_build=$(awk '/^## Building by hand/ { on = 1 } on && /^```sh/ { inside = 1; next }
                    inside && /^```/ { exit } inside { sub(/ *#.*/, ""); print }' "$source_dir/README.md")

# The checkpoint llama2.c's export.py --version 0 writes: 7 int32, then the tensors in its order.
python3 - "$model" "$work/stories260K.bin" <<'EOF'
import json, math, struct, sys
src, dst = sys.argv[1:]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
c = json.loads(h.pop("__metadata__")["config"])
data = b[8 + n:]
def t(name):
    lo, hi = h[name]["data_offsets"]
    return data[lo:hi]
L = c["n_layers"]
out = [struct.pack("<7i", c["dim"], c["hidden_dim"], L, c["n_heads"], c["n_kv_heads"],
                   c["vocab_size"], c["seq_len"]), t("tok_embeddings.weight")]
for kind in ("attention_norm", "attention.wq", "attention.wk", "attention.wv", "attention.wo",
             "ffn_norm", "feed_forward.w1", "feed_forward.w2", "feed_forward.w3"):
    out += [t("layers.%d.%s.weight" % (l, kind)) for l in range(L)]
out.append(t("norm.weight"))
hs = c["dim"] // c["n_heads"]
freqs = [[p * 10000.0 ** (-2.0 * j / hs) for j in range(hs // 2)] for p in range(c["seq_len"])]
out.append(struct.pack("<%df" % (c["seq_len"] * hs // 2), *[math.cos(f) for r in freqs for f in r]))
out.append(struct.pack("<%df" % (c["seq_len"] * hs // 2), *[math.sin(f) for r in freqs for f in r]))
open(dst, "wb").write(b"".join(out))
EOF
[ "$(stat -c %s "$work/stories260K.bin")" -eq 1056540 ] ||
    fail "the checkpoint written here is not the 1,056,540 bytes of llama2.c's stories260K.bin"
cp "$tok" "$work/tok512.bin"

cd "$work"
ran=0
while IFS= read -r line; do
    command=${line%%#*}
    command=${command%"${command##*[! ]}"}
    [ -n "$command" ] || continue
    echo "\$ $command"
    case $command in
    ./scripts/install-deps.sh) continue ;; # the suite's setup ran it
    "cmake -S . -B build "*)
        grep -qxF -- "$command" <<<"$readme_build" || fail "not the README's configure line: $command"
        continue ;;
    "cmake --build build "*"--target sgfp4-eval")
        grep -qF -- 'cmake --build build -j"$(nproc)"' <<<"$readme_build" || fail "README builds otherwise"
        continue ;;
    "wget https://"*)
        name=${command##*/}
        [ -f "$name" ] || fail "a download this test has no stand-in for: $name"
        continue ;;
    build/sgfp4-eval\ *) ;;
    *) fail "a line this test does not know: $command" ;;
    esac
    if [ -n "$quick" ] && [[ $command != *--from-llama2c* ]]; then
        command=${command/sgfp4-eval /sgfp4-eval --sequences 8 --length 64 }
    fi
    bash -c "$command" 2>"stderr.txt" || { cat stderr.txt; fail "failed: $command"; }
    ran=$((ran + 1))
done <commands.txt
[ "$ran" -ge 2 ] || fail "the block ran $ran sgfp4-eval commands, want the conversion and the table"

# The conversion: the shared model's tensors bit for bit, and its config.
python3 - "$model" stories260K.safetensors <<'EOF' || fail "the converted model differs"
import json, struct, sys
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__")
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items()}, json.loads(meta["config"])
a, ca = read(sys.argv[1])
b, cb = read(sys.argv[2])
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
bad = [k for k in a if a[k] != b[k]]
assert not bad, bad
assert ca == cb, (ca, cb)
print("converted: %d tensors equal" % len(a))
EOF
grep -q "^| f32 | 32.0000 | 0.0000 | 0.0000 | 1.0000 |" table.md || { cat table.md; fail "no exact float32 row"; }
grep -q "^| Q4_0-style (reimpl.) | 4.6206 |" table.md || { cat table.md; fail "no Q4_0-style row"; }
grep -q "^| SGFP4 (Q4_0's bits) | 4.6" table.md || { cat table.md; fail "no SGFP4 row"; }
head -c 300 "$source_dir/tests/eval/stories260K_greedy200.txt" >want.txt
grep -qF "$(head -n 1 want.txt)" stderr.txt || { head -5 stderr.txt; fail "the greedy text is not llama2.c's"; }

# Refusals: an existing output, a truncated and a versioned checkpoint.
cp stories260K.safetensors before.safetensors
if build/sgfp4-eval --from-llama2c stories260K.bin stories260K.safetensors 2>err.txt; then
    fail "an existing output was replaced"
fi
cmp -s before.safetensors stories260K.safetensors || fail "a refused conversion changed the output"
grep -q "exists" err.txt || fail "the refusal does not say the output exists: $(cat err.txt)"
head -c 100000 stories260K.bin >short.bin
if build/sgfp4-eval --from-llama2c short.bin short.safetensors 2>err.txt; then
    fail "a truncated checkpoint was converted"
fi
grep -q "describes 1056540" err.txt || fail "truncated: $(cat err.txt)"
printf '24ka\001\000\000\000' >v1.bin
head -c 300 stories260K.bin >>v1.bin
if build/sgfp4-eval --from-llama2c v1.bin v1.safetensors 2>err.txt; then
    fail "a versioned export was converted"
fi
grep -q "versioned llama2.c export (version 1)" err.txt || fail "versioned: $(cat err.txt)"
[ ! -e short.safetensors ] && [ ! -e v1.safetensors ] || fail "a refused conversion left an output"
[ -z "$(find . -name '.*sgfp4-tmp-*')" ] || fail "temporary files left"
echo "docs/eval.md: $ran commands ran as written"
