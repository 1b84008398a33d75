# SPDX-License-Identifier: MIT
"""ctypes mirrors of starscream.h and starscream_ops.h, and the loaded library.

Every structure is field for field the C one (names as the header spells them, camelCase), and
every function used gets its argtypes, so a pointer is never narrowed to a C int.
tests/python/test_capi_layout.py compiles a program against the real headers and compares each
structure's size, every field's offset and the initializers' values with these.
"""
import ctypes
import threading

from . import _find
from ._errors import RESULT_NAMES, StarscreamError

# ------------------------------------------------------------------ starscream.h
UNIQUE_ID_BYTES = 128
# sscDataType_t
INT8, UINT8, INT32, UINT32, INT64, UINT64 = 0, 1, 2, 3, 4, 5
FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = 6, 7, 8, 9


class UniqueId(ctypes.Structure):
    # Bytes, not c_char: a c_char array reads back as a string cut at its first zero byte.
    _fields_ = [("internal", ctypes.c_uint8 * UNIQUE_ID_BYTES)]


class RankTopology(ctypes.Structure):  # sscRankTopology_t
    _fields_ = [("node", ctypes.c_int), ("gpu", ctypes.c_int), ("partition", ctypes.c_int),
                ("partitionsOnGpu", ctypes.c_int), ("gpus", ctypes.c_int), ("nodes", ctypes.c_int)]


# ------------------------------------------------------------------ starscream_ops.h
# sscKvInterleave_t, sscKvExchange_t
KV_INTERLEAVE = {"round_robin": 0, "contiguous": 1, "sequence_owner": 2}
KV_EXCHANGE = {"auto": 0, "allgather": 1, "fused": 2}
ATTN_Q_SHARDED_HEADS = 0x1    # SSC_ATTN_Q_SHARDED_HEADS
ATTN_OUT_SHARDED_HEADS = 0x2  # SSC_ATTN_OUT_SHARDED_HEADS
KV_CACHE_CONFIG_MAGIC = 0x53534B56

# sscGemmVariant_t, sscGemmOp_t, sscLinearParallel_t
GEMM_VARIANT = {"auto": 0, "unfused": 1, "chunked": 2, "fused": 3}
GEMM_VARIANT_NAME = {v: k for k, v in GEMM_VARIANT.items()}
GEMM_OP = {"reduce_scatter": 0, "all_gather": 1}
GEMM_OP_NAME = {v: k for k, v in GEMM_OP.items()}
LINEAR_PARALLEL = {"column": 0, "row": 1}
GEMM_WEIGHT_KN = 0x1      # SSC_GEMM_WEIGHT_KN
GEMM_COPY_ENGINE = 0x2    # SSC_GEMM_COPY_ENGINE
GEMM_OUT_AS_INPUT = -1    # SSC_GEMM_OUT_AS_INPUT
GEMM_CONFIG_MAGIC = 0x5353474D
GEMM_ARGS_MAGIC = 0x53534741
GEMM_SHARD2D_QUERY_MAGIC = 0x53533244
GEMM_SHARD2D_PLAN_MAGIC = 0x53533250


class KvCacheConfig(ctypes.Structure):  # sscKvCacheConfig_v1
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("numKvHeads", ctypes.c_int), ("headDim", ctypes.c_int),
                ("pageSize", ctypes.c_int), ("maxPages", ctypes.c_int),
                ("maxSeqs", ctypes.c_int), ("maxBatch", ctypes.c_int),
                ("maxQHeads", ctypes.c_int), ("dtype", ctypes.c_int),
                ("interleave", ctypes.c_int), ("blockPages", ctypes.c_int),
                ("exchange", ctypes.c_int)]


class GemmConfig(ctypes.Structure):  # sscGemmConfig_v1
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("workspaceBytes", ctypes.c_size_t)]


class GemmArgs(ctypes.Structure):  # sscGemmArgs_v1
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("dtype", ctypes.c_int), ("outDtype", ctypes.c_int),
                ("x", ctypes.c_void_p), ("w", ctypes.c_void_p), ("y", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("variant", ctypes.c_int), ("chunks", ctypes.c_int),
                ("xGathered", ctypes.c_void_p), ("bias", ctypes.c_void_p)]


class GemmShard2dQuery(ctypes.Structure):  # sscGemmShard2dQuery_v1
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("inter", ctypes.c_int), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                ("k", ctypes.c_int64), ("partitions", ctypes.c_int), ("elemBytes", ctypes.c_int),
                ("peakTflops", ctypes.c_double), ("hbmGbps", ctypes.c_double),
                ("collGbps", ctypes.c_double), ("collLatencyUs", ctypes.c_double)]


class GemmShard2dPlan(ctypes.Structure):  # sscGemmShard2dPlan_v1
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("twoD", ctypes.c_int), ("op", ctypes.c_int), ("m", ctypes.c_int64),
                ("n", ctypes.c_int64), ("k", ctypes.c_int64), ("estUs", ctypes.c_double),
                ("otherEstUs", ctypes.c_double)]


def kv_cache_config(version):
    """SSC_KV_CACHE_CONFIG_INITIALIZER."""
    return KvCacheConfig(ctypes.sizeof(KvCacheConfig), KV_CACHE_CONFIG_MAGIC, version,
                         0, 0, 0, 0, 0, 0, 0, BFLOAT16, KV_INTERLEAVE["round_robin"], 16,
                         KV_EXCHANGE["auto"])


def gemm_config(version):
    """SSC_GEMM_CONFIG_INITIALIZER."""
    return GemmConfig(ctypes.sizeof(GemmConfig), GEMM_CONFIG_MAGIC, version, 0)


def gemm_args(version):
    """SSC_GEMM_ARGS_INITIALIZER."""
    a = GemmArgs()
    a.size, a.magic, a.version = ctypes.sizeof(GemmArgs), GEMM_ARGS_MAGIC, version
    a.dtype, a.outDtype, a.variant = BFLOAT16, GEMM_OUT_AS_INPUT, GEMM_VARIANT["auto"]
    return a


def gemm_shard2d_query(version):
    """SSC_GEMM_SHARD2D_QUERY_INITIALIZER."""
    q = GemmShard2dQuery()
    q.size, q.magic, q.version = ctypes.sizeof(GemmShard2dQuery), GEMM_SHARD2D_QUERY_MAGIC, version
    q.inter, q.partitions, q.elemBytes = LINEAR_PARALLEL["column"], 1, 2
    return q


def gemm_shard2d_plan(version):
    """SSC_GEMM_SHARD2D_PLAN_INITIALIZER."""
    p = GemmShard2dPlan()
    p.size, p.magic, p.version = ctypes.sizeof(GemmShard2dPlan), GEMM_SHARD2D_PLAN_MAGIC, version
    p.op = GEMM_OP["reduce_scatter"]
    return p


# ------------------------------------------------------------------ prototypes
_vp, _i, _i64, _f = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_float
_P = ctypes.POINTER
_PROTOTYPES = {
    # name: (restype, argtypes)
    "sscGetVersion": (_i, [_P(_i)]),
    "sscGetErrorString": (ctypes.c_char_p, [_i]),
    "sscGetLastError": (ctypes.c_char_p, [_vp]),
    "sscGetUniqueId": (_i, [_P(UniqueId)]),
    "sscCommInitRank": (_i, [_P(_vp), _i, UniqueId, _i]),
    "sscCommFinalize": (_i, [_vp]),
    "sscCommDestroy": (_i, [_vp]),
    "sscCommAbort": (_i, [_vp]),
    "sscCommCount": (_i, [_vp, _P(_i)]),
    "sscCommUserRank": (_i, [_vp, _P(_i)]),
    "sscCommDevice": (_i, [_vp, _P(_i)]),
    "sscCommGetRankTopology": (_i, [_vp, _i, _P(RankTopology)]),
    "sscKvCacheCreate": (_i, [_vp, _P(KvCacheConfig), _P(_vp)]),
    "sscKvCacheDestroy": (_i, [_vp]),
    "sscKvCacheAppend": (_i, [_vp, _i, _P(ctypes.c_int32), _vp, _vp, _vp]),
    "sscKvCacheReleaseSequence": (_i, [_vp, _i]),
    "sscKvCacheTrimSequence": (_i, [_vp, _i, _i]),
    "sscKvCacheSequenceLength": (_i, [_vp, _i, _P(_i)]),
    "sscKvCacheTokenOwner": (_i, [_vp, _i, _i, _P(_i)]),
    "sscAttentionDecode": (_i, [_vp, _vp, _i, _i, _i, _P(ctypes.c_int32), _f, _vp, _i, _i, _vp,
                                _vp, _vp]),
    "sscAttentionPrefill": (_i, [_vp, _vp, _i, _i, _i, _P(ctypes.c_int32), _P(ctypes.c_int32), _f,
                                 _vp, _i, _i, _vp, _vp, _vp]),
    "sscGemmRowShard": (_i, [_i64, _i, _i, _P(_i64), _P(_i64)]),
    "sscGemmCreate": (_i, [_vp, _P(GemmConfig), _P(_vp)]),
    "sscGemmDestroy": (_i, [_vp]),
    "sscGemmReduceScatter": (_i, [_vp, _P(GemmArgs), _vp]),
    "sscAllGatherGemm": (_i, [_vp, _P(GemmArgs), _vp]),
    "sscGemmQueryPlan": (_i, [_vp, _i, _P(GemmArgs), _P(_i), _P(_i)]),
    "sscGemmShard2d": (_i, [_P(GemmShard2dQuery), _P(GemmShard2dPlan)]),
}


class Library:
    """libstarscream.so loaded with ctypes, its functions typed (attributes by C name)."""

    def __init__(self, path):
        self.path = path
        self.so = ctypes.CDLL(path)
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(self.so, name)
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)
        v = ctypes.c_int(0)
        self.check(self.sscGetVersion(ctypes.byref(v)), "sscGetVersion")
        self.version = v.value  # SSC_VERSION_CODE: MAJOR*10000 + MINOR*100 + PATCH

    def check(self, result, call, comm=None):
        """Raises StarscreamError for a result other than sscSuccess, with the library's reason."""
        if result == 0:
            return
        why = self.sscGetLastError(comm) or b""
        name = RESULT_NAMES.get(result, f"result {result}")
        raise StarscreamError(f"{call}: {name}: {why.decode(errors='replace') or '(no message)'}",
                              code=result, call=call)


_lock = threading.Lock()
_lib = None


def lib():
    """The process's Library, loaded on first use from starscream.library(). Refuses a library
    whose major.minor differs from this package's: the ctypes mirrors above follow the headers
    of this version, and 0.x minor releases may change them."""
    global _lib
    with _lock:
        if _lib is None:
            loaded = Library(_find.find(_find.LIBSTARSCREAM))
            from . import __version__
            want = tuple(int(p) for p in __version__.split(".")[:2])
            have = (loaded.version // 10000, loaded.version // 100 % 100)
            if have != want:
                raise StarscreamError(
                    f"{loaded.path} is Starscream {have[0]}.{have[1]} (version code "
                    f"{loaded.version}), this package mirrors the {want[0]}.{want[1]} headers: "
                    "install the package from the same checkout as the library, or point "
                    "STARSCREAM_LIB_DIR at a library of the same version")
            _lib = loaded
        return _lib
