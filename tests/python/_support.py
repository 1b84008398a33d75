# SPDX-License-Identifier: MIT
"""What the tests of the Python package share: where the package and the built library are,
and the visible skips.

ctest passes STARSCREAM_LIB_DIR (the build's lib folder) and puts python/ on PYTHONPATH; run by
hand, the package is imported from this checkout and the library found as starscream.library()
finds it (<clone>/build/lib, or STARSCREAM_LIB_DIR).
"""
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PYTHON_DIR = os.path.join(REPO, "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import starscream  # noqa: E402
from starscream import _find  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE for a file whose every test needs what is missing


def library_or_none(name=_find.LIBSTARSCREAM):
    try:
        return _find.find(name)
    except starscream.LibraryNotFoundError:
        return None


def need_library(name=_find.LIBSTARSCREAM):
    """A decorator skipping a test (with the reason in the log) when the library is not built."""
    path = library_or_none(name)
    return unittest.skipIf(path is None, f"{name} is not built here (nothing in "
                                         f"STARSCREAM_LIB_DIR or <clone>/build/lib)")


def subprocess_env(**extra):
    """This process's environment with python/ on PYTHONPATH (for child Pythons)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def run_python(code_or_args, env=None, timeout=120):
    """Runs this interpreter on `-c code` (a str) or on argv (a list); returns the
    CompletedProcess (text, both streams captured)."""
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else list(code_or_args)
    return subprocess.run([sys.executable] + args, env=env or subprocess_env(),
                          capture_output=True, text=True, timeout=timeout)


def c_compiler():
    return shutil.which("cc") or shutil.which("gcc")


def torch_or_skip_file(what):
    """Imports torch, or exits the whole file with ctest's skip code, saying what was skipped."""
    try:
        import torch
        return torch
    except ImportError as e:
        print(f"SKIPPED {what}: PyTorch is not installed here ({e}); these tests run where it is "
              "(pip install torch), see docs/python.md, Tests", flush=True)
        sys.exit(SKIP)


def main():
    """unittest.main with every test named and every skip's reason shown."""
    unittest.main(verbosity=2)
