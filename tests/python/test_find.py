#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""starscream.library() / nccl_library(): the search order (STARSCREAM_LIB_DIR, the clone's
build/lib, LD_LIBRARY_PATH, then the loader's cache and default directories), versioned file
names, and an error that lists every place it looked. Fake library files in temporary folders;
nothing is loaded."""
import os
import tempfile
import unittest

import _support  # noqa: F401  (puts python/ on sys.path)
import starscream
from starscream import _find

# A name no system has, so the loader cache and the default directories never answer.
NAME = "libstarscream-findtest.so"


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w"):
        pass
    return path


class FindTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def clone(self, with_lib=True):
        root = os.path.join(self.dir, "clone")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
            f.write("project(Starscream VERSION 0.1.0 LANGUAGES C CXX)\n")
        if with_lib:
            touch(os.path.join(root, "build", "lib", NAME))
        return root

    def test_env_dir_comes_first(self):
        env_lib = touch(os.path.join(self.dir, "envdir", NAME))
        root = self.clone()
        got = _find.find(NAME, {"STARSCREAM_LIB_DIR": os.path.dirname(env_lib)}, root=root)
        self.assertEqual(got, env_lib)

    def test_env_dir_is_authoritative(self):
        # A library elsewhere must not be taken when the named folder lacks it.
        root = self.clone()
        with self.assertRaises(starscream.LibraryNotFoundError) as cm:
            _find.find(NAME, {"STARSCREAM_LIB_DIR": os.path.join(self.dir, "empty")}, root=root)
        self.assertIn("STARSCREAM_LIB_DIR=", str(cm.exception))
        self.assertIn("unset STARSCREAM_LIB_DIR", str(cm.exception))

    def test_clone_build_before_ld_library_path(self):
        root = self.clone()
        other = touch(os.path.join(self.dir, "ldpath", NAME))
        got = _find.find(NAME, {"LD_LIBRARY_PATH": os.path.dirname(other)}, root=root)
        self.assertEqual(got, os.path.join(root, "build", "lib", NAME))

    def test_ld_library_path(self):
        lib = touch(os.path.join(self.dir, "b", NAME))
        env = {"LD_LIBRARY_PATH": f"{self.dir}/a::{os.path.dirname(lib)}"}
        self.assertEqual(_find.find(NAME, env, root=None), lib)

    def test_versioned_name_when_no_dev_link(self):
        d = os.path.join(self.dir, "v")
        touch(os.path.join(d, NAME + ".0.1"))
        newest = touch(os.path.join(d, NAME + ".0.10"))
        self.assertEqual(_find.find(NAME, {"LD_LIBRARY_PATH": d}, root=None), newest)

    def test_error_lists_every_place(self):
        root = self.clone(with_lib=False)
        with self.assertRaises(starscream.LibraryNotFoundError) as cm:
            _find.find(NAME, {"LD_LIBRARY_PATH": "/nonexistent"}, root=root)
        text = str(cm.exception)
        for place in ("STARSCREAM_LIB_DIR: not set", os.path.join(root, "build", "lib"),
                      "LD_LIBRARY_PATH: /nonexistent", "ldconfig -p", "/usr/lib"):
            self.assertIn(place, text)
        self.assertIn("To fix:", text)
        self.assertEqual(cm.exception.looked[0], "STARSCREAM_LIB_DIR: not set")

    def test_no_clone(self):
        with self.assertRaises(starscream.LibraryNotFoundError) as cm:
            _find.find(NAME, {}, root=None)
        self.assertIn("not installed from a Starscream checkout", str(cm.exception))

    def test_shim_error_says_when_it_is_built(self):
        try:
            found = _find.find(_find.LIBNCCL_SHIM, {"LD_LIBRARY_PATH": self.dir}, root=None)
        except starscream.LibraryNotFoundError as e:
            self.assertIn("nccl.h or rccl.h", str(e))
        else:
            self.skipTest(f"this machine has {found} on its loader path: no error to check")

    def test_compat_dir(self):
        shim = touch(os.path.join(self.dir, "lib", _find.LIBNCCL_SHIM))
        self.assertIsNone(_find.nccl_compat_dir(shim))
        os.makedirs(os.path.join(self.dir, "lib", "nccl-compat"))
        self.assertEqual(_find.nccl_compat_dir(shim), os.path.join(self.dir, "lib", "nccl-compat"))

    def test_clone_root_of_this_checkout(self):
        # Run from the tree (python/ on sys.path), the package belongs to this checkout.
        self.assertEqual(os.path.realpath(starscream.clone_root()),
                         os.path.realpath(_support.REPO))


if __name__ == "__main__":
    _support.main()
