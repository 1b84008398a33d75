# SPDX-License-Identifier: MIT
"""Starscream's operators (starscream_ops.h) as torch.library custom ops, namespace starscream:

    torch.ops.starscream.gemm_reduce_scatter   sscGemmReduceScatter
    torch.ops.starscream.all_gather_gemm       sscAllGatherGemm
    torch.ops.starscream.kv_append             sscKvCacheAppend
    torch.ops.starscream.attention_decode      sscAttentionDecode
    torch.ops.starscream.attention_prefill     sscAttentionPrefill

Each runs on the current CUDA stream of its input's device (CPU tensors: the host backend's
queue, which finishes before the call returns) and has a fake kernel, so torch.compile traces
through it (fullgraph too) without running it. The handles (the sscGemm_t or sscKvCache_t) are
ints: torch.compile bakes them into the graph as constants, as it does seq_ids and cu_seqlens.
Most code calls them through starscream.Gemm and starscream.KvCache, which fill in those
arguments. What works under torch.compile and CUDA-graph capture: docs/python.md.

Importing this module imports torch and registers the ops (once per process).
"""
import ctypes
import inspect
from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import _capi, _shapes
from ._errors import StarscreamError

_DTYPE_CODES = {torch.float16: _capi.FLOAT16, torch.float32: _capi.FLOAT32,
                torch.bfloat16: _capi.BFLOAT16}
_GRAPH_HINT = ("the current CUDA stream is being captured into a CUDA graph; see docs/python.md "
               "(CUDA graphs) for what may be captured")


def op(name):
    """torch.ops.starscream.<name>: what the classes call (an OpOverloadPacket, which
    torch.compile traces as any PyTorch op)."""
    return getattr(torch.ops.starscream, name)


def _custom_op(name, mutates_args=(), cudagraph_unsafe=False):
    kwargs = {"mutates_args": mutates_args}
    # Ops the library refuses on a capturing stream carry PyTorch's cudagraph_unsafe tag where
    # this PyTorch has it, so Inductor's CUDA graphs (mode="reduce-overhead") leave them out of
    # the captured part instead of failing at capture.
    tag = getattr(torch.Tag, "cudagraph_unsafe", None) if hasattr(torch, "Tag") else None
    if cudagraph_unsafe and tag is not None and \
            "tags" in inspect.signature(torch.library.custom_op).parameters:
        kwargs["tags"] = (tag,)
    return torch.library.custom_op("starscream::" + name, **kwargs)


def _capturing(t):
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def _stream(t):
    """The stream argument for tensors on t's device: the current CUDA stream (a HIP stream on
    ROCm PyTorch), or NULL for CPU tensors (the host backend's queue)."""
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else None


def _dense(t):
    """t as the library takes it: contiguous, and on a GPU 16-byte aligned (a view that starts
    mid-allocation may not be)."""
    if t is None:
        return None
    t = t.contiguous()
    if t.is_cuda and t.data_ptr() % 16:
        t = t.clone()
    return t


def _ptr(t):
    return t.data_ptr() if t is not None and t.numel() else None


def _ids(values):
    return (ctypes.c_int32 * len(values))(*[int(v) for v in values])


def _run(lib, call, result, t):
    if result != 0:
        try:
            lib.check(result, call)
        except StarscreamError as e:
            if _capturing(t):
                raise StarscreamError(f"{e} ({_GRAPH_HINT})", code=e.code, call=call) from None
            raise


def _io_dtype(dtype):
    if dtype not in _DTYPE_CODES:
        raise TypeError(f"attention takes float32, float16 or bfloat16 queries, not {dtype}")


def _sinks(sinks, q_heads):
    if sinks is None:
        return None
    if sinks.dtype != torch.float32 or tuple(sinks.shape) != (q_heads,):
        raise ValueError(f"sinks must be float32 [{q_heads}] (one logit per query head, every "
                         f"head on every rank), not {sinks.dtype} {list(sinks.shape)}")
    return _dense(sinks)


# ------------------------------------------------------------------ GEMM + collectives
def _gemm_checks(x, w, bias, out_dtype):
    _shapes.gemm_dtypes(x.dtype, w.dtype, out_dtype, None if bias is None else bias.dtype)
    return None if bias is None else tuple(bias.shape)


def _gemm_args(lib, x, w, y, bias, m, n, k, weight_kn, variant, chunks, copy_engine, out_dtype):
    a = _capi.gemm_args(lib.version)
    a.m, a.n, a.k = m, n, k
    a.dtype = _DTYPE_CODES[w.dtype]
    a.outDtype = _capi.FLOAT32 if out_dtype == torch.float32 else _capi.GEMM_OUT_AS_INPUT
    a.x, a.w, a.y, a.bias = _ptr(x), _ptr(w), _ptr(y), _ptr(bias)
    a.flags = (_capi.GEMM_WEIGHT_KN if weight_kn else 0) | \
              (_capi.GEMM_COPY_ENGINE if copy_engine else 0)
    a.variant, a.chunks = variant, chunks
    return a


@_custom_op("gemm_reduce_scatter")
def gemm_reduce_scatter(x: Tensor, w: Tensor, bias: Optional[Tensor], gemm: int, nranks: int,
                        rank: int, weight_kn: bool, variant: int, chunks: int, copy_engine: bool,
                        out_dtype: Optional[torch.dtype]) -> Tensor:
    """This rank's rows of sum over ranks of x w^T (+ bias once): x [m][k_r], w [n][k_r]."""
    bias_shape = _gemm_checks(x, w, bias, out_dtype)
    rows, n = _shapes.gemm_reduce_scatter(tuple(x.shape), tuple(w.shape), weight_kn, nranks,
                                          rank, bias_shape)
    x, w, bias = _dense(x), _dense(w), _dense(bias)
    y = torch.empty((rows, n), dtype=out_dtype or x.dtype, device=x.device)
    lib = _capi.lib()
    a = _gemm_args(lib, x, w, y, bias, x.shape[0], n, x.shape[1], weight_kn, variant, chunks,
                   copy_engine, out_dtype)
    _run(lib, "sscGemmReduceScatter",
         lib.sscGemmReduceScatter(gemm, ctypes.byref(a), _stream(x)), x)
    return y


@gemm_reduce_scatter.register_fake
def _(x, w, bias, gemm, nranks, rank, weight_kn, variant, chunks, copy_engine, out_dtype):
    bias_shape = _gemm_checks(x, w, bias, out_dtype)
    rows, n = _shapes.gemm_reduce_scatter(tuple(x.shape), tuple(w.shape), weight_kn, nranks,
                                          rank, bias_shape)
    return x.new_empty((rows, n), dtype=out_dtype or x.dtype)


@_custom_op("all_gather_gemm")
def all_gather_gemm(x: Tensor, w: Tensor, bias: Optional[Tensor], gemm: int, m: int,
                    nranks: int, rank: int, weight_kn: bool, variant: int, chunks: int,
                    copy_engine: bool, out_dtype: Optional[torch.dtype],
                    gather_x: bool) -> Tuple[Tensor, Tensor]:
    """(all_gather(X) w^T (+ bias), the gathered X [m][k] if gather_x else a [0][k] tensor):
    x is this rank's rows of X."""
    bias_shape = _gemm_checks(x, w, bias, out_dtype)
    (m, n), k = _shapes.all_gather_gemm(tuple(x.shape), tuple(w.shape), m, weight_kn, nranks,
                                        rank, bias_shape)
    x, w, bias = _dense(x), _dense(w), _dense(bias)
    y = torch.empty((m, n), dtype=out_dtype or x.dtype, device=x.device)
    gathered = torch.empty((m if gather_x else 0, k), dtype=x.dtype, device=x.device)
    lib = _capi.lib()
    a = _gemm_args(lib, x, w, y, bias, m, n, k, weight_kn, variant, chunks, copy_engine,
                   out_dtype)
    a.xGathered = _ptr(gathered)
    _run(lib, "sscAllGatherGemm", lib.sscAllGatherGemm(gemm, ctypes.byref(a), _stream(x)), x)
    return y, gathered


@all_gather_gemm.register_fake
def _(x, w, bias, gemm, m, nranks, rank, weight_kn, variant, chunks, copy_engine, out_dtype,
      gather_x):
    bias_shape = _gemm_checks(x, w, bias, out_dtype)
    (m, n), k = _shapes.all_gather_gemm(tuple(x.shape), tuple(w.shape), m, weight_kn, nranks,
                                        rank, bias_shape)
    return (x.new_empty((m, n), dtype=out_dtype or x.dtype),
            x.new_empty((m if gather_x else 0, k)))


# ------------------------------------------------------------------ KV cache and attention
# `state` is the cache's one-element tensor (KvCache.state): appends declare that they mutate it
# and the attention ops read it. That data dependency is what keeps torch.compile from dropping
# an append (it returns nothing) or moving it after the attention that must see its tokens.
@_custom_op("kv_append", mutates_args=("state",), cudagraph_unsafe=True)
def kv_append(k: Tensor, v: Tensor, state: Tensor, cache: int, seq_ids: List[int]) -> None:
    """Appends token i (k[i], v[i]: [kv heads][head dim]) to sequence seq_ids[i]."""
    if _capturing(k):
        raise StarscreamError("kv_append (sscKvCacheAppend) cannot run on a stream being captured "
                              "into a CUDA graph: it builds its page lists on the host; append "
                              "outside the graph (docs/python.md, CUDA graphs)",
                              call="sscKvCacheAppend")
    k, v = _dense(k), _dense(v)
    lib = _capi.lib()
    _run(lib, "sscKvCacheAppend",
         lib.sscKvCacheAppend(cache, len(seq_ids), _ids(seq_ids), _ptr(k), _ptr(v), _stream(k)), k)


@kv_append.register_fake
def _(k, v, state, cache, seq_ids):
    return None


@_custom_op("attention_decode")
def attention_decode(q: Tensor, state: Tensor, sinks: Optional[Tensor], cache: int,
                     seq_ids: List[int], scale: float, window: int, flags: int,
                     nranks: int) -> Tuple[Tensor, Tensor]:
    """(out [batch][heads][head dim] in q's dtype, lse float32 [batch][heads])."""
    _io_dtype(q.dtype)
    q_heads, out_shape, lse_shape = _shapes.attention_decode(tuple(q.shape), len(seq_ids),
                                                             nranks, flags)
    q, sinks = _dense(q), _sinks(sinks, q_heads)
    out = torch.empty(out_shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
    lib = _capi.lib()
    _run(lib, "sscAttentionDecode",
         lib.sscAttentionDecode(cache, _ptr(q), _DTYPE_CODES[q.dtype], q_heads, len(seq_ids),
                                _ids(seq_ids), scale, _ptr(sinks), window, flags, _ptr(out),
                                _ptr(lse), _stream(q)), q)
    return out, lse


@attention_decode.register_fake
def _(q, state, sinks, cache, seq_ids, scale, window, flags, nranks):
    _io_dtype(q.dtype)
    _, out_shape, lse_shape = _shapes.attention_decode(tuple(q.shape), len(seq_ids), nranks,
                                                       flags)
    return q.new_empty(out_shape), q.new_empty(lse_shape, dtype=torch.float32)


@_custom_op("attention_prefill", cudagraph_unsafe=True)
def attention_prefill(q: Tensor, state: Tensor, sinks: Optional[Tensor], cache: int,
                      seq_ids: List[int], cu_seqlens: List[int], scale: float, window: int,
                      flags: int, nranks: int) -> Tuple[Tensor, Tensor]:
    """(out [T][heads][head dim], lse float32 [T][heads]) for the new tokens' queries q."""
    _io_dtype(q.dtype)
    q_heads, out_shape, lse_shape = _shapes.attention_prefill(tuple(q.shape), len(seq_ids),
                                                              cu_seqlens, nranks, flags)
    if _capturing(q):
        raise StarscreamError("attention_prefill (sscAttentionPrefill) cannot run on a stream "
                              "being captured into a CUDA graph: it builds its page lists on the "
                              "host; run it outside the graph (docs/python.md, CUDA graphs)",
                              call="sscAttentionPrefill")
    q, sinks = _dense(q), _sinks(sinks, q_heads)
    out = torch.empty(out_shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
    lib = _capi.lib()
    _run(lib, "sscAttentionPrefill",
         lib.sscAttentionPrefill(cache, _ptr(q), _DTYPE_CODES[q.dtype], q_heads, len(seq_ids),
                                 _ids(seq_ids), _ids(cu_seqlens), scale, _ptr(sinks), window,
                                 flags, _ptr(out), _ptr(lse), _stream(q)), q)
    return out, lse


@attention_prefill.register_fake
def _(q, state, sinks, cache, seq_ids, cu_seqlens, scale, window, flags, nranks):
    _io_dtype(q.dtype)
    _, out_shape, lse_shape = _shapes.attention_prefill(tuple(q.shape), len(seq_ids), cu_seqlens,
                                                        nranks, flags)
    return q.new_empty(out_shape), q.new_empty(lse_shape, dtype=torch.float32)
