#!/usr/bin/env bash
# The CLI's outputs never destroy a user's file (docs/cli.md, "Outputs"):
#   - an output that is the same file as an input (the name itself, ./name, a symbolic or a
#     hard link, a set's index or shard) is refused, even with -f;
#   - an existing output is refused without -f, and replaced with -f keeping its permissions;
#   - a folder, a missing folder, a dangling link are refused before any work (the inputs
#     here fail in the work itself, so the message proves which check came first);
#   - devices, FIFOs, /dev/stdout, /proc/self/fd/N are written in place, never replaced;
#     a terminal is refused without -f; a symbolic link is written through;
#   - temporary names fit NAME_MAX, even for outputs whose names are near it;
#   - SIGINT, SIGTERM, SIGHUP mid-write remove every temporary file (one file, a set); a
#     SIGKILL leaves no partial file under the final name, and the next run over the same
#     output removes its leftover, but never a file another live run holds, a file of another
#     user, a link or a file with two names.
# Every refusal: exit 1, one line on stderr, the inputs byte for byte as they were, no
# temporary file.
# usage: test_outputs.sh SGFP4 SCRATCH_DIR SOURCE_DIR
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
source_dir=$3
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
temps() { find "${1:-.}" -name '.*.sgfp4-tmp-*' 2>/dev/null; }
digest() { cat "$@" | sha256sum | cut -d' ' -f1; }

# A refusal: exit 1, one line naming `want`, the files $inputs unchanged, no temporary file.
refused() { # WANT ARGS...
    local want=$1
    shift
    local before
    before=$(digest $inputs)
    run "$@"
    if [ "$rc" -ne 1 ]; then fail "sgfp4 $*: exit $rc, want 1: $(cat "$err")"; return; fi
    [ "$(wc -l <"$err")" -eq 1 ] || { fail "sgfp4 $*: not one line: $(cat "$err")"; return; }
    grep -q -- "$want" "$err" || { fail "sgfp4 $*: no '$want' in: $(cat "$err")"; return; }
    [ "$(digest $inputs)" = "$before" ] || { fail "sgfp4 $*: an input changed"; return; }
    [ -z "$(temps)" ] || { fail "sgfp4 $*: temporary files left: $(temps)"; return; }
    ok
}

# ---- inputs ------------------------------------------------------------------------------
python3 - <<'EOF'
import struct, random
random.seed(5)
w = [random.gauss(0, 0.02) for _ in range(256 * 256)]
open("w.f32", "wb").write(struct.pack("<%df" % len(w), *w))
w[1000] = float("nan")       # fails in the encoder, after the output checks
open("nan.f32", "wb").write(struct.pack("<%df" % len(w), *w))
EOF
"$sgfp4" encode w.f32 --shape 256x256 -o w.sgfp4 -q || fail "encode w.f32"
"$sgfp4" example -o m.safetensors --layers 1 --dim 128 --ffn 256 --vocab 512 -q ||
    fail "example"
"$sgfp4" encode m.safetensors -o m.sgfp4.safetensors -q || fail "encode m.safetensors"
mkdir -p set
python3 "$source_dir/tests/model/make_set.py" m.safetensors set 2 >/dev/null || fail "make_set"
inputs="w.f32 w.sgfp4 m.safetensors m.sgfp4.safetensors set/* policy.safetensors"
echo '{"rules": []}' >policy.safetensors

# ---- an output that is an input ----------------------------------------------------------
ln -s w.f32 link.f32
ln w.f32 hard.f32
for out in w.f32 ./w.f32 "$scratch/w.f32" link.f32 hard.f32; do
    refused "same file as the input" encode w.f32 --shape 256x256 -o "$out"
    refused "same file as the input" encode w.f32 --shape 256x256 -o "$out" -f
done
refused "same file as the input" decode w.sgfp4 --shape 256x256 -o w.sgfp4 -f
refused "same file as the input" encode m.safetensors -o ./m.safetensors -f
refused "same file as the input" decode m.sgfp4.safetensors -o m.sgfp4.safetensors -f
refused "same file as the input" encode m.safetensors --policy policy.safetensors \
    -o policy.safetensors -f

refused "same file as the input" info w.sgfp4 --shape 256x256 --map w.sgfp4 -f
refused "same file as the input" info w.sgfp4 --shape 256x256 --against w.f32 --map w.f32 -f
# a set: its index, and a shard reached through a link in the output's folder
refused "same file as the input" encode set/model.safetensors.index.json \
    -o set/model.safetensors.index.json -f
mkdir -p trap
ln -s ../set/model-00001-of-00002.safetensors trap/model-00001-of-00002.sgfp4.safetensors
refused "same file as the input" encode set/model.safetensors.index.json \
    -o trap/model.sgfp4.safetensors.index.json -f
[ ! -e trap/model.sgfp4.safetensors.index.json ] && [ ! -e trap/model-00002-of-00002.sgfp4.safetensors ] &&
    ok || fail "a refused set left files"
rm -rf trap link.f32 hard.f32

# ---- existing outputs: -f, permissions -------------------------------------------------
cp w.sgfp4 old.sgfp4
echo keep >exists.sgfp4
refused "already exists" encode w.f32 --shape 256x256 -o exists.sgfp4
[ "$(cat exists.sgfp4)" = keep ] && ok || fail "an existing output changed without -f"
echo keep >old.sgfp4.safetensors
refused "already exists" encode m.safetensors -o old.sgfp4.safetensors
refused "already exists" decode m.sgfp4.safetensors -o old.sgfp4.safetensors
refused "already exists" example -o exists.sgfp4
refused "already exists" info w.sgfp4 --shape 256x256 --map exists.sgfp4
chmod 640 exists.sgfp4
run encode w.f32 --shape 256x256 -o exists.sgfp4 -f -q
[ "$rc" -eq 0 ] && cmp -s exists.sgfp4 w.sgfp4 && [ "$(stat -c %a exists.sgfp4)" = 640 ] && ok ||
    fail "-f: exit $rc, or the replaced file lost its mode ($(stat -c %a exists.sgfp4))"
chmod 600 old.sgfp4.safetensors
run encode m.safetensors -o old.sgfp4.safetensors -f -q
[ "$rc" -eq 0 ] && [ "$(stat -c %a old.sgfp4.safetensors)" = 600 ] && ok ||
    fail "model -f: exit $rc, mode $(stat -c %a old.sgfp4.safetensors)"
(umask 027 && "$sgfp4" encode w.f32 --shape 256x256 -o new.sgfp4 -q)
[ "$(stat -c %a new.sgfp4)" = 640 ] && ok || fail "a new file ignores the umask: $(stat -c %a new.sgfp4)"
rm -f new.sgfp4 old.sgfp4 old.sgfp4.safetensors exists.sgfp4

# ---- checked before any work -------------------------------------------------------------
# nan.f32 and a model with a NaN fail inside the job: a message about the output means the
# output was checked first.
python3 - <<'EOF'
import json, struct
n = 64 * 64
data = struct.pack("<%df" % n, *([0.01] * 100 + [float("nan")] + [0.01] * (n - 101)))
h = json.dumps({"w": {"dtype": "F32", "shape": [64, 64], "data_offsets": [0, len(data)]}}).encode()
open("nan.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
EOF
run encode nan.f32 --shape 256x256 -o nan.sgfp4
[ "$rc" -eq 1 ] && grep -q 'is NaN' "$err" && ok || fail "nan.f32 does not fail in the encoder"
run encode nan.safetensors -o nan.sgfp4.safetensors
[ "$rc" -eq 1 ] && grep -qi 'nan\|non-finite' "$err" && ok || fail "nan.safetensors: $(cat "$err")"
mkdir -p folder
for out in . folder folder/ /tmp; do
    refused "is a directory" encode nan.f32 --shape 256x256 -o "$out"
done
refused "is a directory" encode nan.safetensors -o folder
refused "is a directory" decode m.sgfp4.safetensors -o .
refused "no such folder" encode nan.f32 --shape 256x256 -o missing/x.sgfp4
refused "no such folder" encode nan.safetensors -o missing/x.sgfp4.safetensors
refused "no such folder" encode nan.safetensors -o missing/model.sgfp4.safetensors.index.json
ln -s nowhere/x.sgfp4 dangling.sgfp4
refused "missing file" encode nan.f32 --shape 256x256 -o dangling.sgfp4 -f
rm -f dangling.sgfp4
[ -z "$(find / -maxdepth 1 -name '.*sgfp4-tmp-*' 2>/dev/null)" ] && ok ||
    fail "a temporary file in / (the folder above -o /tmp)"

# ---- written in place: devices, FIFOs, descriptors, terminals ----------------------------
"$sgfp4" decode w.sgfp4 --shape 256x256 -o ref.f32 -q
run decode w.sgfp4 --shape 256x256 -o /dev/null
[ "$rc" -eq 0 ] && [ -c /dev/null ] && ok || fail "-o /dev/null: exit $rc, or it is no device now"
run encode m.safetensors -o /dev/null -q
[ "$rc" -eq 0 ] && [ -c /dev/null ] && ok || fail "model -o /dev/null: exit $rc: $(cat "$err")"
mkfifo pipe
cat pipe >from-fifo.f32 &
reader=$!
run decode w.sgfp4 --shape 256x256 -o pipe
wait $reader
[ "$rc" -eq 0 ] && [ -p pipe ] && cmp -s from-fifo.f32 ref.f32 && ok ||
    fail "-o FIFO: exit $rc, or the FIFO was replaced, or other bytes"
"$sgfp4" decode w.sgfp4 --shape 256x256 -o /proc/self/fd/3 3>from-fd.f32 2>"$err"
cmp -s from-fd.f32 ref.f32 && ok || fail "-o /proc/self/fd/3: $(cat "$err")"
"$sgfp4" decode w.sgfp4 --shape 256x256 -o /dev/stdout >from-stdout.f32 2>"$err"
cmp -s from-stdout.f32 ref.f32 && ok || fail "-o /dev/stdout: $(cat "$err")"
# a terminal: refused without -f (script gives the command one)
if script -qec "$sgfp4 decode w.sgfp4 --shape 256x256 -o -" /dev/null >tty.txt 2>&1; then
    fail "binary output to a terminal was not refused"
else
    grep -q 'terminal' tty.txt && ok || fail "terminal refusal: $(cat tty.txt)"
fi
script -qec "$sgfp4 decode w.sgfp4 --shape 256x256 -o /dev/tty -f -q" /dev/null >/dev/null 2>&1 &&
    ok || fail "-f does not force a terminal output"
rm -f pipe from-*.f32 tty.txt
# a symbolic link is written through: the target replaced (with -f), the link kept
cp ref.f32 target.f32
ln -s target.f32 out-link.f32
refused "already exists" decode w.sgfp4 --shape 256x256 -o out-link.f32 --dtype f16
run decode w.sgfp4 --shape 256x256 -o out-link.f32 --dtype f16 -f
[ "$rc" -eq 0 ] && [ -L out-link.f32 ] && [ "$(stat -c %s target.f32)" -eq $((256 * 256 * 2)) ] &&
    ok || fail "a link output: exit $rc, or the link was replaced"
rm -f target.f32 out-link.f32

# ---- names near NAME_MAX -----------------------------------------------------------------
long=$(printf 'w%.0s' $(seq 1 249)).sgfp4          # 255 bytes
run encode w.f32 --shape 256x256 -o "$long" -q
[ "$rc" -eq 0 ] && cmp -s "$long" w.sgfp4 && ok || fail "a 255-byte output name: $(cat "$err")"
run encode w.f32 --shape 256x256 -o "$long" -q -f
[ "$rc" -eq 0 ] && [ -z "$(temps)" ] && ok || fail "replacing a 255-byte name: $(cat "$err")"
wide=$(printf 'é%.0s' $(seq 1 124)).sgfp4          # 248 bytes of two-byte characters + 6
run encode w.f32 --shape 256x256 -o "$wide" -q
[ "$rc" -eq 0 ] && [ -e "$wide" ] && ok || fail "a 254-byte UTF-8 name: $(cat "$err")"
rm -f "$long" "$wide"

# ---- signals -----------------------------------------------------------------------------
# A job long enough to interrupt: a one-layer example model (6 M weights) and its shards. Signals
# are sent once the job's first temporary file exists (an output is opened before the work),
# and a little later, mid-write. env --default-signal undoes the SIG_IGN that a script gives
# its background jobs for SIGINT (which the tool otherwise respects, as nohup expects).
"$sgfp4" example -o big.safetensors --layers 1 -q
mkdir -p bigset
python3 "$source_dir/tests/model/make_set.py" big.safetensors bigset 3 >/dev/null
mkdir -p sig
interrupt() { # SIGNAL DELAY OUT ARGS...
    local sig=$1 delay=$2 out=$3
    shift 3
    env --default-signal=INT,QUIT "$sgfp4" "$@" -o "$out" -q 2>"$err" &
    local pid=$! waited=0
    while [ -z "$(temps sig)" ] && [ $waited -lt 200 ] && kill -0 $pid 2>/dev/null; do
        sleep 0.02
        waited=$((waited + 1))
    done
    sleep "$delay"
    kill -s "$sig" $pid 2>/dev/null
    wait $pid 2>/dev/null
    local status=$?
    if [ "$status" -eq 0 ]; then
        echo "note: the job ended before SIG$sig ($out)"
        rm -rf sig/* sig/.??* 2>/dev/null
        return
    fi
    [ "$status" -gt 128 ] || fail "SIG$sig: exit $status (not killed by the signal): $(cat "$err")"
    local left
    left=$(ls -A sig)
    if [ -n "$left" ] && [ -z "$(temps sig)" ]; then
        # On a loaded machine the signal can land after the last rename: then what is there
        # must be the complete output, the same as an uninterrupted run's.
        rm -rf sig-ref && mkdir sig-ref
        "$sgfp4" "$@" -o "sig-ref/${out#sig/}" -q 2>/dev/null
        if [ "$left" = "$(ls -A sig-ref)" ] && (cd sig && for f in *; do
            cmp -s "$f" "../sig-ref/$f" || exit 1; done); then
            echo "note: SIG$sig came after the output was complete ($out)"
            left=
        fi
        rm -rf sig-ref
    fi
    [ -z "$left" ] && ok || fail "SIG$sig mid-write of $out left: $left"
    rm -rf sig/* sig/.??* 2>/dev/null
}
for sig in INT TERM HUP; do
    interrupt $sig 0.3 sig/big.sgfp4.safetensors encode big.safetensors
    interrupt $sig 0.3 sig/model.sgfp4.safetensors.index.json encode bigset/model.safetensors.index.json
done
interrupt INT 0.3 sig/big.sgfp4.safetensors.zst encode big.safetensors
"$sgfp4" encode big.safetensors -o big.sgfp4.safetensors -q
interrupt TERM 0.02 sig/restored.safetensors decode big.sgfp4.safetensors
interrupt INT 0.1 sig/w.sgfp4 encode big.safetensors --tensor model.embed_tokens.weight
# a signal ignored by whoever started the tool stays ignored (nohup): the job completes
(trap '' HUP && "$sgfp4" encode m.safetensors -o sig/nohup.sgfp4.safetensors -q & pid=$!;
 sleep 0.05; kill -HUP $pid 2>/dev/null; wait $pid) && [ -s sig/nohup.sgfp4.safetensors ] &&
    ok || fail "an ignored SIGHUP killed the job"
rm -f sig/nohup.sgfp4.safetensors

# SIGKILL: the final name never holds a partial file; the next run removes the leftover.
"$sgfp4" encode big.safetensors -o sig/k.sgfp4.safetensors -q &
pid=$!
while [ -z "$(temps sig)" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done
sleep 0.2
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
if [ -e sig/k.sgfp4.safetensors ]; then
    cmp -s sig/k.sgfp4.safetensors big.sgfp4.safetensors && ok ||
        fail "SIGKILL left a partial file under the final name"
else
    [ -n "$(temps sig)" ] && ok || fail "SIGKILL mid-write left no temporary file (too fast?)"
fi
# leftovers the next run must keep: a live writer's (locked), another user's, a link, a
# file with two names; and one it removes: a plain leftover of a dead run
prefix=sig/.k.sgfp4.safetensors.sgfp4-tmp-
touch "${prefix}dead01"
touch "${prefix}live01" && flock "${prefix}live01" sleep 30 &
holder=$!
touch "${prefix}other1" && chown nobody "${prefix}other1" 2>/dev/null
ln -s ../w.f32 "${prefix}link01"
touch "${prefix}hard01" && ln "${prefix}hard01" sig/hard-link-of-leftover
sleep 0.2
run encode big.safetensors -o sig/k.sgfp4.safetensors -f -v
kept=$(cd sig && ls -A | sort | tr '\n' ' ')
[ "$rc" -eq 0 ] && cmp -s sig/k.sgfp4.safetensors big.sgfp4.safetensors && ok ||
    fail "the run after a SIGKILL: exit $rc: $(cat "$err")"
[ ! -e "${prefix}dead01" ] && [ -z "$(cd sig && ls -A | grep -- '-tmp-' | grep -v 'live01\|other1\|link01\|hard01')" ] &&
    ok || fail "stale leftovers were not removed: $kept"
for keep in live01 link01 hard01; do
    [ -e "${prefix}$keep" ] || [ -L "${prefix}$keep" ] && ok || fail "removed ${prefix}$keep"
done
if [ "$(stat -c %U "${prefix}other1")" = nobody ]; then
    [ -e "${prefix}other1" ] && ok || fail "removed another user's file"
fi
grep -q 'removed .* temporary file' "$err" && ok || fail "-v does not say what it removed"
kill $holder 2>/dev/null
wait $holder 2>/dev/null
[ -e w.f32 ] && ok || fail "the link's target was removed"

finish outputs
