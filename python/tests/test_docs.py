# SPDX-License-Identifier: MIT
"""docs/python.md's examples run as written: every ```python block, top to bottom, in one
namespace, in a fresh folder."""

import os
import re

import sgfp4  # noqa: F401 - the examples import it themselves; fail early if it cannot
from conftest import SOURCE_DIR


def test_the_examples_of_docs_python_md_run(tmp_path, capsys):
    text = (SOURCE_DIR / "docs" / "python.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 7
    namespace = {"__name__": "__docs__"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for k, code in enumerate(blocks):
            exec(compile(code, f"docs/python.md, example {k + 1}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "<sgfp4.Tensor v2 300x520" in out and "<sgfp4.Model plain, 4 tensors" in out
    assert "tensors_done=4, tensors_total=4" in out
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors", "model.sgfp4.safetensors",
                                            "restored.safetensors.zst"]
