#!/usr/bin/env python3
"""tests/docs/check_docs.py must report each kind of broken reference it promises to find (a
link to a missing file, an anchor with no heading, a repository path or a brace alternative
that does not exist, a build output no CMakeLists.txt builds) and pass a tree where all exist."""
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

    def test_source_folder_in_no_layer_fails(self):
        rc, out = run(CLEAN, {"src/stray/a.h": "\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/stray: a folder in no layer", out)


if __name__ == "__main__":
    unittest.main()
