# SPDX-License-Identifier: MIT
"""Checks of the custom ops against PyTorch, shared by test_torch_ops.py (one rank, the host
backend, CPU tensors: runs wherever PyTorch is installed) and gpu_ops_test.py (K ranks on a GPU).

Every rank builds every rank's inputs from seeds, so each computes the reference of the whole
layer alone, with torch in fp32 on the unsharded data: no collective takes part in a reference.
Each check returns None when it passes, else a sentence saying what differed.
"""
import math

import torch

import starscream

GEMM_TOL = {torch.bfloat16: 2e-2, torch.float16: 4e-3}


class Ctx:
    """The communicator and what the checks share on one rank."""

    def __init__(self, comm, device, dtype=torch.bfloat16):
        self.comm, self.device, self.dtype = comm, torch.device(device), dtype
        self.rank, self.nranks = comm.rank, comm.size
        self.gemm = starscream.Gemm(comm)

    def close(self):
        self.gemm.close()


def gen(seed, shape, dtype, device, scale=1.0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(dtype).to(device)


def rel_err(got, want):
    if want.numel() == 0:
        return 0.0
    return ((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-6)).item()


def _close(what, got, want, tol):
    if tuple(got.shape) != tuple(want.shape):
        return f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    err = rel_err(got, want)
    return None if err <= tol else f"{what}: max relative error {err:.3g} > {tol}"


# ------------------------------------------------------------------ GEMM + collectives
def rs_inputs(ctx, m=37, n=48, k=40, r=None):
    """Rank r's K-slice x_r [m][k_r], w_r [n][k_r] of a layer with K = k * nranks."""
    r = ctx.rank if r is None else r
    x = gen(100 + r, (m, k), ctx.dtype, ctx.device)
    w = gen(200 + r, (n, k), ctx.dtype, ctx.device, scale=1 / math.sqrt(k))
    return x, w


def rs_reference(ctx, m=37, n=48, k=40, bias=None):
    total = sum(x.float() @ w.float().T for x, w in
                (rs_inputs(ctx, m, n, k, r) for r in range(ctx.nranks)))
    if bias is not None:
        total = total + bias.float()
    first, rows = starscream.row_shard(m, ctx.nranks, ctx.rank)
    return total[first:first + rows]


def check_gemm_reduce_scatter(ctx, variant="auto", with_bias=False, out_dtype=None,
                              weight_kn=False):
    x, w = rs_inputs(ctx)
    y_dtype = out_dtype or ctx.dtype
    bias = gen(7, (w.shape[0],), y_dtype, ctx.device) if with_bias else None
    wt = w.T.contiguous() if weight_kn else w
    y = ctx.gemm.reduce_scatter(x, wt, bias=bias, variant=variant, out_dtype=out_dtype,
                                weight_kn=weight_kn)
    if y.dtype != y_dtype:
        return f"y is {y.dtype}, want {y_dtype}"
    return _close("reduce_scatter", y, rs_reference(ctx, bias=bias), GEMM_TOL[ctx.dtype])


def ag_inputs(ctx, m=37, n=48, k=40):
    """X [m][k] (every rank can make it), this rank's rows of it, and this rank's w [n][k]."""
    X = gen(300, (m, k), ctx.dtype, ctx.device)
    first, rows = starscream.row_shard(m, ctx.nranks, ctx.rank)
    w = gen(400 + ctx.rank, (n, k), ctx.dtype, ctx.device, scale=1 / math.sqrt(k))
    return X, X[first:first + rows].contiguous(), w


def check_all_gather_gemm(ctx, variant="auto", with_bias=False, gather_x=False):
    X, x_rows, w = ag_inputs(ctx)
    bias = gen(8 + ctx.rank, (w.shape[0],), ctx.dtype, ctx.device) if with_bias else None
    out = ctx.gemm.all_gather(x_rows, w, X.shape[0], bias=bias, variant=variant, gather_x=gather_x)
    y, gathered = out if gather_x else (out, None)
    want = X.float() @ w.float().T + (bias.float() if bias is not None else 0)
    why = _close("all_gather", y, want, GEMM_TOL[ctx.dtype])
    if why is None and gather_x and not torch.equal(gathered, X):
        why = "the gathered X differs from X"
    return why


def opcheck_gemm(ctx):
    x, w = rs_inputs(ctx)
    _, x_rows, w_ag = ag_inputs(ctx)
    ops = torch.ops.starscream
    torch.library.opcheck(ops.gemm_reduce_scatter.default,
                          (x, w, None, ctx.gemm.handle, ctx.nranks, ctx.rank, False, 0, 0, False, None))
    torch.library.opcheck(ops.all_gather_gemm.default,
                          (x_rows, w_ag, None, ctx.gemm.handle, 37, ctx.nranks, ctx.rank, False, 0,
                           0, False, None, True))


def check_compiled_gemm(ctx, backend="inductor"):
    """torch.compile(fullgraph=True) through Gemm's methods: the ops' fake kernels give the
    shapes, and the compiled layer equals the eager one."""
    x, w = rs_inputs(ctx)
    X, x_rows, w_ag = ag_inputs(ctx)
    bias = gen(7, (w.shape[0],), ctx.dtype, ctx.device)

    def layer(x, w, bias, x_rows, w_ag):
        y = torch.relu(ctx.gemm.reduce_scatter(x, w, bias=bias)) * 2
        z, g = ctx.gemm.all_gather(x_rows, w_ag, X.shape[0], gather_x=True)
        return y, z + 1, g

    compiled = torch.compile(layer, fullgraph=True, backend=backend)
    got, want = compiled(x, w, bias, x_rows, w_ag), layer(x, w, bias, x_rows, w_ag)
    for name, a, b in zip(("reduce_scatter", "all_gather", "gathered"), got, want):
        why = _close(f"compiled {name}", a, b, 1e-2)
        if why:
            return why
    return None


# ------------------------------------------------------------------ KV cache and attention
KV = dict(num_kv_heads=2, head_dim=64, page_size=4)
Q_HEADS = 8


def make_cache(ctx, **kw):
    args = dict(KV, max_pages=512, max_seqs=8, max_batch=8, max_q_heads=Q_HEADS,
                exchange="allgather" if ctx.device.type == "cpu" else "auto")
    args.update(kw)
    return starscream.KvCache(ctx.comm, **args)


def kv_tokens(ctx, seed, n):
    shape = (n, KV["num_kv_heads"], KV["head_dim"])
    return gen(seed, shape, torch.bfloat16, ctx.device), gen(seed + 1, shape, torch.bfloat16, ctx.device)


def attention_reference(q, k, v, scale, causal_from=None):
    """SDPA in fp32 over one sequence: q [T][H][d], k, v [L][kv][d]; the queries are the last T
    positions when causal_from is given (their own position and before), else all see all."""
    qq = q.float().transpose(0, 1)[None]                      # [1][H][T][d]
    ratio = q.shape[1] // k.shape[1]
    kk = k.float().repeat_interleave(ratio, dim=1).transpose(0, 1)[None]
    vv = v.float().repeat_interleave(ratio, dim=1).transpose(0, 1)[None]
    scores = (qq @ kk.transpose(-1, -2)) * scale               # [1][H][T][L]
    if causal_from is not None:
        T, L = q.shape[0], k.shape[0]
        pos = torch.arange(L - T, L, device=q.device)[:, None]
        scores = scores.masked_fill(torch.arange(L, device=q.device)[None, :] > pos, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vv
    return out[0].transpose(0, 1), torch.logsumexp(scores, dim=-1)[0].transpose(0, 1)


class KvState:
    """A cache filled with `lengths` tokens per sequence, and the tokens kept for references."""

    def __init__(self, ctx, lengths, **kw):
        self.ctx, self.cache = ctx, make_cache(ctx, **kw)
        self.k, self.v = [], []
        for s, n in enumerate(lengths):
            k, v = kv_tokens(ctx, 1000 + 10 * s, n)
            self.cache.append([s] * n, k, v)
            self.k.append(k)
            self.v.append(v)

    def grow(self, seed):
        """One new token per sequence (a decode step's append)."""
        n = len(self.k)
        k, v = kv_tokens(self.ctx, seed, n)
        self.cache.append(list(range(n)), k, v)
        for s in range(n):
            self.k[s] = torch.cat([self.k[s], k[s:s + 1]])
            self.v[s] = torch.cat([self.v[s], v[s:s + 1]])

    def reference_decode(self, q, scale):
        refs = [attention_reference(q[s:s + 1], self.k[s], self.v[s], scale) for s in range(len(self.k))]
        return torch.cat([r[0] for r in refs]), torch.cat([r[1] for r in refs])


def check_decode(ctx, out_sharded=False):
    st = KvState(ctx, [5, 37, 64, 1])
    scale = 1 / math.sqrt(KV["head_dim"])
    q = gen(77, (4, Q_HEADS, KV["head_dim"]), torch.bfloat16, ctx.device)
    out, lse = st.cache.decode(q, range(4), scale, out_sharded_heads=out_sharded)
    ref_out, ref_lse = st.reference_decode(q, scale)
    if out_sharded:
        h = Q_HEADS // ctx.nranks
        ref_out, ref_lse = ref_out[:, ctx.rank * h:(ctx.rank + 1) * h], ref_lse[:, ctx.rank * h:(ctx.rank + 1) * h]
    why = _close("decode out", out, ref_out, 2e-2) or _close("decode lse", lse, ref_lse, 1e-3)
    st.cache.close()
    return why


def check_prefill(ctx):
    """Chunked prefill: a cached prefix, then a chunk appended and attended to causally."""
    st = KvState(ctx, [9, 20])
    scale = 1 / math.sqrt(KV["head_dim"])
    chunks = [6, 3]
    for s, n in enumerate(chunks):
        k, v = kv_tokens(ctx, 2000 + 10 * s, n)
        st.cache.append([s] * n, k, v)
        st.k[s], st.v[s] = torch.cat([st.k[s], k]), torch.cat([st.v[s], v])
    cu = [0, chunks[0], chunks[0] + chunks[1]]
    q = gen(88, (cu[-1], Q_HEADS, KV["head_dim"]), torch.bfloat16, ctx.device)
    out, lse = st.cache.prefill(q, [0, 1], cu, scale)
    refs = [attention_reference(q[cu[s]:cu[s + 1]], st.k[s], st.v[s], scale, causal_from=True)
            for s in range(2)]
    why = (_close("prefill out", out, torch.cat([r[0] for r in refs]), 2e-2) or
           _close("prefill lse", lse, torch.cat([r[1] for r in refs]), 1e-3))
    st.cache.close()
    return why


def opcheck_attention(ctx):
    st = KvState(ctx, [8, 8])
    ops, c = torch.ops.starscream, st.cache
    k, v = kv_tokens(ctx, 5000, 2)
    torch.library.opcheck(ops.kv_append.default, (k, v, c.state, c.handle, [0, 1]))
    scale = 1 / math.sqrt(KV["head_dim"])
    q = gen(99, (2, Q_HEADS, KV["head_dim"]), torch.bfloat16, ctx.device)
    torch.library.opcheck(ops.attention_decode.default,
                          (q, c.state, None, c.handle, [0, 1], scale, 0, 0, ctx.nranks))
    c.append([0, 1], k, v)
    qp = gen(98, (2, Q_HEADS, KV["head_dim"]), torch.bfloat16, ctx.device)
    torch.library.opcheck(ops.attention_prefill.default,
                          (qp, c.state, None, c.handle, [0, 1], [0, 1, 2], scale, 0, 0, ctx.nranks))
    c.close()


def check_compiled_attention(ctx, backend="inductor"):
    """append + decode in one function compiled with fullgraph=True: the append is kept and
    ordered before the decode (the cache's state tensor), and the result is the reference's."""
    st = KvState(ctx, [3, 17])
    scale = 1 / math.sqrt(KV["head_dim"])

    def step(k, v, q):
        st.cache.append([0, 1], k, v)
        return st.cache.decode(q, [0, 1], scale)

    compiled = torch.compile(step, fullgraph=True, backend=backend)
    for i in range(3):
        k, v = kv_tokens(ctx, 6000 + 2 * i, 2)
        q = gen(600 + i, (2, Q_HEADS, KV["head_dim"]), torch.bfloat16, ctx.device)
        out, lse = compiled(k, v, q)
        for s in range(2):
            st.k[s] = torch.cat([st.k[s], k[s:s + 1]])
            st.v[s] = torch.cat([st.v[s], v[s:s + 1]])
        ref_out, ref_lse = st.reference_decode(q, scale)
        why = _close(f"compiled step {i} out", out, ref_out, 2e-2) or \
            _close(f"compiled step {i} lse", lse, ref_lse, 1e-3)
        if why:
            return why
    lengths = [st.cache.sequence_length(s) for s in range(2)]
    st.cache.close()
    return None if lengths == [6, 20] else f"lengths after 3 compiled appends {lengths}, want [6, 20]"


def check_errors(ctx):
    """Bad arguments fail in Python with the reason, before the library is called."""
    x, w = rs_inputs(ctx)
    cases = [(lambda: ctx.gemm.reduce_scatter(x.float(), w.float()), TypeError, "bfloat16 or float16"),
             (lambda: ctx.gemm.reduce_scatter(x, w[:, :3]), ValueError, "w holds k"),
             (lambda: ctx.gemm.all_gather(x, w, 10_000), ValueError, "this rank's rows"),
             (lambda: ctx.gemm.reduce_scatter(x, w, variant="best"), ValueError, "variant")]
    cache = make_cache(ctx)
    k, v = kv_tokens(ctx, 1, 2)
    cases += [(lambda: cache.append([0], k, v), ValueError, "one token per seq_ids entry"),
              (lambda: cache.append([0, 0], k.half(), v.half()), TypeError, "cache's dtype"),
              (lambda: cache.decode(torch.zeros(3, Q_HEADS, 64, device=ctx.device), [0, 1], 1.0),
               ValueError, "seq_ids 2"),
              (lambda: cache.prefill(torch.zeros(3, Q_HEADS, 64, device=ctx.device), [0], [0, 2], 1.0),
               ValueError, "cu_seqlens ends at 2")]
    try:
        for fn, exc, phrase in cases:
            try:
                fn()
            except exc as e:
                if phrase not in str(e):
                    return f"{exc.__name__} without '{phrase}': {e}"
            else:
                return f"no {exc.__name__} for a call that should raise '{phrase}'"
        # The library's own refusal, with its message (a sequence id past max_seqs).
        try:
            cache.append([99, 99], k, v)
            return "an append to sequence 99 of 8 was accepted"
        except starscream.StarscreamError as e:
            if "sscKvCacheAppend" not in str(e):
                return f"the library's error does not name the call: {e}"
    finally:
        cache.close()
    return None
