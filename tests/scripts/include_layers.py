#!/usr/bin/env python3
"""The library's layers, checked on its #include "..." lines (docs/api.md, "Source layers").

Usage: include_layers.py REPO
       include_layers.py --self-test   (the check finds each kind of violation in a made-up tree)

Every folder of src/ has a place in LAYERS, bottom to top (the layer table of the project's
architecture, with common/ as the floor under all of them, and listing/ under the two kernel
layers decode/ and matvec/). A file may include headers of its own folder and of the folders
below it, never of one above, nor of a sibling
(folders that share a place: decode/ and matvec/); tools/ (the CLI, its file formats and
benchmarks) includes no src/ header at all: it uses the public API. No header includes
itself through others (an include circle), and no file name is used twice in src/ (a name
says which file it is, whatever the folder). A folder missing from LAYERS is an error too,
so a new one gets its place when it is added.
Prints every violation and exits 1, or prints a summary and exits 0.
"""
import os
import re
import sys

LAYERS = ["common", "format", "container", "listing", ("decode", "matvec"), "encode", "model",
          "vulkan"]
SAME_AS = {"vulkan_stub": "vulkan"}  # the Vulkan backend's "unavailable" build of its calls

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def includes(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def rank(folder):
    folder = SAME_AS.get(folder, folder)
    for i, layer in enumerate(LAYERS):
        if folder == layer or (isinstance(layer, tuple) and folder in layer):
            return i
    return None


def layer_name(layer):
    return "/".join(layer) if isinstance(layer, tuple) else layer


def check(repo):
    src = os.path.join(repo, "src")
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    errors = []
    edges = {}  # header -> headers it includes (src-relative paths)
    files = 0
    for folder in folders:
        if rank(folder) is None:
            errors.append(f"src/{folder}/: not in the layer table of {sys.argv[0]}")
            continue
        for name in sorted(os.listdir(os.path.join(src, folder))):
            if not name.endswith((".c", ".h")):
                continue
            files += 1
            here = f"{folder}/{name}"
            for number, target in includes(os.path.join(src, here)):
                top = target.split("/")[0] if "/" in target else None
                if top is None or top not in folders:
                    continue  # a public header (sgfp4.h) or a generated one
                if rank(top) is None:
                    continue  # reported above
                if rank(top) > rank(folder):
                    below = [layer_name(f) for f in LAYERS[:rank(folder)]] + [folder]
                    errors.append(f"src/{here}:{number}: includes {target}, a layer above "
                                  f"{folder}/ (it may include {', '.join(below)})")
                elif rank(top) == rank(folder) and SAME_AS.get(top, top) != SAME_AS.get(
                        folder, folder):
                    errors.append(f"src/{here}:{number}: includes {target}, of {top}/, a "
                                  f"sibling of {folder}/ (siblings include nothing of each "
                                  f"other: what both need goes a layer below)")
                edges.setdefault(here, set()).add(target)
    seen = {}  # file name -> its first path
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for name in sorted(names):
            path = os.path.relpath(os.path.join(root, name), repo)
            if name.endswith((".c", ".h")) and name in seen:
                errors.append(f"{path}: the file name of {seen[name]} again (file names are "
                              f"unique in src/)")
            seen.setdefault(name, path)
    tools = os.path.join(repo, "tools")
    for root, _, names in os.walk(tools):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            files += 1
            path = os.path.join(root, name)
            for number, target in includes(path):
                if "/" in target and target.split("/")[0] in folders:
                    errors.append(f"{os.path.relpath(path, repo)}:{number}: includes "
                                  f"src/{target}: tools use the public API only")
    # include circles among src headers
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                errors.append("include circle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node.endswith(".h") and node not in state:
            visit(node, [])
    return files, errors


def self_test():
    import tempfile
    tree = {
        "src/common/up.c": '#include "container/view.h"\n',     # upward
        "src/container/view.h": '#include "container/ring.h"\n',
        "src/container/ring.h": '#include "container/view.h"\n',  # a circle
        "src/container/ok.c": '#include "common/up.h"\n#include "sgfp4.h"\n',
        "src/common/up.h": "",
        "src/gadgets/g.c": "",                                     # not in the table
        "tools/t.c": '#include "decode/kernels.h"\n',             # tools past the API
        "src/decode/kernels.h": "",
        "src/matvec/plan.c": '#include "decode/kernels.h"\n',   # a sibling
        "src/container/plan.c": "",                               # a name used twice
    }
    with tempfile.TemporaryDirectory() as repo:
        for path, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(repo, path)), exist_ok=True)
            with open(os.path.join(repo, path), "w", encoding="utf-8") as f:
                f.write(text)
        _, errors = check(repo)
    wanted = ["src/common/up.c:1: includes container/view.h", "include circle:",
              "src/gadgets/: not in the layer table", "tools/t.c:1: includes src/decode",
              "src/matvec/plan.c:1: includes decode/kernels.h, of decode/, a sibling",
              "src/matvec/plan.c: the file name of src/container/plan.c again"]
    missing = [w for w in wanted if not any(e.startswith(w) for e in errors)]
    for w in missing:
        print(f"self-test: no error starting with {w!r} in {errors}")
    if len(errors) != len(wanted):
        print(f"self-test: {len(errors)} errors, {len(wanted)} wanted: {errors}")
    return 1 if missing or len(errors) != len(wanted) else 0


def main():
    if sys.argv[1] == "--self-test":
        return self_test()
    files, errors = check(sys.argv[1])
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"{files} files: every include goes to its own layer or one below "
          f"({' < '.join(layer_name(f) for f in LAYERS)}); tools use the public API only; "
          f"no include circles; no file name used twice in src/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
