# SPDX-License-Identifier: MIT
"""The PEP 517 build backend of the starscream package (python/pyproject.toml names it).

Why not setuptools: pip builds a project in an isolated environment into which it installs the
backend's requirements from the package index. Offline (a cluster node, CI) that download
fails, and the fallback, `--no-build-isolation`, works only where the machine's Python already
has setuptools and wheel (setuptools before 70.1 cannot write a wheel without the wheel
package). The package is pure Python, and a wheel of pure Python is a zip file with three small
text files beside the code, so this backend writes it with the standard library alone and
declares no requirements: a plain `pip install ./python` needs nothing from the network.

What it writes:
- build_wheel: starscream/*.py, plus starscream/_build_info.py with the version and the clone
  the package was built from (so starscream.library() finds <clone>/build/lib after an
  install), and the dist-info (METADATA, WHEEL, entry_points.txt for starscream-run, RECORD).
- build_editable (pip install -e): a .pth file naming python/ instead of a copy of the code.
- build_sdist: python/ as a tar.gz with PKG-INFO (its version then comes from there).

The version is the one of project(VERSION) in the top-level CMakeLists.txt, the one place the
project keeps it.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

NAME = "starscream"
SUMMARY = ("Starscream from PyTorch: library lookup, the starscream-run launcher, a check that "
           "the NCCL shim serves the process, and the fused GEMM-collectives and sharded "
           "attention as torch.library custom ops")
REQUIRES_PYTHON = ">=3.8"
SCRIPTS = {"starscream-run": "starscream.run:main"}

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # python/ (or the unpacked sdist)
ZIP_DATE = (1980, 1, 1, 0, 0, 0)      # fixed: the same sources give the same wheel


def _clone_root():
    """The Starscream checkout python/ belongs to, or None (an unpacked sdist)."""
    root = os.path.dirname(PACKAGE_ROOT)
    try:
        with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    return root if re.search(r"project\(\s*Starscream\b", text) else None


def _version():
    root = _clone_root()
    if root is not None:
        with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
            m = re.search(r"project\(\s*Starscream\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", f.read())
        if m:
            return m.group(1)
    try:  # an sdist carries its version in PKG-INFO
        with open(os.path.join(PACKAGE_ROOT, "PKG-INFO"), encoding="utf-8") as f:
            m = re.search(r"^Version: (\S+)$", f.read(), re.M)
        if m:
            return m.group(1)
    except OSError:
        pass
    raise RuntimeError("starscream build: no version: neither ../CMakeLists.txt with "
                       "project(Starscream VERSION x.y.z) nor PKG-INFO next to pyproject.toml")


def _metadata(version):
    return ("Metadata-Version: 2.1\n"
            f"Name: {NAME}\n"
            f"Version: {version}\n"
            f"Summary: {SUMMARY}\n"
            "License: MIT\n"
            f"Requires-Python: {REQUIRES_PYTHON}\n")


def _package_files():
    """(path inside the wheel, path on disk) of every module of the package."""
    out = []
    top = os.path.join(PACKAGE_ROOT, NAME)
    for cur, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py") and name != "_build_info.py":
                path = os.path.join(cur, name)
                out.append((os.path.relpath(path, PACKAGE_ROOT).replace(os.sep, "/"), path))
    return out


def _build_info(version):
    root = _clone_root()
    return ("# SPDX-License-Identifier: MIT\n"
            "# Written by python/_build/backend.py when this wheel was built.\n"
            f"VERSION = {version!r}\n"
            "# The checkout the package was built from (None: built from an sdist). "
            "starscream.library() looks in its build/lib.\n"
            f"SOURCE_DIR = {root!r}\n").encode()


class _Wheel:
    def __init__(self, directory, version):
        self.version = version
        self.name = f"{NAME}-{version}-py3-none-any.whl"
        self.path = os.path.join(directory, self.name)
        self.zip = zipfile.ZipFile(self.path, "w", zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data):
        info = zipfile.ZipInfo(arcname, ZIP_DATE)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append(f"{arcname},sha256={digest},{len(data)}")

    def finish(self):
        dist = f"{NAME}-{self.version}.dist-info"
        self.add(f"{dist}/METADATA", _metadata(self.version).encode())
        self.add(f"{dist}/WHEEL", ("Wheel-Version: 1.0\nGenerator: starscream-build\n"
                                   "Root-Is-Purelib: true\nTag: py3-none-any\n").encode())
        scripts = "".join(f"{k} = {v}\n" for k, v in SCRIPTS.items())
        self.add(f"{dist}/entry_points.txt", f"[console_scripts]\n{scripts}".encode())
        self.add(f"{dist}/top_level.txt", f"{NAME}\n".encode())
        root = _clone_root()
        if root and os.path.exists(os.path.join(root, "LICENSE")):
            with open(os.path.join(root, "LICENSE"), "rb") as f:
                self.add(f"{dist}/LICENSE", f.read())
        record = f"{dist}/RECORD"
        self.records.append(f"{record},,")
        info = zipfile.ZipInfo(record, ZIP_DATE)
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, "\n".join(self.records) + "\n")
        self.zip.close()
        return self.name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    wheel = _Wheel(wheel_directory, version)
    for arcname, path in _package_files():
        with open(path, "rb") as f:
            wheel.add(arcname, f.read())
    wheel.add(f"{NAME}/_build_info.py", _build_info(version))
    return wheel.finish()


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # The package runs from python/ itself: the .pth file puts that folder on sys.path, and
    # starscream.library() finds the clone by looking upward from it.
    wheel = _Wheel(wheel_directory, _version())
    wheel.add(f"__editable__.{NAME}.pth", (PACKAGE_ROOT + "\n").encode())
    return wheel.finish()


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(arcname, data):
            info = tarfile.TarInfo(f"{base}/{arcname}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
        add("PKG-INFO", _metadata(version).encode())
        for rel in ("pyproject.toml", "_build/backend.py"):
            with open(os.path.join(PACKAGE_ROOT, rel), "rb") as f:
                add(rel, f.read())
        for arcname, path in _package_files():
            with open(path, "rb") as f:
                add(arcname, f.read())
    return name
