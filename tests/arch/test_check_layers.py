#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/check_layers.py must fail on each kind of violation it promises to find (an upward
include, a folder cycle inside a layer, a file past the line limit) and pass a clean tree."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from script_tree import run_on_tree  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "check_layers.py")


def run(files):
    return run_on_tree(SCRIPT, files)


class CheckLayers(unittest.TestCase):
    def test_clean_tree_passes(self):
        rc, out = run({"src/core/a.h": "#pragma once\n",
                       "src/comm/b.cc": '#include "src/core/a.h"\n'})
        self.assertEqual(rc, 0, out)

    def test_upward_include_fails(self):
        rc, out = run({"src/core/a.h": '#include "src/comm/b.h"\n', "src/comm/b.h": "\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("layer src/core includes src/comm/b.h", out)

    def test_folder_cycle_in_one_layer_fails(self):
        rc, out = run({"transports/host/a.h": '#include "transports/net/b.h"\n',
                       "transports/net/b.h": '#include "transports/host/c.h"\n',
                       "transports/host/c.h": "\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("include cycle between folders transports/host, transports/net", out)

    def test_long_file_fails(self):
        rc, out = run({"src/api/big.cc": "int x;\n" * 601})
        self.assertEqual(rc, 1, out)
        self.assertIn("601 lines", out)

    def test_library_may_not_include_tests(self):
        rc, out = run({"src/api/a.cc": '#include "tests/support/h.h"\n', "tests/support/h.h": "\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("outside the library", out)


if __name__ == "__main__":
    unittest.main()
