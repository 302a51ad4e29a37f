#!/usr/bin/env bash
# The CLI's limits on model inputs (docs/cli.md, "Limits"): each bomb ends in one clean,
# named error (exit 1, the [LIMIT] or [NOMEM] status, the option that raises the bound) within
# bounded memory (ulimit -v, where the build is not sanitized: ASan reserves terabytes of
# address space) and bounded disk (ulimit -f: a write past it kills the process with SIGXFSZ,
# which fails the test), leaving nothing in TMPDIR and no output; each option raises its
# bound; a sharded set's limits count over the whole set, not per shard.
# usage: test_limits.sh SGFP4 SCRATCH_DIR SOURCE_DIR SANITIZED(0|1)
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
source_dir=$3
sanitized=${4:-0}
repros=$source_dir/tests/data/model
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
mkdir -p tmp out
export TMPDIR=$scratch/tmp

# run MEMORY_KB FILE_KB ARGS...: the tool under the memory and file-size bounds (memory only
# when not sanitized); rc, the exit status.
run() {
    local mem=$1 fsize=$2
    shift 2
    (
        if [ "$sanitized" = 0 ]; then ulimit -v "$mem"; fi
        ulimit -f "$fsize"
        exec "$sgfp4" "$@"
    ) >stdout.txt 2>"$err"
    rc=$?
}

# expect_error WHAT STATUS TEXT: the last run failed with exit 1 and one line naming STATUS and
# TEXT, and left nothing behind.
expect_error() {
    checks=$((checks + 1))
    if [ "$rc" -ne 1 ]; then
        fail "$1: exit $rc (want 1): $(cat "$err")"
    elif ! grep -q -- "\[$2\]" "$err" || ! grep -q -- "$3" "$err"; then
        fail "$1: want [$2] and '$3' in: $(cat "$err")"
    elif [ "$(wc -l <"$err")" -ne 1 ]; then
        fail "$1: more than one line: $(cat "$err")"
    fi
    if [ -n "$(find tmp out -mindepth 1)" ]; then
        fail "$1: left behind: $(find tmp out -mindepth 1)"
        find tmp out -mindepth 1 -delete
    fi
}
expect_ok() {
    checks=$((checks + 1))
    [ "$rc" -eq 0 ] || fail "$1: exit $rc: $(cat "$err")"
}

# ---- a zstd bomb: 33 KB that inflate to 1 GiB ----------------------------------------------
bomb=$repros/bomb-1GiB.safetensors.zst
# 400 MB of address space, 100 MB of file size: the default ratio stops at 64 MiB
for cmd in "info $bomb" "verify $bomb" "decode $bomb -o out/d.safetensors" \
           "encode $bomb -o out/q.sgfp4.safetensors"; do
    run 400000 100000 $cmd
    expect_error "bomb: $cmd" LIMIT "zstd bomb? --max-zstd-ratio raises the bound"
done
# a higher ratio meets the next bound, the absolute one
run 400000 100000 verify "$bomb" --max-zstd-ratio 100000 --max-decompressed 80M
expect_error "bomb, --max-decompressed" LIMIT "more than the limit of 83886080 bytes (--max-decompressed)"
# a raised ratio and a share of the free space that is too small for it
free_kb=$(df -Pk "$TMPDIR" | awk 'NR == 2 {print $4}')
if [ "$free_kb" -lt 20000000 ]; then # below 20 GB free, 1% (written before it stops) is small
    run 400000 $((free_kb / 90 + 1000)) verify "$bomb" --max-zstd-ratio 100000 --max-temp-space 1
    expect_error "bomb, --max-temp-space" LIMIT "1% of the"
fi

# ---- overlapping v2 records: 6 KB that claim a 1024 x 1024 tensor ------------------------
amp=$repros/amp-1024x1024.sgfp4.safetensors
run 400000 100000 decode "$amp" -o out/d.safetensors
expect_error "amplification: decode" LIMIT "default limit of 394240.*--max-output-elements"
run 400000 100000 verify "$amp"
expect_error "amplification: verify" LIMIT "more than the default limit of 394240"
run 400000 100000 verify "$amp" --json
expect_error "amplification: verify --json" LIMIT "max-output-elements"
grep -q '"ok": false' stdout.txt || fail "amplification: verify --json printed: $(cat stdout.txt)"
run 400000 100000 decode "$amp" --tensor layer0.weight -o out/t.npy
expect_error "amplification: decode --tensor" LIMIT "the tensor's container decodes to 1048576"
run 400000 100000 decode "$amp" -o out/d.safetensors --max-output-elements 1000000
expect_error "amplification: decode, a lower limit" LIMIT "more than the limit of 1000000 (--max-output-elements)"
run 400000 100000 decode "$amp" -o out/d.safetensors --max-output-elements 1M -q
expect_ok "amplification: decode --max-output-elements 1M"
run 400000 100000 verify "$amp" --max-output-elements 1M
expect_ok "amplification: verify --max-output-elements 1M"
rm -f out/d.safetensors

# ---- headers, tensor counts and decompressed sizes: per file, and over a set -------------
python3 - <<'EOF'
import json, struct
def zstd_raw(data):
    """A standard zstd frame of raw (stored) blocks: no compression needed to make one."""
    out = bytearray(struct.pack("<I", 0xFD2FB528)) + bytes([0x00, 0x50])  # window 1 MiB
    blocks = [data[k:k + 131072] for k in range(0, len(data), 131072)] or [b""]
    for k, b in enumerate(blocks):
        out += (int(k == len(blocks) - 1) | len(b) << 3).to_bytes(3, "little") + b
    return bytes(out)
def model(name, tensors, pad, zst=False):
    header, data = {"__metadata__": {"pad": "x" * pad}}, b""
    for t in tensors:
        header[t] = {"dtype": "F32", "shape": [4], "data_offsets": [len(data), len(data) + 16]}
        data += struct.pack("<4f", 1, 2, 3, 4)
    text = json.dumps(header).encode()
    body = struct.pack("<Q", len(text)) + text + data
    open(name, "wb").write(zstd_raw(body) if zst else body)
    return {t: name for t in tensors}
# one file with a 600,000-byte header
model("big-header.safetensors", ["t"], 600000)
# a set of two shards, each with a 600,000-byte header and 3 tensors
wm = model("s-00001-of-00002.safetensors", ["a", "b", "c"], 600000)
wm.update(model("s-00002-of-00002.safetensors", ["d", "e", "f"], 600000))
json.dump({"metadata": {}, "weight_map": wm}, open("s.safetensors.index.json", "w"))
# a set of two zstd shards, each decompressing to about 1.2 MB
wm = model("z-00001-of-00002.safetensors", ["a", "b"], 1200000, zst=True)
wm.update(model("z-00002-of-00002.safetensors", ["c", "d"], 1200000, zst=True))
json.dump({"metadata": {}, "weight_map": wm}, open("z.safetensors.index.json", "w"))
EOF
run 400000 100000 info big-header.safetensors --max-header-bytes 500K
expect_error "header: --max-header-bytes 500K" LIMIT "exceeds the limit of 512000 bytes (--max-header-bytes raises it)"
run 400000 100000 info big-header.safetensors --max-header-bytes 1M
expect_ok "header: --max-header-bytes 1M"
for shard in s-00001-of-00002 s-00002-of-00002; do
    run 400000 100000 verify $shard.safetensors --max-header-bytes 1M --max-tensors 4
    expect_ok "set: $shard alone within 1M header bytes and 4 tensors"
done
run 400000 100000 verify s.safetensors.index.json --max-header-bytes 1M
expect_error "set: header bytes over the set" LIMIT "counted over the set"
run 400000 100000 verify s.safetensors.index.json --max-tensors 4
expect_error "set: tensors over the set" LIMIT "more than 1 tensors.*--max-tensors.*counted over the set: .* 3 tensors"
run 400000 100000 verify s.safetensors.index.json --max-header-bytes 2M --max-tensors 6
expect_ok "set: within 2M header bytes and 6 tensors"
for shard in z-00001-of-00002 z-00002-of-00002; do
    run 400000 100000 verify $shard.safetensors --max-decompressed 2M
    expect_ok "zstd set: $shard alone within 2M decompressed"
done
run 400000 100000 verify z.safetensors.index.json --max-decompressed 2M
expect_error "zstd set: decompressed over the set" LIMIT "--max-decompressed.*counted over the set"
run 400000 100000 verify z.safetensors.index.json --max-decompressed 3M
expect_ok "zstd set: within 3M decompressed"

# ---- the reader's fixed limits name no option (none raises them) ------------------------
python3 - <<'EOF2'
import json, struct
def model(name, shape):
    text = json.dumps({"t": {"dtype": "U8", "shape": shape, "data_offsets": [0, 1]}}).encode()
    open(name, "wb").write(struct.pack("<Q", len(text)) + text + b"\0")
model("rank17.safetensors", [1] * 17)
model("rank70.safetensors", [1] * 70)
EOF2
for f in rank17 rank70; do
    run 400000 100000 verify $f.safetensors --max-header-bytes 1G
    expect_error "fixed limit: $f" LIMIT "dimensions\\|rank"
    grep -q -- "--max-" "$err" && fail "fixed limit: $f: names an option that does not raise it: $(cat "$err")"
done

# ---- a 99 MB header in 250 MB of address space: out of memory, said so --------------------
if [ "$sanitized" = 0 ]; then
    python3 - <<'EOF'
import struct
text = b'{"__metadata__":{"k":"' + b"x" * 10 + b'"}' + b"".join(
    b',"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % k for k in range(1650000)) + b"}"
open("huge-header.safetensors", "wb").write(struct.pack("<Q", len(text)) + text)
EOF
    for cmd in info verify; do
        run 250000 100000 $cmd huge-header.safetensors --max-tensors 2000000
        checks=$((checks + 1))
        if [ "$rc" -ne 1 ] || ! grep -q 'NOMEM' "$err" || ! grep -qi 'memory' "$err"; then
            fail "99 MB header in 250 MB: $cmd: exit $rc: $(cat "$err")"
        fi
    done
fi

# ---- bad values of the options ---------------------------------------------------------------
for bad in "--max-header-bytes 0" "--max-header-bytes 12Q" "--max-tensors -1" \
           "--max-zstd-ratio 0" "--max-temp-space 101" "--max-decompressed 99999999999T" \
           "--max-output-elements x"; do
    run 400000 100000 decode "$amp" -o out/d.safetensors $bad
    checks=$((checks + 1))
    [ "$rc" -eq 2 ] || fail "$bad: exit $rc (want 2): $(cat "$err")"
done
finish limits
