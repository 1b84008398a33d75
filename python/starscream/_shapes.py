# SPDX-License-Identifier: MIT
"""Argument checks and output shapes of the custom ops, shared by their real kernels and their
fake kernels (torch.library.register_fake), so torch.compile sees the shapes and the errors the
real call would give. Pure Python on shapes (tuples of ints, or SymInts while tracing) and dtype
names, no torch: tests/python/test_shapes.py runs them without PyTorch.

Layouts follow starscream_ops.h: row-major, outermost dimension first.
"""
from .sharding import row_shard

GEMM_DTYPES = ("torch.bfloat16", "torch.float16")
ATTN_IO_DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16")
ATTN_Q_SHARDED_HEADS = 0x1
ATTN_OUT_SHARDED_HEADS = 0x2


def _dims(what, shape, n):
    if len(shape) != n:
        raise ValueError(f"{what} must have {n} dimensions, not shape {tuple(shape)}")


def gemm_dtypes(x_dtype, w_dtype, out_dtype, bias_dtype):
    """x and w: bfloat16 or float16, the same; out_dtype: None (x's) or float32; bias: y's."""
    if str(x_dtype) not in GEMM_DTYPES or str(w_dtype) != str(x_dtype):
        raise TypeError(f"Starscream GEMM ops take x and w of one dtype, bfloat16 or float16 "
                        f"(x is {x_dtype}, w is {w_dtype})")
    if out_dtype is not None and str(out_dtype) not in ("torch.float32", str(x_dtype)):
        raise TypeError(f"out_dtype must be None (x's dtype) or torch.float32, not {out_dtype}")
    y_dtype = str(out_dtype) if out_dtype is not None else str(x_dtype)
    if bias_dtype is not None and str(bias_dtype) != y_dtype:
        raise TypeError(f"bias must have the output's dtype {y_dtype}, not {bias_dtype}")


def _weight_nk(w_shape, weight_kn):
    _dims("w", w_shape, 2)
    return (w_shape[1], w_shape[0]) if weight_kn else (w_shape[0], w_shape[1])


def gemm_reduce_scatter(x_shape, w_shape, weight_kn, nranks, rank, bias_shape=None):
    """x [m][k] (this rank's K-slice), w [n][k] ([k][n] with weight_kn): y is this rank's
    rows of the sum, [rows][n] with rows from row_shard(m, nranks, rank). Returns (rows, n)."""
    _dims("x", x_shape, 2)
    n, k = _weight_nk(w_shape, weight_kn)
    if x_shape[1] != k:
        raise ValueError(f"x is [m][k] = {tuple(x_shape)} but w holds k = {k} "
                         f"(w {tuple(w_shape)}{', weight_kn' if weight_kn else ''})")
    if bias_shape is not None and tuple(bias_shape) != (n,):
        raise ValueError(f"bias must be [n] = [{n}], not {tuple(bias_shape)}")
    _, rows = row_shard(x_shape[0], nranks, rank)
    return rows, n


def all_gather_gemm(x_shape, w_shape, m, weight_kn, nranks, rank, bias_shape=None):
    """x [rows][k] (this rank's rows of X [m][k], row_shard(m, nranks, rank)), w [n][k]
    ([k][n] with weight_kn): y = all_gather(X) w^T, [m][n]. Returns ((m, n), k)."""
    _dims("x", x_shape, 2)
    n, k = _weight_nk(w_shape, weight_kn)
    _, rows = row_shard(m, nranks, rank)
    if x_shape[0] != rows or x_shape[1] != k:
        raise ValueError(f"x must be this rank's rows of X [m][k]: [{rows}][{k}] for m = {m} "
                         f"over {nranks} ranks (rank {rank}), not {tuple(x_shape)}")
    if bias_shape is not None and tuple(bias_shape) != (n,):
        raise ValueError(f"bias must be this rank's [n] = [{n}] slice, not {tuple(bias_shape)}")
    return (m, n), k


def kv_append(k_shape, v_shape, num_tokens, num_kv_heads, head_dim):
    """k and v: [tokens][num_kv_heads][head_dim], one token per seq_ids entry."""
    want = (num_tokens, num_kv_heads, head_dim)
    for name, shape in (("k", k_shape), ("v", v_shape)):
        if tuple(shape) != want:
            raise ValueError(f"{name} must be [tokens][kv heads][head dim] = {list(want)} "
                             f"(one token per seq_ids entry), not {list(shape)}")


def _heads(q_heads_in, nranks, flags, q_sharded_allowed=True):
    if flags & ~(ATTN_Q_SHARDED_HEADS | ATTN_OUT_SHARDED_HEADS):
        raise ValueError(f"flags {flags:#x}: only the sharded-heads flags (0x1, 0x2) exist")
    if flags & ATTN_Q_SHARDED_HEADS and not q_sharded_allowed:
        raise ValueError("the prefill takes every query head on every rank (no q_sharded_heads)")
    q_heads = q_heads_in * nranks if flags & ATTN_Q_SHARDED_HEADS else q_heads_in
    if flags & ATTN_OUT_SHARDED_HEADS:
        if q_heads % nranks:
            raise ValueError(f"out_sharded_heads: {q_heads} query heads do not split over "
                             f"{nranks} ranks")
        return q_heads, q_heads // nranks
    return q_heads, q_heads


def attention_decode(q_shape, batch, nranks, flags):
    """q [batch][heads][head_dim] (heads: this rank's slice with ATTN_Q_SHARDED_HEADS). Returns
    (numQHeads, out shape [batch][out heads][head_dim], lse shape [batch][out heads])."""
    _dims("q", q_shape, 3)
    if q_shape[0] != batch:
        raise ValueError(f"q holds {q_shape[0]} sequences, seq_ids {batch}")
    q_heads, out_heads = _heads(q_shape[1], nranks, flags)
    return q_heads, (batch, out_heads, q_shape[2]), (batch, out_heads)


def attention_prefill(q_shape, batch, cu_seqlens, nranks, flags):
    """q [T][heads][head_dim] with T = cu_seqlens[batch]; cu_seqlens: batch + 1 non-decreasing
    offsets from 0. Returns (numQHeads, out shape [T][out heads][head_dim], lse shape)."""
    _dims("q", q_shape, 3)
    cu = list(cu_seqlens)
    if len(cu) != batch + 1 or cu[0] != 0 or any(b < a for a, b in zip(cu, cu[1:])):
        raise ValueError(f"cu_seqlens must be len(seq_ids) + 1 = {batch + 1} non-decreasing "
                         f"offsets starting at 0, not {cu}")
    if q_shape[0] != cu[-1]:
        raise ValueError(f"q holds {q_shape[0]} tokens, cu_seqlens ends at {cu[-1]}")
    q_heads, out_heads = _heads(q_shape[1], nranks, flags, q_sharded_allowed=False)
    return q_heads, (q_shape[0], out_heads, q_shape[2]), (q_shape[0], out_heads)
