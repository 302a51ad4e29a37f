# SPDX-License-Identifier: MIT
"""Shared fixtures of the binding's tests.

Environment (CTest sets it: tests/cmake/python.cmake):
  SGFP4_LIBRARY      the libsgfp4_model.so under test (the binding's own variable)
  SGFP4_CLI          the sgfp4 tool of the same build (bit-identity checks; skipped without)
  SGFP4_SOURCE_DIR   the source tree (golden/, docs/, include/); default: beside this folder
  SGFP4_SHARED_DIR   the shared/ folder with real weights (tests that need it skip without)
  SGFP4_PY_SANITIZED 1 when the library is an ASan/UBSan build (measurements of the C heap
                     are meaningless there and skip)
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("SGFP4_SOURCE_DIR",
                                 Path(__file__).resolve().parent.parent.parent))
SHARED_DIR = Path(os.environ.get("SGFP4_SHARED_DIR", SOURCE_DIR.parent / "shared"))
SANITIZED = os.environ.get("SGFP4_PY_SANITIZED") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "shared: needs ../shared (real weights)")


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


@pytest.fixture(scope="session")
def cli():
    """Runs the sgfp4 tool: cli(args...) -> CompletedProcess (text), never raising."""
    path = os.environ.get("SGFP4_CLI") or shutil.which("sgfp4")
    if not path or not os.path.exists(path):
        pytest.skip("no sgfp4 tool (set SGFP4_CLI): the bit-identity checks need it")

    def run(*args, check=True):
        # The tool carries its own sanitizer runtime (if any): the one preloaded into this
        # interpreter in a sanitizer build must not be preloaded into it too.
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        p = subprocess.run([path, *map(str, args)], capture_output=True, env=env)
        if check and p.returncode != 0:
            raise AssertionError(f"sgfp4 {' '.join(map(str, args))} failed "
                                 f"({p.returncode}): {p.stderr.decode()}")
        return p
    run.path = path
    return run


@pytest.fixture(scope="session")
def golden():
    """(golden folder, list of vectors of golden/manifest.json)."""
    folder = SOURCE_DIR / "golden"
    with open(folder / "manifest.json") as f:
        return folder, json.load(f)["vectors"]


@pytest.fixture(scope="session")
def weights_dir():
    d = SHARED_DIR / "weights"
    if not d.is_dir():
        pytest.skip(f"{d} is absent: the real-weight tests need ../shared")
    return d


@pytest.fixture(scope="session")
def stories(weights_dir):
    p = weights_dir / "stories260K" / "stories260K.safetensors"
    if not p.exists():
        pytest.skip(f"{p} is absent")
    return p


_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    """A file whose every test was skipped exits 77, which CTest reports as skipped
    (SKIP_RETURN_CODE), not as passed."""
    if exitstatus == 0 and _outcomes["skipped"] and not _outcomes["passed"] \
            and not _outcomes["failed"]:
        session.exitstatus = 77
