# SPDX-License-Identifier: MIT
"""A small PyTorch front end of Starscream's fused GEMM-collectives (starscream_ops.h), through
ctypes on libstarscream.so: no build step, tensors are passed by data_ptr() and the work is
queued on torch's current CUDA stream.

    import starscream_gemm as sg
    comm = sg.Comm.from_unique_id(rank, world, uid_bytes)    # uid from sg.unique_id() on rank 0
    gemm = sg.Gemm(comm)
    y = gemm.reduce_scatter(x, w)          # this rank's rows of sum over ranks of x @ w.T
    y = gemm.all_gather(x_rows, w)         # all_gather(x_rows) @ w.T

x and w are contiguous CUDA tensors of one dtype (bfloat16 or float16); w is stored [N][K] as
nn.Linear stores its weight (weight_kn=True for [K][N]). Rows are split over ranks as
torch.chunk / DTensor Shard(0) split them (row_shard). The library is found through
$SSC_LIB, else build/lib/libstarscream.so of this checkout.
"""
import ctypes
import os

import torch

AUTO, UNFUSED, CHUNKED, FUSED = 0, 1, 2, 3  # sscGemmVariant_t: sscGemmAuto .. sscGemmFused
_F16, _F32, _BF16 = 6, 7, 9                 # sscDataType_t
_WEIGHT_KN = 0x1                            # SSC_GEMM_WEIGHT_KN
_OUT_AS_INPUT = -1                          # SSC_GEMM_OUT_AS_INPUT


def _library():
    path = os.environ.get("SSC_LIB") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "lib", "libstarscream.so")
    lib = ctypes.CDLL(path)
    lib.sscGetLastError.restype = ctypes.c_char_p
    lib.sscGetLastError.argtypes = [ctypes.c_void_p]
    return lib


_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = _library()
    return _lib


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class GemmArgs(ctypes.Structure):  # sscGemmArgs_v1
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("dtype", ctypes.c_int), ("outDtype", ctypes.c_int),
                ("x", ctypes.c_void_p), ("w", ctypes.c_void_p), ("y", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("variant", ctypes.c_int), ("chunks", ctypes.c_int),
                ("xGathered", ctypes.c_void_p), ("bias", ctypes.c_void_p)]


class StarscreamError(RuntimeError):
    pass


def _check(result, what, comm=None):
    if result != 0:
        msg = lib().sscGetLastError(comm)
        raise StarscreamError("%s failed (%d): %s" % (what, result, msg.decode() if msg else "?"))


def _version():
    v = ctypes.c_int(0)
    _check(lib().sscGetVersion(ctypes.byref(v)), "sscGetVersion")
    return v.value


def unique_id():
    """The bytes rank 0 creates and every rank passes to Comm.from_unique_id."""
    uid = UniqueId()
    _check(lib().sscGetUniqueId(ctypes.byref(uid)), "sscGetUniqueId")
    # All 128 bytes: reading the char-array field would stop at its first NUL byte.
    return ctypes.string_at(ctypes.addressof(uid), ctypes.sizeof(uid))


def row_shard(m, nranks, rank):
    """(first_row, num_rows) of an m-row matrix owned by rank (torch.chunk's rule)."""
    c = -(-m // nranks) if m > 0 else 0
    first = min(m, c * rank)
    return first, min(m, c * (rank + 1)) - first


class Comm:
    def __init__(self, handle):
        self.handle = handle

    @classmethod
    def from_unique_id(cls, rank, world, uid):
        if len(uid) != ctypes.sizeof(UniqueId):
            raise ValueError("a unique id has %d bytes, not %d" % (ctypes.sizeof(UniqueId), len(uid)))
        u = UniqueId()
        ctypes.memmove(ctypes.byref(u), uid, len(uid))
        h = ctypes.c_void_p()
        _check(lib().sscCommInitRank(ctypes.byref(h), world, u, rank), "sscCommInitRank")
        return cls(h)

    def destroy(self):
        if self.handle:
            _check(lib().sscCommFinalize(self.handle), "sscCommFinalize", self.handle)
            _check(lib().sscCommDestroy(self.handle), "sscCommDestroy", self.handle)
            self.handle = None


def _dtype(t):
    if t.dtype == torch.bfloat16:
        return _BF16
    if t.dtype == torch.float16:
        return _F16
    raise TypeError("Starscream GEMM ops take bfloat16 or float16 tensors, not %s" % t.dtype)


class Gemm:
    """An sscGemm_t context on comm (its workspace and BLAS handle)."""

    def __init__(self, comm, workspace_bytes=0):
        class Config(ctypes.Structure):
            _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint),
                        ("version", ctypes.c_uint), ("workspaceBytes", ctypes.c_size_t)]
        cfg = Config(ctypes.sizeof(Config), 0x5353474D, _version(), workspace_bytes)
        self.comm = comm
        self.handle = ctypes.c_void_p()
        _check(lib().sscGemmCreate(comm.handle, ctypes.byref(cfg), ctypes.byref(self.handle)),
               "sscGemmCreate", comm.handle)
        self.rank = ctypes.c_int(0)
        self.nranks = ctypes.c_int(0)
        _check(lib().sscCommUserRank(comm.handle, ctypes.byref(self.rank)), "sscCommUserRank")
        _check(lib().sscCommCount(comm.handle, ctypes.byref(self.nranks)), "sscCommCount")

    def _args(self, m, n, k, x, w, y, weight_kn, variant, chunks, out_dtype, bias=None):
        a = GemmArgs()
        a.size, a.magic, a.version = ctypes.sizeof(GemmArgs), 0x53534741, _version()
        a.m, a.n, a.k = m, n, k
        a.dtype = _dtype(w)
        a.outDtype = _F32 if out_dtype == torch.float32 else _OUT_AS_INPUT
        a.x = x.data_ptr() if x is not None and x.numel() else None
        a.w = w.data_ptr()
        a.y = y.data_ptr() if y.numel() else None
        a.flags = _WEIGHT_KN if weight_kn else 0
        a.variant, a.chunks, a.xGathered = variant, chunks, None
        if bias is not None:
            if bias.dtype != out_dtype or not bias.is_contiguous() or bias.numel() != n:
                raise ValueError("bias must be a contiguous [%d] tensor of the output's dtype" % n)
            a.bias = bias.data_ptr()
        return a

    def _stream(self):
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def reduce_scatter(self, x, w, weight_kn=False, variant=AUTO, chunks=0, out=None, out_dtype=None,
                       bias=None):
        """x [M][K_r], w [N][K_r] (this rank's K-slice): this rank's rows of sum_r x_r @ w_r.T,
        plus bias [N] (the layer's, the same on every rank) once."""
        assert x.is_contiguous() and w.is_contiguous() and x.dtype == w.dtype
        m, k = x.shape
        n = w.shape[1] if weight_kn else w.shape[0]
        _, rows = row_shard(m, self.nranks.value, self.rank.value)
        y = out if out is not None else torch.empty(rows, n, dtype=out_dtype or x.dtype, device=x.device)
        a = self._args(m, n, k, x, w, y, weight_kn, variant, chunks, y.dtype, bias)
        _check(lib().sscGemmReduceScatter(self.handle, ctypes.byref(a), self._stream()),
               "sscGemmReduceScatter", self.comm.handle)
        return y

    def all_gather(self, x_rows, w, m, weight_kn=False, variant=AUTO, chunks=0, out=None, out_dtype=None,
                   bias=None):
        """x_rows: this rank's rows of X [m][K]; w [N][K]: all_gather(X) @ w.T (+ bias [N], this
        rank's slice of the layer's), [m][N]."""
        assert x_rows.is_contiguous() and w.is_contiguous() and x_rows.dtype == w.dtype
        k = w.shape[0] if weight_kn else w.shape[1]
        n = w.shape[1] if weight_kn else w.shape[0]
        y = out if out is not None else torch.empty(m, n, dtype=out_dtype or w.dtype, device=w.device)
        a = self._args(m, n, k, x_rows, w, y, weight_kn, variant, chunks, y.dtype, bias)
        _check(lib().sscAllGatherGemm(self.handle, ctypes.byref(a), self._stream()),
               "sscAllGatherGemm", self.comm.handle)
        return y

    def query_plan(self, op, m, n, k, dtype=torch.bfloat16, variant=AUTO, chunks=0):
        """(variant, chunks) the library runs for this shape; op (sscGemmOp_t) 0 = reduce-scatter,
        1 = all-gather."""
        a = GemmArgs()
        a.size, a.magic, a.version = ctypes.sizeof(GemmArgs), 0x53534741, _version()
        a.m, a.n, a.k = m, n, k
        a.dtype = _BF16 if dtype == torch.bfloat16 else _F16
        a.outDtype, a.variant, a.chunks = _OUT_AS_INPUT, variant, chunks
        v, c = ctypes.c_int(), ctypes.c_int()
        _check(lib().sscGemmQueryPlan(self.handle, op, ctypes.byref(a), ctypes.byref(v), ctypes.byref(c)),
               "sscGemmQueryPlan", self.comm.handle)
        return v.value, c.value

    def destroy(self):
        if self.handle:
            _check(lib().sscGemmDestroy(self.handle), "sscGemmDestroy")
            self.handle = None
