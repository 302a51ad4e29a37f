#!/usr/bin/env bash
# python.readme_route: the README's way to `import sgfp4` works as written. Makes a fresh
# venv with scripts/python-venv.sh from this build (as ./scripts/example.sh does into
# build/venv), then runs the README's Python lines (the ```sh block of its "Python" section,
# with build/venv replaced by that venv) under the caller's PATH, which on CI machines may
# put another python3 (pyenv's) first; and `pip install ./python` on a copy of python/ leaves
# no build/ or *.egg-info there.
# usage: readme_route.sh SOURCE_DIR BUILD_DIR VENV_DIR
# SPDX-License-Identifier: MIT
set -euo pipefail
src=$1 build=$2 venv=$3
if [ -n "${SGFP4_README_SKIP:-}" ]; then
  echo "skipped: $SGFP4_README_SKIP"
  exit 77
fi
rm -rf "$venv"
"$src/scripts/python-venv.sh" "$venv" "$build"
lines=$(awk '/^## Python/ {in_section = 1; next}
             in_section && /^## / {exit}
             in_section && /^```sh$/ {in_block = 1; next}
             in_section && in_block && /^```$/ {exit}
             in_block {print}' "$src/README.md")
if [ -z "$lines" ] || ! grep -q 'import sgfp4' <<<"$lines"; then
  echo "README.md: no sh block with 'import sgfp4' in its '## Python' section" >&2
  exit 1
fi
lines=${lines//build\/venv/$venv}
echo "== the README's lines, build/venv = $venv:"
echo "$lines"
cd "$src"
out=$(env -u PYTHONPATH -u SGFP4_LIBRARY -u VIRTUAL_ENV bash -euo pipefail -c "$lines")
echo "$out"
version=$(sed -n 's/^project(sgfp4 VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
grep -qx "$version" <<<"$out" || { echo "expected the version $version" >&2; exit 1; }
# `pip install ./python` (docs/python.md) leaves nothing in the folder it builds from: done
# on a copy of python/ with the venv's pip, the copy holds no build/ or *.egg-info after
copy=$(mktemp -d "${TMPDIR:-/tmp}/sgfp4-pip.XXXXXX")
trap 'rm -rf "$copy"' EXIT
cp -R "$src/python" "$copy/python"
rm -rf "$copy/python/build" "$copy/python"/*.egg-info
(cd "$copy" && "$venv/bin/python3" -m pip install -q --no-index --no-build-isolation --no-deps \
    --force-reinstall ./python)
left=$(cd "$copy/python" && ls -d build ./*.egg-info 2>/dev/null || true)
[ -z "$left" ] || { echo "pip install ./python left in the source folder: $left" >&2; exit 1; }
echo "readme_route: 'import sgfp4' works after the README's lines; pip leaves python/ clean"
