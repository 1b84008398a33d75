# SPDX-License-Identifier: MIT
"""Starscream from Python and PyTorch (docs/python.md).

    starscream.library(), starscream.nccl_library()   where libstarscream(-nccl).so are
    starscream-run / python -m starscream.run          launch with the NCCL shim preloaded
    starscream.verify()                                 PyTorch's NCCL calls reach Starscream?
    starscream.Comm.from_process_group(group)           a communicator over a torch group
    starscream.Gemm(comm)                               GEMM + reduce-scatter, all-gather + GEMM
    starscream.KvCache(comm, ...)                       sharded KV cache, decode and prefill
    starscream.shard_2d(...), starscream.row_shard(...) the 2D-sharding helper, row splits

Importing the package does not import PyTorch: the lookup, the launcher and verify() work
without it. starscream.ops (imported by Gemm and KvCache, or by hand) registers the custom ops
torch.ops.starscream.*.
"""
import os as _os
import re as _re

from ._errors import LibraryNotFoundError, StarscreamError, VerifyError
from ._find import clone_root


def _version():
    try:
        from . import _build_info  # an installed wheel
        return _build_info.VERSION
    except ImportError:
        pass
    root = clone_root()  # running from the tree, or an editable install
    if root:
        with open(_os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
            m = _re.search(r"project\(\s*Starscream\s+VERSION\s+([0-9.]+)", f.read())
        if m:
            return m.group(1)
    try:
        from importlib.metadata import version
        return version("starscream")
    except Exception:  # no metadata either: an unknown version, refused by the library check
        return "0.0.0"


__version__ = _version()


def library():
    """Path of libstarscream.so: STARSCREAM_LIB_DIR, else <clone>/build/lib of the checkout the
    package was installed from, else the loader's search path (LD_LIBRARY_PATH, ldconfig's
    cache, the default directories). LibraryNotFoundError lists where it looked."""
    from . import _find
    return _find.find(_find.LIBSTARSCREAM)


def nccl_library():
    """Path of libstarscream-nccl.so (the NCCL shim), searched as library() is."""
    from . import _find
    return _find.find(_find.LIBNCCL_SHIM)


from .comm import Comm, unique_id  # noqa: E402
from .sharding import Shard2dPlan, row_shard, shard_2d  # noqa: E402
from .verify import verify  # noqa: E402
from .gemm import Gemm  # noqa: E402
from .attention import KvCache  # noqa: E402

__all__ = ["Comm", "Gemm", "KvCache", "LibraryNotFoundError", "Shard2dPlan", "StarscreamError",
           "VerifyError", "library", "nccl_library", "row_shard", "shard_2d", "unique_id",
           "verify", "__version__"]
