# SPDX-License-Identifier: MIT
"""A small PyTorch-facing wrapper of Starscream's sharded KV cache and decode (starscream_ops.h).

ctypes over libstarscream.so: tensors travel as their data_ptr(), work is queued on PyTorch's
current CUDA stream, and every call is collective over the communicator (every rank makes the
same calls with the same host arguments; each passes its own tensors). Errors raise
StarscreamError with the library's message.

    lib = Library()                         # SSC_LIB, else build/lib/libstarscream.so
    comm = lib.comm_init(nranks, unique_id, rank)   # unique_id: lib.unique_id() on rank 0, shared
    cache = KvCache(lib, comm, num_kv_heads=1, head_dim=128, page_size=16, max_pages=...,
                    max_seqs=8, max_batch=8, max_q_heads=8)
    cache.append(seq_ids, k, v)             # k, v: [tokens][kv heads][head dim], same on every rank
    out, lse = cache.decode(q, seq_ids, scale)      # q: [batch][q heads][head dim]
    out, lse = cache.prefill(q, seq_ids, cu_seqlens, scale)  # q: [tokens][q heads][head dim]
                                            # (prefill: not run from Python yet)

examples/attention/decode_step.py runs one layer's decode with it under mpirun.
"""
import ctypes
import os

import torch

SSC_UNIQUE_ID_BYTES = 128
_DTYPES = {torch.float16: 6, torch.float32: 7, torch.bfloat16: 9}  # sscDataType_t
_INTERLEAVE = {"round_robin": 0, "contiguous": 1, "sequence_owner": 2}  # sscKvInterleave_t
_EXCHANGE = {"auto": 0, "allgather": 1, "fused": 2}  # sscKvExchange_t
SSC_ATTN_Q_SHARDED_HEADS = 0x1
SSC_ATTN_OUT_SHARDED_HEADS = 0x2
_KV_CONFIG_MAGIC = 0x53534B56


class StarscreamError(RuntimeError):
    pass


class _UniqueId(ctypes.Structure):
    # Bytes, not c_char: a c_char array reads back as a string cut at its first zero byte.
    _fields_ = [("internal", ctypes.c_uint8 * SSC_UNIQUE_ID_BYTES)]


class _KvCacheConfig(ctypes.Structure):  # sscKvCacheConfig_t, field for field
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("numKvHeads", ctypes.c_int), ("headDim", ctypes.c_int),
                ("pageSize", ctypes.c_int), ("maxPages", ctypes.c_int),
                ("maxSeqs", ctypes.c_int), ("maxBatch", ctypes.c_int),
                ("maxQHeads", ctypes.c_int), ("dtype", ctypes.c_int),
                ("interleave", ctypes.c_int), ("blockPages", ctypes.c_int),
                ("exchange", ctypes.c_int)]


class Library:
    """libstarscream.so and the few entry points the wrapper uses."""

    def __init__(self, path=None):
        path = path or os.environ.get("SSC_LIB") or os.path.join(
            os.path.dirname(__file__), "..", "..", "build", "lib", "libstarscream.so")
        self.so = ctypes.CDLL(path)
        so, vp, i, f = self.so, ctypes.c_void_p, ctypes.c_int, ctypes.c_float
        so.sscGetErrorString.restype = ctypes.c_char_p
        so.sscGetErrorString.argtypes = [i]
        so.sscGetLastError.restype = ctypes.c_char_p
        so.sscGetLastError.argtypes = [vp]
        so.sscGetUniqueId.argtypes = [ctypes.POINTER(_UniqueId)]
        so.sscCommInitRank.argtypes = [ctypes.POINTER(vp), i, _UniqueId, i]
        so.sscCommFinalize.argtypes = [vp]
        so.sscCommDestroy.argtypes = [vp]
        so.sscGetVersion.argtypes = [ctypes.POINTER(i)]
        so.sscCommCount.argtypes = [vp, ctypes.POINTER(i)]
        so.sscKvCacheCreate.argtypes = [vp, ctypes.POINTER(_KvCacheConfig), ctypes.POINTER(vp)]
        so.sscKvCacheDestroy.argtypes = [vp]
        so.sscKvCacheAppend.argtypes = [vp, i, ctypes.POINTER(ctypes.c_int32), vp, vp, vp]
        so.sscKvCacheSequenceLength.argtypes = [vp, i, ctypes.POINTER(i)]
        so.sscKvCacheReleaseSequence.argtypes = [vp, i]
        so.sscKvCacheTrimSequence.argtypes = [vp, i, i]
        so.sscAttentionDecode.argtypes = [vp, vp, i, i, i, ctypes.POINTER(ctypes.c_int32), f, vp,
                                          i, i, vp, vp, vp]
        so.sscAttentionPrefill.argtypes = [vp, vp, i, i, i, ctypes.POINTER(ctypes.c_int32),
                                           ctypes.POINTER(ctypes.c_int32), f, vp, i, i, vp, vp, vp]
        version = ctypes.c_int()
        self.check(so.sscGetVersion(ctypes.byref(version)))
        self.version = version.value

    def check(self, result):
        if result != 0:
            name = self.so.sscGetErrorString(result).decode()
            raise StarscreamError(f"{name}: {self.so.sscGetLastError(None).decode()}")

    def unique_id(self):
        uid = _UniqueId()
        self.check(self.so.sscGetUniqueId(ctypes.byref(uid)))
        return bytes(uid.internal)

    def comm_init(self, nranks, unique_id, rank):
        """A communicator (collective over the nranks ranks; every rank passes rank 0's id)."""
        uid = _UniqueId()
        if len(unique_id) != SSC_UNIQUE_ID_BYTES:
            raise ValueError("a unique id is %d bytes" % SSC_UNIQUE_ID_BYTES)
        ctypes.memmove(ctypes.addressof(uid), unique_id, SSC_UNIQUE_ID_BYTES)
        comm = ctypes.c_void_p()
        self.check(self.so.sscCommInitRank(ctypes.byref(comm), nranks, uid, rank))
        return comm

    def comm_destroy(self, comm):
        self.check(self.so.sscCommFinalize(comm))
        self.check(self.so.sscCommDestroy(comm))


def _stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def _ids(seq_ids):
    return (ctypes.c_int32 * len(seq_ids))(*[int(s) for s in seq_ids])


class KvCache:
    """A KV cache sharded by sequence over the communicator's ranks (sscKvCacheCreate)."""

    def __init__(self, lib, comm, *, num_kv_heads, head_dim, page_size, max_pages, max_seqs,
                 max_batch, max_q_heads, dtype=torch.bfloat16, interleave="round_robin",
                 block_pages=16, exchange="auto"):
        self.lib, self.dtype, self.head_dim, self.num_kv_heads = lib, dtype, head_dim, num_kv_heads
        cfg = _KvCacheConfig(ctypes.sizeof(_KvCacheConfig), _KV_CONFIG_MAGIC, lib.version,
                             num_kv_heads, head_dim, page_size, max_pages, max_seqs, max_batch,
                             max_q_heads, _DTYPES[dtype], _INTERLEAVE[interleave], block_pages,
                             _EXCHANGE[exchange])
        self.handle = ctypes.c_void_p()
        lib.check(lib.so.sscKvCacheCreate(comm, ctypes.byref(cfg), ctypes.byref(self.handle)))
        count = ctypes.c_int()
        lib.check(lib.so.sscCommCount(comm, ctypes.byref(count)))
        self.nranks = count.value

    def close(self):
        if self.handle:
            torch.cuda.current_stream().synchronize()  # queued work may still use the cache
            self.lib.check(self.lib.so.sscKvCacheDestroy(self.handle))
            self.handle = ctypes.c_void_p()

    def append(self, seq_ids, k, v):
        """Token i (k[i], v[i]: [kv heads][head dim], the cache's dtype) goes to the end of
        sequence seq_ids[i]. The same tokens on every rank; each keeps the ones it owns."""
        for t in (k, v):
            if t.dtype != self.dtype or not t.is_contiguous() or t.shape[1:] != (self.num_kv_heads, self.head_dim):
                raise ValueError(f"k and v must be contiguous [tokens][{self.num_kv_heads}][{self.head_dim}] {self.dtype}")
        self.lib.check(self.lib.so.sscKvCacheAppend(self.handle, len(seq_ids), _ids(seq_ids),
                                                    ctypes.c_void_p(k.data_ptr()),
                                                    ctypes.c_void_p(v.data_ptr()), _stream()))

    def sequence_length(self, seq_id):
        n = ctypes.c_int()
        self.lib.check(self.lib.so.sscKvCacheSequenceLength(self.handle, seq_id, ctypes.byref(n)))
        return n.value

    def release(self, seq_id):
        """Empties the sequence and returns its pages to the pools (every rank alike)."""
        self.lib.check(self.lib.so.sscKvCacheReleaseSequence(self.handle, seq_id))

    def trim(self, seq_id, position):
        """Frees the sequence's pages that hold only tokens before `position` (a sliding-window
        layer: position = length - window); later windows must start at or after it."""
        self.lib.check(self.lib.so.sscKvCacheTrimSequence(self.handle, seq_id, position))

    def decode(self, q, seq_ids, scale, *, sinks=None, window=0, flags=0, out=None, lse=None):
        """One decode step: q [batch][heads][head dim] (this rank's slice of the heads with
        SSC_ATTN_Q_SHARDED_HEADS; float32, float16 or bfloat16) over the cached tokens of
        seq_ids. Returns (out, lse): [batch][out heads][head dim] in q's dtype and float32
        [batch][out heads] (out heads: all, or this rank's slice with SSC_ATTN_OUT_SHARDED_HEADS)."""
        if not q.is_contiguous():
            raise ValueError("q must be contiguous")
        batch, heads = q.shape[0], q.shape[1]
        q_heads = heads * self.nranks if flags & SSC_ATTN_Q_SHARDED_HEADS else heads
        out_heads = q_heads // self.nranks if flags & SSC_ATTN_OUT_SHARDED_HEADS else q_heads
        if out is None:
            out = torch.empty((batch, out_heads, self.head_dim), dtype=q.dtype, device=q.device)
        if lse is None:
            lse = torch.empty((batch, out_heads), dtype=torch.float32, device=q.device)
        sink_ptr = ctypes.c_void_p(sinks.data_ptr()) if sinks is not None else None
        self.lib.check(self.lib.so.sscAttentionDecode(
            self.handle, ctypes.c_void_p(q.data_ptr()), _DTYPES[q.dtype], q_heads, batch,
            _ids(seq_ids), float(scale), sink_ptr, window, flags, ctypes.c_void_p(out.data_ptr()),
            ctypes.c_void_p(lse.data_ptr()), _stream()))
        return out, lse

    def prefill(self, q, seq_ids, cu_seqlens, scale, *, sinks=None, window=0, flags=0, out=None,
                lse=None):
        """Causal attention of new tokens (their K/V appended first): q [tokens][heads][head dim]
        (every rank the same), sequence seq_ids[b] owning rows cu_seqlens[b] .. cu_seqlens[b + 1]
        - 1, its last tokens. Returns (out, lse) as decode, per token."""
        if not q.is_contiguous():
            raise ValueError("q must be contiguous")
        tokens, heads = q.shape[0], q.shape[1]
        if len(cu_seqlens) != len(seq_ids) + 1 or int(cu_seqlens[-1]) != tokens:
            raise ValueError("cu_seqlens must have len(seq_ids) + 1 entries ending at q.shape[0]")
        out_heads = heads // self.nranks if flags & SSC_ATTN_OUT_SHARDED_HEADS else heads
        if out is None:
            out = torch.empty((tokens, out_heads, self.head_dim), dtype=q.dtype, device=q.device)
        if lse is None:
            lse = torch.empty((tokens, out_heads), dtype=torch.float32, device=q.device)
        sink_ptr = ctypes.c_void_p(sinks.data_ptr()) if sinks is not None else None
        self.lib.check(self.lib.so.sscAttentionPrefill(
            self.handle, ctypes.c_void_p(q.data_ptr()), _DTYPES[q.dtype], heads, len(seq_ids),
            _ids(seq_ids), _ids(cu_seqlens), float(scale), sink_ptr, window, flags,
            ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(lse.data_ptr()), _stream()))
        return out, lse
