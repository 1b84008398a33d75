# SPDX-License-Identifier: MIT
"""starscream.Gemm: a GEMM-collective context (sscGemm_t) on a communicator, whose
reduce_scatter and all_gather run the custom ops torch.ops.starscream.gemm_reduce_scatter and
all_gather_gemm (starscream/ops.py). Creating the context and query_plan need no PyTorch."""
import ctypes

from . import _capi
from ._errors import StarscreamError


def _variant(variant):
    if variant not in _capi.GEMM_VARIANT:
        raise ValueError(f"variant must be one of {list(_capi.GEMM_VARIANT)}, not {variant!r}")
    return _capi.GEMM_VARIANT[variant]


def _torch_ops(*names):
    """The custom ops `names` (torch.ops.starscream.<name>, importing starscream.ops and so
    PyTorch), or the reason PyTorch cannot be imported."""
    try:
        from . import ops
    except ImportError as e:
        return f"the tensor calls need PyTorch ({e})"
    return [ops.op(name) for name in names]


class Gemm:
    """sscGemmCreate on comm (local: no communication). Calls on one context go on one stream
    (torch's current stream when they run); every rank makes the same calls with the same
    shapes, types, flags, variant and chunks (they are collective over comm)."""

    def __init__(self, comm, workspace_bytes=0):
        lib = _capi.lib()
        cfg = _capi.gemm_config(lib.version)
        cfg.workspaceBytes = workspace_bytes
        h = ctypes.c_void_p()
        lib.check(lib.sscGemmCreate(comm.handle, ctypes.byref(cfg), ctypes.byref(h)),
                  "sscGemmCreate", comm.handle)
        self.comm = comm
        self._handle = h.value
        # Plain ints read by the tensor calls, which torch.compile traces: no ctypes call there.
        self.rank, self.nranks = comm.rank, comm.size
        # The ops are looked up now, not at the first tensor call: that call may be traced by
        # torch.compile, which reads them here as plain attributes. Without PyTorch only
        # query_plan and close work.
        ops = _torch_ops("gemm_reduce_scatter", "all_gather_gemm")
        self._no_torch = ops if isinstance(ops, str) else None
        self._rs_op, self._ag_op = (None, None) if self._no_torch else ops

    @property
    def handle(self):
        if not self._handle:
            raise StarscreamError("the Gemm context is closed")
        return self._handle

    def _need_torch(self):
        if self._no_torch:
            raise StarscreamError(f"Gemm: {self._no_torch}")

    def reduce_scatter(self, x, w, *, bias=None, weight_kn=False, variant="auto", chunks=0,
                       copy_engine=False, out_dtype=None):
        """GEMM + reduce-scatter (a row-parallel layer): x [m][k_r] and w [n][k_r] ([k_r][n]
        with weight_kn) are this rank's K-slices; returns this rank's rows (row_shard(m,
        nranks, rank)) of sum over ranks of x @ w.T, plus bias [n] (the layer's, the same on
        every rank) once. bfloat16 or float16; out_dtype=torch.float32 keeps the sum in fp32.
        variant: "auto" (the library's rule), "unfused", "chunked" or "fused";
        copy_engine: SSC_GEMM_COPY_ENGINE (fused only; not under CUDA-graph capture)."""
        self._need_torch()
        return self._rs_op(
            x, w, bias, self.handle, self.nranks, self.rank, weight_kn, _variant(variant), chunks,
            copy_engine, out_dtype)

    def all_gather(self, x, w, m, *, bias=None, weight_kn=False, variant="auto", chunks=0,
                   copy_engine=False, out_dtype=None, gather_x=False):
        """All-gather + GEMM: x is this rank's rows (row_shard(m, nranks, rank)) of X [m][k],
        w [n][k] ([k][n] with weight_kn); returns all_gather(X) @ w.T (+ bias [n], this rank's
        slice of the layer's), [m][n]; with gather_x=True, (y, the gathered X [m][k])."""
        self._need_torch()
        y, gathered = self._ag_op(
            x, w, bias, self.handle, m, self.nranks, self.rank, weight_kn, _variant(variant),
            chunks, copy_engine, out_dtype, gather_x)
        return (y, gathered) if gather_x else y

    def query_plan(self, op, m, n, k, *, dtype="bfloat16", variant="auto", chunks=0,
                   weight_kn=False, copy_engine=False):
        """(variant, chunks) a call of op ("reduce_scatter" or "all_gather") with these
        arguments runs (sscGemmQueryPlan); dtype "bfloat16"/"float16" or the torch dtype."""
        if op not in _capi.GEMM_OP:
            raise ValueError(f"op must be one of {list(_capi.GEMM_OP)}, not {op!r}")
        name = str(dtype).replace("torch.", "")
        if name not in ("bfloat16", "float16"):
            raise ValueError(f"dtype must be bfloat16 or float16, not {dtype}")
        lib = _capi.lib()
        a = _capi.gemm_args(lib.version)
        a.m, a.n, a.k = m, n, k
        a.dtype = _capi.BFLOAT16 if name == "bfloat16" else _capi.FLOAT16
        a.flags = (_capi.GEMM_WEIGHT_KN if weight_kn else 0) | \
                  (_capi.GEMM_COPY_ENGINE if copy_engine else 0)
        a.variant, a.chunks = _variant(variant), chunks
        v, c = ctypes.c_int(), ctypes.c_int()
        lib.check(lib.sscGemmQueryPlan(self.handle, _capi.GEMM_OP[op], ctypes.byref(a),
                                       ctypes.byref(v), ctypes.byref(c)),
                  "sscGemmQueryPlan", self.comm.handle)
        return _capi.GEMM_VARIANT_NAME[v.value], c.value

    def close(self):
        """sscGemmDestroy. Work queued with the context must have finished (on a GPU:
        synchronize its stream first)."""
        if self._handle:
            lib = _capi.lib()
            h, self._handle = self._handle, None
            lib.check(lib.sscGemmDestroy(h), "sscGemmDestroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
