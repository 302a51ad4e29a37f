# SPDX-License-Identifier: MIT
"""The package's PEP 517 build backend: setuptools' own (setuptools.build_meta), run on a
copy of the package's folder, so that `pip install ./python` (or any build of a wheel or an
sdist) leaves nothing in the source tree: setuptools writes build/ and sgfp4.egg-info/
beside pyproject.toml, here into the copy, which is removed afterwards. Editable installs
build in place, as they must (they point at the source)."""

import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools

# what a copy leaves out: earlier builds' leftovers and caches
_IGNORED = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache")


def _in_copy(hook, *args):
    """hook(*args) with the current folder a fresh copy of this one (paths in args must be
    absolute)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="sgfp4-build-") as scratch:
        copy = os.path.join(scratch, os.path.basename(here) or "python")
        shutil.copytree(here, copy, ignore=_IGNORED)
        os.chdir(copy)
        try:
            return hook(*args)
        finally:
            os.chdir(here)


def _absolute(path):
    return os.path.abspath(path) if path is not None else None


def get_requires_for_build_wheel(config_settings=None):
    return _in_copy(_setuptools.get_requires_for_build_wheel, config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return _in_copy(_setuptools.get_requires_for_build_sdist, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _in_copy(_setuptools.prepare_metadata_for_build_wheel,
                    _absolute(metadata_directory), config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _in_copy(_setuptools.build_wheel, _absolute(wheel_directory), config_settings,
                    _absolute(metadata_directory))


def build_sdist(sdist_directory, config_settings=None):
    return _in_copy(_setuptools.build_sdist, _absolute(sdist_directory), config_settings)


# editable installs: in place
build_editable = _setuptools.build_editable
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
