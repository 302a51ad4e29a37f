#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docs/cli.md ("Outputs") and docs/python.md ("Outputs") list the output rules of every
writer in the same words: the two lists, each between its `<!-- output rules` and
`<!-- end of the output rules -->` lines, must be equal once the tool's `-f` is written
as Python's `force=True` and line breaks are ignored. The library runs one implementation
for both (sgfp4_model_output_open), so their documents must not drift apart either.

usage: output_rules_docs.py SOURCE_DIR"""

import re
import sys
from pathlib import Path


def rules(path):
    text = path.read_text()
    m = re.search(r"^<!-- output rules[^\n]*-->\n(.*?)^<!-- end of the output rules -->",
                  text, re.S | re.M)
    if not m:
        sys.exit(f"FAIL: {path}: no output rules between the markers")
    items = re.split(r"\n(?=- )", m.group(1).strip())
    return [" ".join(item.split()) for item in items]


def main():
    docs = Path(sys.argv[1]) / "docs"
    cli = [item.replace("-f", "force=True") for item in rules(docs / "cli.md")]
    py = rules(docs / "python.md")
    failed = False
    if len(cli) != len(py):
        print(f"FAIL: cli.md lists {len(cli)} rules, python.md {len(py)}")
        failed = True
    for k, (a, b) in enumerate(zip(cli, py)):
        if a != b:
            at = next(i for i in range(min(len(a), len(b)) + 1) if a[i:i + 1] != b[i:i + 1])
            print(f"FAIL: rule {k + 1} differs at character {at}:\n  cli.md:    ...{a[at:at + 80]}"
                  f"\n  python.md: ...{b[at:at + 80]}")
            failed = True
    if not failed:
        print(f"output rules: {len(cli)} rules, the same in cli.md and python.md")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
