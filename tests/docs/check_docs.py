#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that what README.md and docs/*.md point a reader at exists, so the README works as
written: every relative link (and its #anchor, against the target's headings as GitHub
slugs them), every repository path they name (`src/...`, `tools/...`, brace forms such as
`merge.{h,cc}` and globs included) and every build output (`build/bin/NAME`,
`build/lib/libNAME.so`) that no CMakeLists.txt builds; that docs/design.md's layer map
shows the layers scripts/check_layers.py enforces, in its order; and that no tracked text file
of the product (README.md and the folders in HISTORY_TOPS) cites the history it was made in:
a work session by number, a device call by its two-letter label, an issue by number, or the
measurement log that used to live in perf/ (RESULTS.md, results/, plots/). Such a citation means
nothing to a reader of the tree; the text should state what is true and why, and point at a
command to rerun or at docs/benchmarks.md for the measurements.

Usage: check_docs.py [REPO_ROOT]   (exit 1 and one line per problem, else "check_docs: ok")
"""
import glob
import importlib.util
import os
import re
import subprocess
import sys

DOCS = ["README.md", "docs/*.md", "tools/*/README.md"]
TOPS = ("include", "src", "docs", "tools", "scripts", "tests", "perf", "examples",
        "transports", "tuner", "cmake")
# Paths the docs name on purpose although they do not exist (a file the reader would create).
PLACEHOLDERS = {"src/collectives/x.cc"}
PATH_RE = re.compile(r"(?<![\w/.$-])((?:%s)/[\w./*{},-]*[\w*}])" % "|".join(TOPS))
BUILD_RE = re.compile(r"(?<![\w/.$-])build/(bin|lib)/([\w.*-]+)")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
# Where the history check looks (README.md and the files git tracks under these folders), and
# what it flags, case aside but for a call's two capitals. "issue" and a bare number is a
# reference unless a lower-case word other than and/or/to follows (then "issue" is the verb:
# "warps issue 2 loads"). A '#' and a number is an issue reference only in prose: after a blank
# or '(' within a line (not a preprocessor line, '%#0x', 'argv[#1]', a "#333" colour, a shell
# comment's leading '#' or a Markdown link's anchor), and not followed by more of a word, a '.'
# and a digit, or a ';'.
HISTORY_TOPS = ("src", "transports", "tuner", "include", "docs", "tools", "tests", "perf",
                "scripts", "examples")
HISTORY_RES = [
    ("a session", re.compile(r"(?i)\bsessions?\s+\d+")),
    ("a dated session label", re.compile(r"\b20\d\d-\d\d-\d\d-s\d+\b")),
    ("a device call", re.compile(r"(?<![\w-])(?i:calls?)\s+[A-Z]{2}(?:-[A-Z]{2})?\b")),
    ("an issue", re.compile(r"(?i)\bissues?\s*#\s*\d+")),
    ("an issue", re.compile(r"(?i)\bissues?\s+\d+\b(?!\s+(?!(?:and|or|to)\b)[a-z])")),
    ("an issue", re.compile(r"(?:(?<=[ \t])|(?<=[^\]]\())#\d+(?![\w;]|\.\d)")),
    ("the removed measurement log", re.compile(r"\bperf/(?:RESULTS\.md|results/|plots/)")),
]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def expand_braces(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    if "," not in m.group(1):  # a command's placeholder ({K}, {json}): any name
        return expand_braces(path[:m.start()] + "*" + path[m.end():])
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(path[:m.start()] + alt + path[m.end():])
    return out


def build_outputs(root):
    """Names of the programs and libraries the CMakeLists build, foreach loops expanded."""
    names, text_all = set(), ""
    for top, dirs, files in os.walk(root):
        # Skip hidden folders (other worktrees live in .wt/) and build trees.
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        if "CMakeLists.txt" not in files:
            continue
        text = open(os.path.join(top, "CMakeLists.txt"), encoding="utf-8").read()
        text_all += text
        names.update(re.findall(r"add_(?:executable|library)\(\s*([\w.-]+)", text))
        names.update(re.findall(r"OUTPUT_NAME\s+([\w.-]+)", text))
        for var, items in re.findall(r"foreach\(\s*(\w+)\s+([^)]*)\)", text):
            for pre, suf in re.findall(r"([\w-]*)\$\{%s\}([\w-]*)" % var, text):
                names.update(pre + item + suf for item in items.split() if "$" not in item)
    return names, text_all


def check_layer_map(root):
    """docs/design.md's layer map lists, top to bottom, the layers scripts/check_layers.py
    enforces (LAYERS, bottom to top), and every folder under src/ is one of them."""
    design = os.path.join(root, "docs", "design.md")
    checker = os.path.join(root, "scripts", "check_layers.py")
    if not (os.path.exists(design) and os.path.exists(checker)):
        return []
    spec = importlib.util.spec_from_file_location("check_layers", checker)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = open(design, encoding="utf-8").read()
    block = re.search(r"^## Layer map$.*?^```\n(.*?)^```", text, re.S | re.M)
    if not block:
        return ["docs/design.md: no layer map (a ``` block under '## Layer map')"]
    # A layer's line starts in the second column (after "top", "bottom" or blanks); wrapped
    # descriptions are indented further.
    shown = re.findall(r"^(?:top {5}|bottom {2}| {8})(\S+)/\s", block.group(1), re.M)
    shown = ["include" if s.startswith("include") else s for s in reversed(shown)]
    problems = []
    if shown != module.LAYERS:
        problems.append(f"docs/design.md: layer map, bottom to top, is {shown}; "
                        f"scripts/check_layers.py enforces {module.LAYERS}")
    src = os.path.join(root, "src")
    for d in sorted(os.listdir(src)) if os.path.isdir(src) else []:
        if os.path.isdir(os.path.join(src, d)) and f"src/{d}" not in module.LAYERS:
            problems.append(f"src/{d}: a folder in no layer of scripts/check_layers.py")
    return problems


def product_text_files(root):
    """README.md and the files under HISTORY_TOPS that git tracks (every file there, hidden
    folders and build trees left out, where ROOT is no git checkout)."""
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, check=True, text=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(root):
            raise ValueError(f"{root} is inside the checkout {top}, not its root")
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "README.md",
                              *HISTORY_TOPS], capture_output=True, check=True).stdout
        rels = [r for r in out.decode("utf-8", "replace").split("\0") if r]
    except (OSError, ValueError, subprocess.CalledProcessError):
        rels = ["README.md"]
        for top in HISTORY_TOPS:
            for cur, dirs, files in os.walk(os.path.join(root, top)):
                dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
                rels += [os.path.relpath(os.path.join(cur, f), root) for f in files]
    return sorted(r for r in rels if os.path.isfile(os.path.join(root, r)))


def check_history(root):
    """One problem per line of a product text file that cites a session, a device call, an
    issue or the removed measurement log (HISTORY_RES); binary files (a NUL byte, or not UTF-8) are skipped."""
    problems = []
    for rel in product_text_files(root):
        data = open(os.path.join(root, rel), "rb").read()
        if b"\0" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for what, regex in HISTORY_RES:
                m = regex.search(line)
                if m:
                    problems.append(f"{rel}:{n}: cites {what} ('{m.group(0)}'): state what is "
                                    "true and why instead")
                    break
    return problems


def check(root):
    problems = check_layer_map(root) + check_history(root)
    files = sorted({f for pat in DOCS for f in glob.glob(pat, root_dir=root)})
    outputs, cmake_text = build_outputs(root)
    heads = {}

    def anchors(rel):
        if rel not in heads:
            text = open(os.path.join(root, rel), encoding="utf-8").read()
            text = re.sub(r"```.*?```", "", text, flags=re.S)  # a '#' in code is no heading
            heads[rel] = {slug(h) for h in re.findall(r"^#+\s+(.*)$", text, re.M)}
        return heads[rel]

    for rel in files:
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        here = os.path.dirname(rel)
        for link in LINK_RE.findall(text):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = os.path.normpath(os.path.join(here, path)) if path else rel
            if not os.path.exists(os.path.join(root, target)):
                problems.append(f"{rel}: link to {link}: no such file")
            elif anchor and target.endswith(".md") and anchor not in anchors(target):
                problems.append(f"{rel}: link to {link}: no heading with that anchor")
        for path in PATH_RE.findall(text):
            path = path.rstrip(".,")
            if path in PLACEHOLDERS:
                continue
            for one in expand_braces(path):
                bases = (root, os.path.join(root, here))
                if not any(glob.glob(os.path.join(base, one)) for base in bases):
                    problems.append(f"{rel}: names {one}: not in the tree")
        for kind, name in BUILD_RE.findall(text):
            name = name.rstrip(".,")
            if "*" in name:
                continue
            stem = re.sub(r"^lib|\.so(\.\d+)*$", "", name) if kind == "lib" else name
            named = re.search(r"(?<![\w.-])%s(?![\w.-])" % re.escape(name), cmake_text)
            if stem not in outputs and not named:  # named: a folder the build makes
                problems.append(f"{rel}: names build/{kind}/{name}: no CMakeLists.txt builds it")
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check_docs: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
