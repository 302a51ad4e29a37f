#!/bin/sh
# Regenerates the golden set into a scratch folder and checks that it equals the committed
# golden/ byte for byte (the generator is deterministic; a difference means golden/ is stale
# or the generator changed without regenerating).
# usage: check_regen.sh SOURCE_DIR SCRATCH_DIR
set -eu
src=$1
scratch=$2
rm -rf "$scratch"
python3 "$src/tools/gen_golden.py" --out "$scratch"
diff -r "$scratch" "$src/golden"
echo "golden/ is reproduced byte for byte"
