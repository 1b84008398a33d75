#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/check_docs.py must report each kind of broken reference it promises to find (a
link to a missing file, an anchor with no heading, a repository path or a brace alternative
that does not exist, a build output no CMakeLists.txt builds) and pass a tree where all exist;
and it must flag each kind of citation of the history the tree was made in (a work session, a
dated session label, a device call, an issue by number or by '#', the removed measurement log),
in any product folder, while passing look-alikes that are no such citation (preprocessor lines,
format strings, colours)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from script_tree import run_on_tree  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_docs.py")
TREE = {
    "CMakeLists.txt": (
        "add_executable(starscream-topo main.cc)\n"
        "foreach(_c all_reduce sendrecv)\n  add_executable(${_c}_perf ${_c}.cc)\nendforeach()\n"
        "add_library(starscream_nccl SHARED a.cc)\n"
        "set_target_properties(starscream_nccl PROPERTIES OUTPUT_NAME starscream-nccl)\n"),
    "src/core/env.h": "\n", "src/core/env.cc": "\n", "src/comm/comm.h": "\n",
    "include/starscream/starscream.h": "\n",
    "scripts/check_layers.py": 'LAYERS = ["include", "src/core", "src/comm"]\n',
    "docs/design.md": "# Design\n\n## Layer map\n\n```\ntop     src/comm/     the communicator\n"
                      "                      wrapped text naming src/core/\n"
                      "bottom  src/core/     the base\n        include/starscream/  headers\n"
                      "outside tests/\n```\n\n## The plan format\n\n```\n# not a heading\n```\n",
}
CLEAN = ("See [design](docs/design.md#the-plan-format), `src/core/env.{h,cc}`,\n"
         "`build/bin/starscream-topo`, `build/bin/sendrecv_perf`,\n"
         "`build/lib/libstarscream-nccl.so` and [out](https://example.com/none)\n")


# The words the history check looks for, spelled so that this file itself passes the check.
SESSION, CALL, ISSUE, SHARP = "ses" + "sion", "ca" + "ll", "is" + "sue", "#"
# Text that only looks like a citation: every line must pass.
LOOK_ALIKES = {
    "src/core/a.cc": (
        "#include <cstdio>\n#if X\n#define N 1\n#endif\n"
        'std::printf("%#08x %#0x", v, w);  // argv[#1] and (void)#2\n'
        "// warps " + ISSUE + " 2 loads at once; a lane " + ISSUE + "s 64 loads one after another\n"
        "// " + CALL + " MPI_Init, " + CALL + "s CUDA, a " + CALL + " A, --" + CALL + "s NC\n"
        "// session_.comm, start_new_" + SESSION + "=True, the " + SESSION + "'s id\n"),
    "tools/x/plot.py": 'COLORS = ["#1f77b4", "#333"]\n#1 fits here\n',
    "tools/x/page.css": "p { color: #333; margin: 0 }\n",
    "docs/notes.md": ("# 1. A heading\n\nStep 3 of 2026-12-04's run; see `x#12` and "
                      "[a](#1-a-heading).\n"),
    "examples/e.sh": "#!/bin/bash\nn=$#1; echo ${#a[@]} \"#5\"\n",
    "perf/plot.png": "\0binary " + SESSION + " 7\n",
    "cmake/x.cmake": "# " + SESSION + " 7: cmake/ is outside the product folders the check reads\n",
}


def run(readme, changes=None):
    """Runs the checker on TREE plus this README and the changed or added files."""
    files = dict(TREE, **{"README.md": readme}, **(changes or {}))
    return run_on_tree(SCRIPT, files)


class CheckDocs(unittest.TestCase):
    def test_clean_tree_passes(self):
        rc, out = run(CLEAN)
        self.assertEqual(rc, 0, out)
        self.assertIn("check_docs: ok", out)

    def test_missing_link_target_fails(self):
        rc, out = run("[next](docs/nope.md)\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("link to docs/nope.md: no such file", out)

    def test_missing_anchor_fails(self):
        rc, out = run("[plans](docs/design.md#not-a-heading)\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("no heading with that anchor", out)

    def test_missing_path_and_brace_alternative_fail(self):
        rc, out = run("`src/core/log.h` and `src/core/env.{h,cu}`\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("names src/core/log.h: not in the tree", out)
        self.assertIn("names src/core/env.cu: not in the tree", out)
        self.assertNotIn("env.h:", out)

    def test_placeholder_matches_any_name_but_not_a_missing_folder(self):
        rc, out = run("`tools/x-{K}.json`\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("names tools/x-*.json", out)

    def test_unbuilt_output_fails(self):
        rc, out = run("`build/bin/starscream-top` and `build/lib/libstarscream-ncl.so`\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("build/bin/starscream-top: no CMakeLists.txt builds it", out)
        self.assertIn("build/lib/libstarscream-ncl.so: no CMakeLists.txt builds it", out)

    def test_layer_map_out_of_order_fails(self):
        design = TREE["docs/design.md"].replace("top     src/comm/", "top     src/keep/") \
            .replace("bottom  src/core/", "bottom  src/comm/").replace("src/keep/", "src/core/")
        rc, out = run(CLEAN, {"docs/design.md": design})
        self.assertEqual(rc, 1, out)
        self.assertIn("layer map, bottom to top, is ['include', 'src/comm', 'src/core']", out)

    def test_history_citations_fail(self):
        rc, out = run(CLEAN + "Measured in " + SESSION + " 12, then " + CALL + " CE.\n", {
            "src/core/b.cc": ("// " + SESSION.capitalize() + "s 13-14 found it (" + ISSUE
                              + " " + SHARP + "18).\n"),
            "tests/t.py": "x = 1\n# the fix of " + ISSUE + " 7\n",
            "perf/p.sh": "# data under perf/runs/2026-12-04-" + "s23/\n",
            "tuner/m.json": '{"source": "the fit (' + ISSUE + 's 13 and 14)"}\n',
            "docs/d.md": ("Fixed in (" + SHARP + "17) and after " + SHARP + "18.\n"
                          + ISSUE.capitalize() + " 5's rule.\n"),
        })
        self.assertEqual(rc, 1, out)
        for where, what in [("README.md:4", SESSION + " 12"), ("src/core/b.cc:1", SESSION),
                            ("tests/t.py:2", ISSUE + " 7"), ("perf/p.sh:1", "dated"),
                            ("tuner/m.json:1", ISSUE + "s 13"),
                            ("docs/d.md:1", "'" + SHARP + "17'"),
                            ("docs/d.md:2", ISSUE.capitalize() + " 5")]:
            line = [x for x in out.splitlines() if x.startswith(where + ":")]
            self.assertEqual(len(line), 1, (where, out))
            self.assertIn(what, line[0])
        self.assertEqual(out.count(": cites "), 7, out)  # one problem per line
        rc, out = run(CLEAN, {"src/core/c.cc": "// after " + CALL + "s BA-BE\n"})
        self.assertIn("src/core/c.cc:1: cites a device " + CALL + " ('" + CALL + "s BA-BE')",
                      out)
        rc, out = run(CLEAN, {"src/core/d.cc": "// as measured (perf/" + "RESULTS.md)\n"})
        self.assertIn("src/core/d.cc:1: cites the removed measurement log", out)
        rc, out = run(CLEAN, {"docs/e.md": "Fixed after " + SHARP + "18.\n"})
        self.assertIn("docs/e.md:1: cites an " + ISSUE + " ('" + SHARP + "18')", out)

    def test_history_look_alikes_pass(self):
        rc, out = run(CLEAN, LOOK_ALIKES)
        self.assertEqual(rc, 0, out)
        self.assertIn("check_docs: ok", out)

    def test_source_folder_in_no_layer_fails(self):
        rc, out = run(CLEAN, {"src/stray/a.h": "\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/stray: a folder in no layer", out)


if __name__ == "__main__":
    unittest.main()
