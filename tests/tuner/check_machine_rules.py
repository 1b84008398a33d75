#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when a choice rule in the library's code names a GPU model or a fixed rank count.

Machine knowledge is data (profiles, topology files, calibrations), never code: a rule such as
`if (nranks == 8)` or `if (model == "H200")` is right on one machine and silently wrong on the
next. This scans the C/C++/CUDA sources under src/, tuner/ and include/ with comments and string
literals removed (messages and explanations may name machines) and reports:
  - a GPU model name used in code (H100, H200, A100, MI250, MI300, MI325, MI355, gfx9xx);
  - a rank or partition count compared with a literal of 3 or more (1 and 2 are structural:
    one rank copies, two ranks have a single peer).
A line whose comment says `structural limit` (a template instantiation per rank bound, a data
structure's capacity) is not a choice rule and is let through.
Usage: check_machine_rules.py REPO_ROOT   (exit 1 and one line per finding when any is found)
"""
import pathlib
import re
import sys

MODEL = re.compile(r"\b(H100|H200|A100|MI250X?|MI300[AX]?|MI325X?|MI355X?|gfx9\d\d)\b", re.I)
COUNT = re.compile(
    r"\b(\w*(?:nranks|nRanks|ranks|partitions|Partitions|parts)\w*)\s*(==|!=|<=|>=|<|>)\s*([3-9]|\d{2,})\b")
EXTS = {".cc", ".h", ".cu", ".cuh", ".c", ".hpp"}


def strip(code: str) -> str:
    """Blanks comments, string and character literals, keeping line structure."""
    out, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * code.count("\n", i, j))
            i = j
        elif code.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', code[i:])
            end = code.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append('""' + "\n" * code.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(root: pathlib.Path):
    for top in ("src", "tuner", "include"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in EXTS or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            original = text.splitlines()
            code = strip(text)
            for lineno, line in enumerate(code.splitlines(), 1):
                if lineno <= len(original) and "structural limit" in original[lineno - 1]:
                    continue
                for m in MODEL.finditer(line):
                    yield f"{path.relative_to(root)}:{lineno}: names a GPU model in code: {m.group(0)}"
                for m in COUNT.finditer(line):
                    yield (f"{path.relative_to(root)}:{lineno}: compares a rank count with a fixed "
                           f"number: {m.group(0)}")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = list(findings(pathlib.Path(sys.argv[1])))
    for f in found:
        print(f)
    print(f"check_machine_rules: {len(found)} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
