# SPDX-License-Identifier: MIT
"""Where libstarscream.so and libstarscream-nccl.so are: STARSCREAM_LIB_DIR, else the build of
the clone the package came from, else the loader's own search path (LD_LIBRARY_PATH, the
ldconfig cache, the default directories).

Pure standard library and no import of torch, so the launcher and the lookup work before (and
without) PyTorch.
"""
import os
import re
import subprocess
import sysconfig

from ._errors import LibraryNotFoundError

LIBSTARSCREAM = "libstarscream.so"
LIBNCCL_SHIM = "libstarscream-nccl.so"
ENV_DIR = "STARSCREAM_LIB_DIR"


def _is_clone(path):
    try:
        with open(os.path.join(path, "CMakeLists.txt"), encoding="utf-8") as f:
            return re.search(r"project\(\s*Starscream\b", f.read()) is not None
    except OSError:
        return False


def clone_root():
    """The Starscream checkout this package belongs to, or None: the one recorded when the
    package was built (pip install ./python), else the first folder above this file that is a
    checkout (running from the tree, or an editable install)."""
    try:
        from . import _build_info  # written into the wheel by python/_build/backend.py
        recorded = _build_info.SOURCE_DIR
    except ImportError:
        recorded = None
    if recorded and _is_clone(recorded):
        return recorded
    cur = os.path.dirname(os.path.abspath(__file__))
    while True:
        if _is_clone(cur):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _in_dir(directory, name):
    """directory/name, else the highest directory/name.N... (an install without the unversioned
    development link keeps only the SONAME file), else None."""
    path = os.path.join(directory, name)
    if os.path.isfile(path):
        return path
    try:
        versioned = [f for f in os.listdir(directory) if f.startswith(name + ".")]
    except OSError:
        return None

    def key(f):
        return [int(p) if p.isdigit() else -1 for p in f[len(name) + 1:].split(".")]
    for f in sorted(versioned, key=key, reverse=True):
        if os.path.isfile(os.path.join(directory, f)):
            return os.path.join(directory, f)
    return None


def _ldconfig_paths(name):
    """The loader cache's entries for name and name.N (ldconfig -p), in its order."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10,
                                 check=False).stdout
            break
        except (OSError, subprocess.SubprocessError):
            continue
    else:
        return []
    found = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s.*=>\s*(\S+)\s*$", line)
        if m and (m.group(1) == name or m.group(1).startswith(name + ".")):
            found.append(m.group(2))
    return found


def _default_dirs():
    dirs = ["/usr/local/lib", "/usr/local/lib64"]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs += [f"/usr/lib/{multiarch}", f"/lib/{multiarch}"]
    return dirs + ["/usr/lib64", "/usr/lib", "/lib64", "/lib"]


_UNSET = object()


def find(name, environ=None, root=_UNSET):
    """The path of library `name` (LIBSTARSCREAM or LIBNCCL_SHIM); LibraryNotFoundError lists
    every place it looked. environ and root (the checkout; None for none) default to this
    process's environment and clone_root()."""
    environ = os.environ if environ is None else environ
    looked = []
    env_dir = environ.get(ENV_DIR, "")
    if env_dir:
        # Authoritative: a library from elsewhere than the directory the user named would be a
        # silent mix-up (another build, another backend), so a miss here is an error.
        path = _in_dir(env_dir, name)
        if path:
            return os.path.abspath(path)
        raise LibraryNotFoundError(name, [f"{ENV_DIR}={env_dir}: no {name} there"],
                                   hint=f"unset {ENV_DIR} to search the clone's build and the "
                                        "loader's path instead")
    looked.append(f"{ENV_DIR}: not set")

    root = clone_root() if root is _UNSET else root
    if root:
        lib_dir = os.path.join(root, "build", "lib")
        path = _in_dir(lib_dir, name)
        if path:
            return path
        looked.append(f"the clone's build: {lib_dir}: no {name}")
    else:
        looked.append("the clone's build: the package was not installed from a Starscream checkout")

    ld_dirs = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for d in ld_dirs:
        path = _in_dir(d, name)
        if path:
            return os.path.abspath(path)
    looked.append("LD_LIBRARY_PATH: " + (":".join(ld_dirs) + f": no {name}" if ld_dirs else "empty"))

    cached = [p for p in _ldconfig_paths(name) if os.path.isfile(p)]
    exact = [p for p in cached if os.path.basename(p) == name]
    if exact or cached:
        return (exact or cached)[0]
    looked.append(f"the loader cache (ldconfig -p): no {name}")

    defaults = _default_dirs()
    for d in defaults:
        path = _in_dir(d, name)
        if path:
            return path
    looked.append("the default directories " + ", ".join(defaults) + f": no {name}")
    hint = ("build it (scripts/build.sh: build/lib of the clone), or install it "
            "(cmake --install build --prefix DIR) and set STARSCREAM_LIB_DIR=DIR/lib")
    if name == LIBNCCL_SHIM:
        hint += ("; the shim is built only where nccl.h or rccl.h is found "
                 "(docs/nccl-shim.md, Build)")
    raise LibraryNotFoundError(name, looked, hint=hint)


def nccl_compat_dir(shim_path):
    """The shim's nccl-compat folder (libnccl.so.2 or librccl.so.1 linking to the shim), or
    None where the build or install has none."""
    d = os.path.join(os.path.dirname(shim_path), "nccl-compat")
    return d if os.path.isdir(d) else None
