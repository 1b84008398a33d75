#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_machine_rules.py finds each kind of rule it exists for and lets comments, strings and
structural limits through (a checker that cannot fail proves nothing)."""
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
CHECK = HERE / "check_machine_rules.py"


def run(files):
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for name, text in files.items():
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        r = subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)
        return r.returncode, r.stdout


def main() -> int:
    failures = []
    cases = [
        ("rank count", {"src/a.cc": "bool f(int nranks) { return nranks == 8; }\n"}, 1),
        ("partitions", {"tuner/b.cc": "if (p.partitionsPerGpu >= 4) x = 1;\n"}, 1),
        ("model name", {"src/c.cc": "bool h = gpu.model == H200;\n"}, 1),
        ("clean", {"src/d.cc": "// only on the H200 with nranks == 8\n"
                               "const char* s = \"H100 nranks == 8\";\n"
                               "/* MI300X\n nranks >= 16 */ int y = nranks < 2;\n"}, 0),
        ("structural", {"src/e.cuh": "if (a.nranks <= 4) k4();  // structural limit\n"}, 0),
    ]
    for name, files, want in cases:
        rc, out = run(files)
        if rc != want:
            failures.append(f"{name}: exit {rc}, want {want}\n{out}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(cases) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
