# SPDX-License-Identifier: MIT
"""Row sharding (sscGemmRowShard's rule) and the 2D-sharding helper (sscGemmShard2d).

row_shard is pure arithmetic in Python so that the custom ops' fake kernels can compute output
shapes while tracing (symbolic sizes included) without calling into the library; the test
tests/python/test_sharding.py checks it against sscGemmRowShard. shard_2d calls the C helper.
"""
import collections
import ctypes

from . import _capi


def row_shard(m, nranks, rank):
    """(first_row, num_rows) of an m-row matrix owned by `rank` of `nranks`: torch.chunk's and
    DTensor Shard(0)'s rule (starscream_ops.h): with c = ceil(m / nranks), rank r owns rows
    [min(m, r c), min(m, (r + 1) c)), so the last ranks may hold fewer rows or none."""
    if nranks < 1 or not 0 <= rank < nranks:
        raise ValueError(f"row_shard: rank {rank} of {nranks} ranks")
    if m < 0:
        raise ValueError(f"row_shard: m = {m} rows")
    c = (m + nranks - 1) // nranks
    first = min(m, rank * c)
    return first, min(m, (rank + 1) * c) - first


def row_shard_c(m, nranks, rank):
    """row_shard, answered by libstarscream's sscGemmRowShard."""
    lib = _capi.lib()
    first, rows = ctypes.c_int64(), ctypes.c_int64()
    lib.check(lib.sscGemmRowShard(m, nranks, rank, ctypes.byref(first), ctypes.byref(rows)),
              "sscGemmRowShard")
    return first.value, rows.value


Shard2dPlan = collections.namedtuple(
    "Shard2dPlan", "two_d op m n k est_us other_est_us")
Shard2dPlan.__doc__ = """sscGemmShard2d's answer. op: "reduce_scatter" (split K over the
partitions, call Gemm.reduce_scatter) or "all_gather" (split N, call Gemm.all_gather); m, n, k:
the op's shape on partition 0 (the split dimension is row_shard(dim, partitions, p) on partition
p); two_d: the dimension orthogonal to the inter-GPU split is the one split; est_us and
other_est_us: the rule's estimates for the choice and for the other option."""


def shard_2d(inter, m, n, k, partitions, *, elem_bytes=2, peak_tflops=0.0, hbm_gbps=0.0,
             coll_gbps=0.0, coll_latency_us=0.0):
    """The intra-GPU sharding of a linear layer Y[m][n] = X[m][k] W^T (the per-GPU problem after
    the inter-GPU split `inter`, "column" or "row" parallel), over `partitions` partitions of
    one GPU: sscGemmShard2d. Host arithmetic, no communicator; the machine figures left at 0
    take the defaults of docs/gemm.md. Call it when building the model, not inside a function
    compiled with torch.compile (it is a ctypes call, which Dynamo cannot trace)."""
    if inter not in _capi.LINEAR_PARALLEL:
        raise ValueError(f"shard_2d: inter must be one of {sorted(_capi.LINEAR_PARALLEL)}, "
                         f"not {inter!r}")
    lib = _capi.lib()
    q = _capi.gemm_shard2d_query(lib.version)
    q.inter, q.m, q.n, q.k, q.partitions = _capi.LINEAR_PARALLEL[inter], m, n, k, partitions
    q.elemBytes, q.peakTflops, q.hbmGbps = elem_bytes, peak_tflops, hbm_gbps
    q.collGbps, q.collLatencyUs = coll_gbps, coll_latency_us
    p = _capi.gemm_shard2d_plan(lib.version)
    lib.check(lib.sscGemmShard2d(ctypes.byref(q), ctypes.byref(p)), "sscGemmShard2d")
    return Shard2dPlan(bool(p.twoD), _capi.GEMM_OP_NAME[p.op], p.m, p.n, p.k, p.estUs,
                       p.otherEstUs)
