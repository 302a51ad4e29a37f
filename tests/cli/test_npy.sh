#!/usr/bin/env bash
# The .npy reader of `sgfp4 encode` (tools/fileio/npy.c) parses the header as the Python dict
# literal it is: keys in any order, either quote, strings that hold anything (a string that
# reads "'fortran_order': False" does not hide the real key), unknown keys skipped with their
# values; and it refuses, with one line naming the reason, Fortran order, duplicate keys,
# structured dtypes, a malformed dict, and shapes whose byte size passes 2^64 (the size
# printed as it is, not wrapped).
# usage: test_npy.sh SGFP4 SCRATCH_DIR SOURCE_DIR
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
source_dir=$3
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
python3 - <<'PY'
import random, struct
random.seed(5)
data = struct.pack("<4096f", *[random.gauss(0, 1) for _ in range(4096)])
def npy(name, header, version=1):
    prefix = 10 if version == 1 else 12
    h = header + " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(h))
    open(name, "wb").write(b"\x93NUMPY" + bytes([version, 0]) + size + h.encode() + data)
ok = "'descr': '<f4', 'fortran_order': False, 'shape': (64, 64)"
npy("ok.npy", "{%s, }" % ok)
npy("v2.npy", "{%s, }" % ok, version=2)
npy("order.npy", "{'shape': (64, 64), 'fortran_order': False, 'descr': '<f4'}")
npy("quotes.npy", '{"descr": "<f4", "fortran_order": False, "shape": (64, 64,)}')
npy("spaces.npy", "{ 'descr' :'<f4' ,'fortran_order':False,'shape':( 64 ,64 ) }")
npy("long.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (64L, 64L)}")
npy("hidden-true.npy", "{'descr': '<f4', 'x': \"'fortran_order': True, 'shape': (1,)\", "
                       "'fortran_order': False, 'shape': (64, 64)}")
npy("extra.npy", "{'y': [1, 2.5, None, {'a': (True,)}], %s, 'z': 'it\\'s'}" % ok)
npy("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (64, 64), }")
npy("dup.npy", "{%s, 'shape': (64, 64)}" % ok)
npy("struct.npy", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (64, 64)}")
npy("f8.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (64, 32)}")
npy("nokey.npy", "{'descr': '<f4', 'shape': (64, 64)}")
npy("unterminated.npy", "{'descr': '<f4, 'fortran_order': False, 'shape': (64, 64)}")
npy("after.npy", "{%s} x" % ok)
npy("notdict.npy", "[%s]" % ok)
npy("rank3.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 32, 32)}")
npy("rank0.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': ()}")
npy("wrap.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}")
npy("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 99999999999999999999999)}")
npy("small.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 65)}")
PY
cp "$source_dir/tests/data/npy/fortran-order-hidden.npy" .

"$sgfp4" encode ok.npy -o ok.sgfp4 -q || fail "ok.npy does not encode"
for f in v2 order quotes spaces long hidden-true extra; do
    checks=$((checks + 1))
    if ! "$sgfp4" encode $f.npy -o $f.sgfp4 -q 2>err.txt; then
        fail "$f.npy: $(cat err.txt)"
    elif ! cmp -s ok.sgfp4 $f.sgfp4; then
        fail "$f.npy: read differently from ok.npy (another shape or data)"
    fi
done
# name | expected text of the one error line
while read -r f want; do
    checks=$((checks + 1))
    "$sgfp4" encode $f -o out.sgfp4 -q 2>err.txt
    rc=$?
    if [ $rc -ne 1 ] || ! grep -q -- "$want" err.txt || [ "$(wc -l <err.txt)" -ne 1 ]; then
        fail "$f: exit $rc, want 1 and '$want' in: $(cat err.txt)"
    fi
    [ -e out.sgfp4 ] && fail "$f: an output was written" && rm -f out.sgfp4
done <<'LIST'
fortran-order-hidden.npy Fortran order (fortran_order is True)
fortran.npy Fortran order
dup.npy a key twice
struct.npy structured dtype
f8.npy dtype <f8 not supported
nokey.npy no 'fortran_order'
unterminated.npy malformed
after.npy bytes after its dict
notdict.npy not a Python dict literal
rank3.npy must be 1-D or 2-D
rank0.npy must be 1-D or 2-D
wrap.npy shape 4294967296x4294967296 needs more than 2^64 (7.379e+19 bytes)
huge.npy larger than 2^64 - 1
small.npy 16384 data bytes, shape 64x65 needs 16640
LIST
finish npy
