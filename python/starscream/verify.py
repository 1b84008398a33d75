# SPDX-License-Identifier: MIT
"""starscream.verify(): does this process's NCCL traffic reach Starscream's NCCL shim?

PyTorch calls NCCL through its own library (libtorch_cuda.so, or libtorch_hip.so and RCCL on
ROCm), which binds each nccl* symbol when the library loads or at the first call. The shim
serves those calls only if that binding lands on it, which the dynamic loader decides by the
order libraries were loaded:

- preloaded (LD_PRELOAD, what starscream-run sets): the shim comes right after the program in
  the global scope, so every lookup from any library finds its nccl* first;
- in place of libnccl.so.2 (the nccl-compat link first on LD_LIBRARY_PATH): the shim is the
  library torch's own NEEDED entry loads;
- loaded later (dlopen or ctypes after torch loaded the vendor NCCL): torch has bound, or binds
  lazily, to whichever came first. Calls may then split between two NCCLs: refused here.

The checks read the loader's own state through libc (dlsym, dladdr, dlinfo's link map, in load
order); nothing is called in the shim. PyTorch need not be imported: without it the checks
cover the global scope only; with it (libtorch_cuda.so or libtorch_hip.so loaded) they also
cover torch's own binding, and a PyTorch whose NCCL is linked in statically (hidden, so
nothing can interpose on it) is named as such.
"""
import ctypes
import os

from ._errors import VerifyError

SHIM_NAME = "libstarscream-nccl.so"
TORCH_GPU_LIBS = ("libtorch_cuda.so", "libtorch_hip.so")
# Symbols every NCCL 2.x exports and PyTorch calls: the version probe it makes at start-up, the
# communicator's birth and death, one collective and the group calls.
SYMBOLS = ("ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce",
           "ncclGroupStart", "ncclGroupEnd", "ncclCommDestroy")
RTLD_LAZY = 0x1
RTLD_NOLOAD = 0x4
RTLD_DI_LINKMAP = 2


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


class _LinkMap(ctypes.Structure):
    pass


_LinkMap._fields_ = [("l_addr", ctypes.c_size_t), ("l_name", ctypes.c_char_p),
                     ("l_ld", ctypes.c_void_p), ("l_next", ctypes.POINTER(_LinkMap)),
                     ("l_prev", ctypes.POINTER(_LinkMap))]


def _libdl():
    # glibc 2.34 and later have the dl* functions in libc itself; before, in libdl.so.2.
    for name in (None, "libdl.so.2"):
        try:
            dl = ctypes.CDLL(name)
            dl.dlsym, dl.dladdr, dl.dlinfo, dl.dlopen  # noqa: B018 (raises if absent)
            break
        except (OSError, AttributeError):
            continue
    else:
        raise VerifyError("verify: no dlsym/dladdr/dlinfo in this process's C library")
    dl.dlsym.restype, dl.dlsym.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
    dl.dladdr.restype, dl.dladdr.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    dl.dlinfo.restype, dl.dlinfo.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                                           ctypes.c_void_p]
    dl.dlopen.restype, dl.dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    dl.dlclose.restype, dl.dlclose.argtypes = ctypes.c_int, [ctypes.c_void_p]
    return dl


def _real(path):
    return os.path.realpath(path) if path and os.path.exists(path) else path


def loaded_objects(dl=None):
    """The shared objects of this process in load order (the link map), as (name the loader
    used, real path); the program itself is left out."""
    dl = dl or _libdl()
    main = ctypes.CDLL(None)._handle
    lm = ctypes.POINTER(_LinkMap)()
    if dl.dlinfo(main, RTLD_DI_LINKMAP, ctypes.byref(lm)) != 0:
        raise VerifyError("verify: dlinfo(RTLD_DI_LINKMAP) failed on the program")
    while lm and lm.contents.l_prev:  # to the head of the list
        lm = lm.contents.l_prev
    out = []
    while lm:
        name = (lm.contents.l_name or b"").decode(errors="replace")
        if name:
            out.append((name, _real(name)))
        lm = lm.contents.l_next
    return out


def _defined_in(dl, handle, symbol):
    """The real path of the object that defines `symbol` as a lookup through `handle` finds it
    (None: RTLD_DEFAULT, the global scope), or None when nothing does."""
    addr = dl.dlsym(handle, symbol.encode())
    if not addr:
        return None
    info = _DlInfo()
    if not dl.dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
        return "(an object dladdr cannot name)"
    return _real(info.dli_fname.decode(errors="replace"))


class VerifyReport(dict):
    """What verify() found: shim (its path), bindings ({symbol: path of the library that
    serves it}), preloaded (bool: in LD_PRELOAD and loaded before any vendor NCCL), torch
    (path of libtorch_cuda/hip.so, or None when PyTorch's GPU library is not loaded yet),
    torch_nccl (how that library gets NCCL: "dynamic", "shim" or "static, exported")."""

    __getattr__ = dict.__getitem__


def _is_vendor_nccl(real):
    base = os.path.basename(real)
    return base.startswith(("libnccl.so", "librccl.so")) and base != SHIM_NAME


def verify():
    """Checks that PyTorch's NCCL calls in this process go to Starscream's libstarscream-nccl.so
    and returns a VerifyReport; raises VerifyError, saying what is wrong and how to fix it,
    otherwise. Call it after `import torch` for the complete check (starscream-run does, in
    every rank, before the program runs)."""
    dl = _libdl()
    objects = loaded_objects(dl)
    reals = [real for _, real in objects]
    shims = [i for i, real in enumerate(reals) if os.path.basename(real) == SHIM_NAME]
    torch_idx = next((i for i, real in enumerate(reals)
                      if os.path.basename(real) in TORCH_GPU_LIBS), None)
    vendor = [i for i, real in enumerate(reals) if _is_vendor_nccl(real)]
    how = ("start the program with starscream-run, or with "
           "LD_PRELOAD=<starscream.nccl_library()> set before the process starts "
           "(docs/python.md)")
    if not shims:
        loaded = ", ".join(reals[i] for i in vendor) or "none"
        raise VerifyError(f"{SHIM_NAME} is not loaded in this process (vendor NCCL loaded: "
                          f"{loaded}); {how}")
    shim_idx = shims[0]
    shim = reals[shim_idx]
    early_vendor = [reals[i] for i in vendor if i < shim_idx]
    if early_vendor:
        raise VerifyError(f"{shim} was loaded after {early_vendor[0]}: code that bound to the "
                          f"vendor NCCL first keeps calling it. The shim must be loaded before "
                          f"anything loads NCCL: {how}")

    torch_lib = reals[torch_idx] if torch_idx is not None else None
    torch_handle = None
    if torch_lib:
        torch_handle = dl.dlopen(objects[torch_idx][0].encode(), RTLD_LAZY | RTLD_NOLOAD)
    try:
        bindings, wrong = {}, []
        for sym in SYMBOLS:
            # A library's undefined symbols resolve in the global scope first, then in the
            # local scope of the tree it was loaded with (torch is dlopened locally).
            where = _defined_in(dl, None, sym)
            if where is None and torch_handle:
                where = _defined_in(dl, torch_handle, sym)
            bindings[sym] = where
            if where != shim:
                wrong.append(f"{sym} -> {where or 'nothing'}")
        if wrong:
            local = "" if torch_lib else (" (it may have been loaded with RTLD_LOCAL, e.g. by "
                                          "ctypes.CDLL, where no other library sees it)")
            raise VerifyError(f"{shim} is loaded but does not serve NCCL's symbols{local}: "
                              f"{'; '.join(wrong)}; {how}")

        torch_nccl = None
        if torch_handle:
            # Which NCCL torch's own dependency tree holds: a vendor library (or the shim via
            # nccl-compat) is interposed by the lookups above; torch's own exported copy can be
            # interposed too; a hidden static copy cannot.
            own = _defined_in(dl, torch_handle, "ncclAllReduce")
            if own is None:
                raise VerifyError(f"{torch_lib} has NCCL linked in statically and hidden: its "
                                  f"collectives never reach {SHIM_NAME}. Use a PyTorch that "
                                  f"loads libnccl.so.2 (librccl.so.1 on ROCm) as a shared "
                                  f"library")
            torch_nccl = ("shim" if own == shim else
                          "static, exported" if own == torch_lib else "dynamic")
    finally:
        if torch_handle:
            dl.dlclose(torch_handle)

    preload = os.environ.get("LD_PRELOAD", "").replace(":", " ").split()
    preloaded = any(_real(p) == shim for p in preload)
    return VerifyReport(shim=shim, bindings=bindings, preloaded=preloaded, torch=torch_lib,
                        torch_nccl=torch_nccl)
