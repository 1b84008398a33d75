#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the tree against the layer map of docs/design.md.

Three rules, each printed with the offending lines:
  1. every quoted #include goes to the file's own layer or to a layer below it (LAYERS, bottom
     first), so no include cycle can form between layers;
  2. no include cycle between the folders of one layer (transports/host <-> transports/net);
  3. no source file past MAX_LINES lines.
The layer order is cmake/Layers.cmake's, whose include paths make the compiler refuse an upward
include too; this script is the second check, which also sees headers no source includes. Run
from anywhere: `python3 scripts/check_layers.py [root]` (exit status 1 on a violation). CI runs it
as the test arch.layers.
"""
import os
import re
import sys

# Bottom first. A layer may include from itself and from any layer before it in this list: the
# folders of cmake/Layers.cmake's SSC_LAYER_MAP, the order the build enforces through include
# paths. include/ is the public C API: every layer may include it.
def read_layer_map(root):
    with open(os.path.join(root, "cmake", "Layers.cmake"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^set\(SSC_LAYER_MAP\b(.*?)^\)", text, re.M | re.S)
    if m is None:
        sys.exit("check_layers: cmake/Layers.cmake has no set(SSC_LAYER_MAP ...)")
    words = [w for line in m.group(1).splitlines() for w in line.split("#")[0].split()]
    if len(words) % 2:
        sys.exit("check_layers: cmake/Layers.cmake's SSC_LAYER_MAP is not (folder target) pairs")
    return words[0::2]


LAYERS = ["include"] + read_layer_map(
    os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
# Folders outside the library: they may include any layer, and nothing in the library may
# include them.
OUTSIDE = ["tests", "perf", "tools"]
SOURCE_DIRS = ["include", "src", "transports", "tuner", "tests", "perf", "tools"]
EXTENSIONS = (".h", ".hpp", ".cuh", ".cc", ".cpp", ".cu", ".c")
MAX_LINES = 600
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for name in LAYERS + OUTSIDE:
        if path == name or path.startswith(name + "/"):
            if best is None or len(name) > len(best):
                best = name
    return best


def rank_of(layer):
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


def resolve(root, inc):
    for base in ("", "include"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def sources(root):
    for top in SOURCE_DIRS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in files:
                if f.endswith(EXTENSIONS):
                    yield os.path.relpath(os.path.join(d, f), root)


def strongly_connected(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if len(sys.argv) > 1:
        root = sys.argv[1]
    errors = []
    folder_edges = {}
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MAX_LINES and layer_of(path) is not None:
            errors.append(f"{path}: {lines} lines (at most {MAX_LINES}: split it by job)")
        mine = layer_of(path)
        if mine is None:
            continue
        for inc in INCLUDE.findall(text):
            target = resolve(root, inc)
            if target is None:
                continue  # a system or generated header
            theirs = layer_of(target)
            if theirs is None:
                continue
            if theirs in OUTSIDE and mine not in OUTSIDE:
                errors.append(f"{path}: includes {inc}, which is outside the library ({theirs})")
            elif mine not in OUTSIDE and theirs != mine and rank_of(theirs) > rank_of(mine):
                errors.append(f"{path}: layer {mine} includes {inc} from layer {theirs}, "
                              f"which sits above it")
            a, b = os.path.dirname(path), os.path.dirname(target)
            if a != b and theirs == mine and mine not in OUTSIDE:
                folder_edges.setdefault(a, {}).setdefault(b, []).append(f"{path} -> {inc}")
    graph = {a: set(bs) for a, bs in folder_edges.items()}
    for comp in strongly_connected(graph):
        detail = [line for a in comp for b in comp for line in folder_edges.get(a, {}).get(b, [])]
        errors.append("include cycle between folders " + ", ".join(comp) + ":\n    " +
                      "\n    ".join(detail))
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violation(s); the layer map is in docs/design.md")
        return 1
    print(f"check_layers: ok ({len(LAYERS)} layers, files <= {MAX_LINES} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
