#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`pip install ./python` works offline: pip installs the package into a folder (--target) with
no package index and every proxy pointing at a closed port, so any download would fail; the
installed package records the checkout it came from (starscream.library() looks in its
build/lib), and its starscream-run script starts. The build backend's sdist and editable wheel
are checked too."""
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

import _support

BACKEND = os.path.join(_support.PYTHON_DIR, "_build", "backend.py")


def load_backend():
    spec = importlib.util.spec_from_file_location("starscream_build_backend", BACKEND)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def offline_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("PIP_", "PYTHONPATH"))}
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens, a download fails at once
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", http_proxy=closed,
               https_proxy=closed, HTTP_PROXY=closed, HTTPS_PROXY=closed, **extra)
    return env


@unittest.skipIf(importlib.util.find_spec("pip") is None, "pip is not installed for this Python")
class PipInstallTest(unittest.TestCase):
    def test_install_into_a_folder_offline(self):
        with tempfile.TemporaryDirectory() as target:
            out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target",
                                  target, _support.PYTHON_DIR], env=offline_env(),
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertTrue(os.path.exists(os.path.join(target, "starscream", "_build_info.py")))
            script = os.path.join(target, "bin", "starscream-run")
            self.assertTrue(os.access(script, os.X_OK), os.listdir(target))

            env = dict(os.environ, PYTHONPATH=target)
            probe = ("import starscream, os; print(os.path.dirname(starscream.__file__)); "
                     "print(starscream.clone_root()); print(starscream.__version__)")
            out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                                 text=True, cwd=target, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            where, root, version = out.stdout.split()
            self.assertEqual(where, os.path.join(target, "starscream"))
            self.assertEqual(os.path.realpath(root), os.path.realpath(_support.REPO))
            self.assertEqual(version, load_backend()._version())

            out = subprocess.run([script, "--help"], env=env, capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("starscream-run", out.stdout)


class BackendTest(unittest.TestCase):
    def setUp(self):
        self.backend = load_backend()
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_wheel(self):
        name = self.backend.build_wheel(self.tmp.name)
        version = self.backend._version()
        self.assertEqual(name, f"starscream-{version}-py3-none-any.whl")
        with zipfile.ZipFile(os.path.join(self.tmp.name, name)) as z:
            names = set(z.namelist())
            dist = f"starscream-{version}.dist-info"
            for want in ("starscream/__init__.py", "starscream/bootstrap.py",
                         "starscream/_build_info.py", f"{dist}/METADATA", f"{dist}/WHEEL",
                         f"{dist}/RECORD", f"{dist}/entry_points.txt"):
                self.assertIn(want, names)
            self.assertFalse([n for n in names if "__pycache__" in n])
            self.assertIn("starscream-run = starscream.run:main",
                          z.read(f"{dist}/entry_points.txt").decode())
            record = z.read(f"{dist}/RECORD").decode().splitlines()
            self.assertEqual(len(record), len(names))  # every file, RECORD itself included

    def test_editable(self):
        name = self.backend.build_editable(self.tmp.name)
        with zipfile.ZipFile(os.path.join(self.tmp.name, name)) as z:
            self.assertEqual(z.read("__editable__.starscream.pth").decode().strip(),
                             _support.PYTHON_DIR)

    def test_sdist_builds_a_wheel_with_its_version(self):
        name = self.backend.build_sdist(self.tmp.name)
        with tarfile.open(os.path.join(self.tmp.name, name)) as t:
            t.extractall(self.tmp.name)
        base = os.path.join(self.tmp.name, name[:-len(".tar.gz")])
        self.assertTrue(os.path.exists(os.path.join(base, "starscream", "run.py")))
        out = subprocess.run([sys.executable, "-c",
                              "import sys; sys.path.insert(0, '_build'); import backend; "
                              "print(backend.build_wheel(sys.argv[1]))", self.tmp.name],
                             cwd=base, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(),
                         f"starscream-{self.backend._version()}-py3-none-any.whl")


if __name__ == "__main__":
    _support.main()
