# SPDX-License-Identifier: MIT
"""starscream.KvCache: a paged KV cache sharded by sequence position over a communicator's
ranks (sscKvCache_t), with append, decode and prefill as the custom ops
torch.ops.starscream.kv_append, attention_decode and attention_prefill (starscream/ops.py), and
the host bookkeeping calls (release, trim, lengths, owners) as plain methods."""
import ctypes

from . import _capi
from ._shapes import kv_append as _check_append
from ._errors import StarscreamError
from .gemm import _torch_ops

_KV_DTYPES = {"bfloat16": _capi.BFLOAT16, "float16": _capi.FLOAT16}


class KvCache:
    """sscKvCacheCreate (collective: every rank passes the same configuration). Every call is
    collective: every rank makes the same calls in the same order with the same seq_ids and
    counts, each with its own tensors, on one stream (torch's current stream when they run).

    dtype: the K/V storage, bfloat16 (default) or float16 (name or torch dtype); interleave:
    "round_robin", "contiguous" (runs of block_pages pages) or "sequence_owner" (not sharded:
    sliding-window layers); exchange: "auto", "allgather" or "fused". device: where `state`
    lives (default: the current CUDA device when the communicator runs on a GPU, else the CPU).
    """

    def __init__(self, comm, *, num_kv_heads, head_dim, page_size, max_pages, max_seqs,
                 max_batch, max_q_heads, dtype="bfloat16", interleave="round_robin",
                 block_pages=16, exchange="auto", device=None):
        name = str(dtype).replace("torch.", "")
        if name not in _KV_DTYPES:
            raise ValueError(f"KvCache dtype must be bfloat16 or float16, not {dtype}")
        for what, value, table in (("interleave", interleave, _capi.KV_INTERLEAVE),
                                   ("exchange", exchange, _capi.KV_EXCHANGE)):
            if value not in table:
                raise ValueError(f"KvCache {what} must be one of {list(table)}, not {value!r}")
        lib = _capi.lib()
        cfg = _capi.kv_cache_config(lib.version)
        cfg.numKvHeads, cfg.headDim, cfg.pageSize = num_kv_heads, head_dim, page_size
        cfg.maxPages, cfg.maxSeqs, cfg.maxBatch = max_pages, max_seqs, max_batch
        cfg.maxQHeads, cfg.dtype = max_q_heads, _KV_DTYPES[name]
        cfg.interleave, cfg.blockPages = _capi.KV_INTERLEAVE[interleave], block_pages
        cfg.exchange = _capi.KV_EXCHANGE[exchange]
        h = ctypes.c_void_p()
        lib.check(lib.sscKvCacheCreate(comm.handle, ctypes.byref(cfg), ctypes.byref(h)),
                  "sscKvCacheCreate", comm.handle)
        self.comm = comm
        self._handle = h.value
        self.num_kv_heads, self.head_dim, self.dtype_name = num_kv_heads, head_dim, name
        self.nranks = comm.size
        # The ops as attributes, for torch.compile to read (see Gemm).
        ops = _torch_ops("kv_append", "attention_decode", "attention_prefill")
        self._no_torch = ops if isinstance(ops, str) else None
        self._append_op, self._decode_op, self._prefill_op = (None,) * 3 if self._no_torch else ops
        self.state = self.dtype = None
        if not self._no_torch:
            import torch
            self.dtype = getattr(torch, name)
            if device is None:
                on_gpu = comm.device >= 0 and torch.cuda.is_available()
                device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else "cpu"
            # The appends' and attention calls' shared dependency (starscream/ops.py): never
            # read or written by the library.
            self.state = torch.zeros(1, dtype=torch.int64, device=device)

    @property
    def handle(self):
        if not self._handle:
            raise StarscreamError("the KvCache is closed")
        return self._handle

    def _need_torch(self):
        if self._no_torch:
            raise StarscreamError(f"KvCache: {self._no_torch}")

    def append(self, seq_ids, k, v):
        """Token i (k[i], v[i]: [num_kv_heads][head_dim], the cache's dtype) goes to the end of
        sequence seq_ids[i]. The same tokens on every rank; each keeps the ones it owns. Not
        inside a CUDA graph capture."""
        self._need_torch()
        seq_ids = [int(s) for s in seq_ids]
        _check_append(tuple(k.shape), tuple(v.shape), len(seq_ids), self.num_kv_heads,
                      self.head_dim)
        for name, t in (("k", k), ("v", v)):
            if t.dtype != self.dtype:
                raise TypeError(f"{name} must be the cache's dtype {self.dtype}, not {t.dtype}")
        self._append_op(k, v, self.state, self.handle, seq_ids)

    def decode(self, q, seq_ids, scale, *, sinks=None, window=0, q_sharded_heads=False,
               out_sharded_heads=False):
        """One decode step: q [batch][heads][head_dim] (float32, float16 or bfloat16; this
        rank's slice of the heads with q_sharded_heads) over the cached tokens of seq_ids (the
        last `window` with window > 0). Returns (out [batch][heads][head_dim] in q's dtype,
        lse float32 [batch][heads]), heads: all, or this rank's slice with out_sharded_heads.
        sinks: None or float32 [all query heads]. Can be captured into a CUDA graph."""
        self._need_torch()
        flags = (_capi.ATTN_Q_SHARDED_HEADS if q_sharded_heads else 0) | \
                (_capi.ATTN_OUT_SHARDED_HEADS if out_sharded_heads else 0)
        return self._decode_op(q, self.state, sinks, self.handle,
                                            [int(s) for s in seq_ids], float(scale), window,
                                            flags, self.nranks)

    def prefill(self, q, seq_ids, cu_seqlens, scale, *, sinks=None, window=0,
                out_sharded_heads=False):
        """Causal attention of each sequence's new tokens (appended first) over everything
        cached for it: q [T][heads][head_dim] (every rank the same), sequence seq_ids[b] owning
        rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1. Returns (out, lse) per token, as decode.
        Not inside a CUDA graph capture."""
        self._need_torch()
        flags = _capi.ATTN_OUT_SHARDED_HEADS if out_sharded_heads else 0
        return self._prefill_op(q, self.state, sinks, self.handle,
                                             [int(s) for s in seq_ids],
                                             [int(c) for c in cu_seqlens], float(scale), window,
                                             flags, self.nranks)

    # Host bookkeeping: no tensors, not custom ops; call them outside compiled functions.
    def release(self, seq_id):
        """Empties the sequence and returns its pages to the pools (every rank alike)."""
        lib = _capi.lib()
        lib.check(lib.sscKvCacheReleaseSequence(self.handle, seq_id), "sscKvCacheReleaseSequence")

    def trim(self, seq_id, position):
        """Frees the sequence's pages that hold only tokens before `position` (a sliding-window
        layer: position = length - window); later windows must start at or after it."""
        lib = _capi.lib()
        lib.check(lib.sscKvCacheTrimSequence(self.handle, seq_id, position),
                  "sscKvCacheTrimSequence")

    def sequence_length(self, seq_id):
        lib = _capi.lib()
        n = ctypes.c_int()
        lib.check(lib.sscKvCacheSequenceLength(self.handle, seq_id, ctypes.byref(n)),
                  "sscKvCacheSequenceLength")
        return n.value

    def token_owner(self, seq_id, position):
        """The rank that stores token `position` of the sequence (placement only)."""
        lib = _capi.lib()
        r = ctypes.c_int()
        lib.check(lib.sscKvCacheTokenOwner(self.handle, seq_id, position, ctypes.byref(r)),
                  "sscKvCacheTokenOwner")
        return r.value

    def close(self):
        """sscKvCacheDestroy, after the current stream's work (which may still use the cache)."""
        if self._handle:
            if self.state is not None and self.state.is_cuda:
                import torch
                torch.cuda.current_stream(self.state.device).synchronize()
            lib = _capi.lib()
            h, self._handle = self._handle, None
            lib.check(lib.sscKvCacheDestroy(h), "sscKvCacheDestroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
