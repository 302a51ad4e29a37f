#!/usr/bin/env bash
# Makes a Python environment in which `import sgfp4` works, offline and without a compiler
# for the package: a venv of Debian's python3 (which sees the python3-numpy that
# scripts/install-deps.sh installs) into which `cmake --install` puts libsgfp4 (and the
# sgfp4 tool) and pip installs the package in python/. Activate it with
# `. VENV/bin/activate`. Run scripts/install-deps.sh first (example.sh and test.sh do).
#
# usage: scripts/python-venv.sh [VENV [BUILD]]     defaults: build/venv build/release
#   BUILD is configured (Release) and built if it has no libsgfp4_model.so yet.
#   SGFP4_PYTHON: the interpreter to base the venv on (default /usr/bin/python3: an earlier
#   python3 on PATH, e.g. pyenv's, does not see Debian's numpy).
# SPDX-License-Identifier: MIT
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
build=${2:-build/release}
python=${SGFP4_PYTHON:-/usr/bin/python3}
if [ ! -e "$build/libsgfp4_model.so" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target sgfp4_model_shared sgfp4 >/dev/null
fi
"$python" -m venv --system-site-packages "$venv"
cmake --install "$build" --prefix "$venv" >/dev/null
# the package's build backend builds in a copy: the source tree stays clean
"$venv/bin/python3" -m pip uninstall -q -y sgfp4 >/dev/null 2>&1 || true
"$venv/bin/python3" -m pip install -q --no-index --no-build-isolation ./python
"$venv/bin/python3" -c 'import sgfp4; print("sgfp4", sgfp4.__version__, "with libsgfp4",
sgfp4.library_version(), "from", sgfp4.library_path())'
