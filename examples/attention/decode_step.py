#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One layer's decode step with Starscream's sharded KV cache, from PyTorch, checked against SDPA.

K ranks (one per partition of a GPU) hold a KV cache sharded by sequence position
(starscream.KvCache: the custom ops torch.ops.starscream.kv_append and attention_decode); every
rank appends the same tokens and keeps the pages it owns, then each step every rank passes the
same query and gets the exact attention over all tokens. The result is compared with
torch.nn.functional.scaled_dot_product_attention over the unsharded KV in fp32, and the step is
timed (CUDA events on PyTorch's current stream, max over ranks). Default shape: one GPU's share
of Llama-3-70B at TP 8 (8 query heads, 1 KV head, head dim 128), bf16, batch 8, ~32K tokens.

    starscream-run --partitions 8 examples/attention/decode_step.py [--batch 8] \\
        [--context 32768] [--shard-heads]

(pip install ./python first, or `PYTHONPATH=python python3 -m starscream.run ...` from the
checkout.)

--window W runs a sliding-window layer instead (GPT-OSS: 128 on alternate layers): the cache is
not sharded (each sequence on one rank), every append is followed by a trim to the last W tokens
(KvCache.trim, sscKvCacheTrimSequence), so the pool holds only the windows, and the reference is
SDPA over each sequence's last W tokens.

torch.distributed runs on NCCL, served by Starscream's shim under starscream-run (which also
sets RANK, WORLD_SIZE and the rest from Open MPI's variables); the Starscream communicator comes
from that process group (its unique id through the group's store). Exit status 0 when every
rank's check passed.
"""
import argparse
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

try:
    import starscream
except ImportError:  # run from the checkout without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import starscream


def reference(q, k, v, scale):
    """SDPA over one sequence's whole KV in fp32: q [H][d], k, v [L][kv heads][d] -> out, lse."""
    qq = q.float()[None, :, None, :]                     # [1][H][1][d]
    kk = k.float().transpose(0, 1)[None]                 # [1][kv][L][d]
    vv = v.float().transpose(0, 1)[None]
    out = F.scaled_dot_product_attention(qq, kk, vv, scale=scale, enable_gqa=True)[0, :, 0, :]
    ratio = q.shape[0] // k.shape[1]
    scores = (qq @ kk.repeat_interleave(ratio, dim=1).transpose(-1, -2)) * scale  # [1][H][1][L]
    return out, torch.logsumexp(scores, dim=-1)[0, :, 0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--context", type=int, default=32768)
    ap.add_argument("--q-heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--page", type=int, default=16)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--shard-heads", action="store_true",
                    help="each rank passes and gets its slice of the query heads (a TP layer)")
    ap.add_argument("--window", type=int, default=0,
                    help="a sliding-window layer of this window, trimmed as it is appended (0: full)")
    ap.add_argument("--exchanges", default="auto",
                    help="sscKvExchange_t values to run, one cache each: auto, allgather, fused "
                         "(auto: the fused exchange where the peers' scratch maps, else the all-gather)")
    a = ap.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("nccl")
    comm = starscream.Comm.from_process_group()

    # The layer's cached K/V, the same on every rank (same seed): odd lengths around --context.
    g = torch.Generator(device="cuda").manual_seed(1)
    lengths = [max(1, a.context - 37 * b) for b in range(a.batch)]
    shape = lambda n: (n, a.kv_heads, a.head_dim)  # noqa: E731
    ks = [torch.randn(shape(n), generator=g, device="cuda").to(torch.bfloat16) for n in lengths]
    vs = [torch.randn(shape(n), generator=g, device="cuda").to(torch.bfloat16) for n in lengths]
    q = torch.randn((a.batch, a.q_heads, a.head_dim), generator=g, device="cuda").to(torch.bfloat16)
    scale = 1.0 / math.sqrt(a.head_dim)
    ids = list(range(a.batch))
    w = a.window
    ref = [reference(q[b], ks[b][-w:] if w else ks[b], vs[b][-w:] if w else vs[b], scale)
           for b in range(a.batch)]
    ref_out = torch.stack([r[0] for r in ref])
    ref_lse = torch.stack([r[1] for r in ref])

    share = a.q_heads // world
    q_in = q[:, rank * share:(rank + 1) * share].contiguous() if a.shard_heads else q
    heads = slice(rank * share, (rank + 1) * share) if a.shard_heads else slice(0, a.q_heads)
    chunk = max(w, 1024) if w else 16384
    if w:  # a window and one appended chunk per sequence, all sequences on one rank at worst
        max_pages = a.batch * (math.ceil((w + chunk) / a.page) + 1)
    else:
        max_pages = a.batch * math.ceil(max(1, math.ceil(max(lengths) / a.page)) / world) + a.batch
    failures = 0
    for exchange in a.exchanges.split(","):
        cache = starscream.KvCache(comm, num_kv_heads=a.kv_heads, head_dim=a.head_dim,
                                   page_size=a.page, max_pages=max_pages, max_seqs=a.batch,
                                   max_batch=a.batch, max_q_heads=a.q_heads,
                                   interleave="sequence_owner" if w else "round_robin",
                                   exchange=exchange)
        for b, n in enumerate(lengths):
            for t in range(0, n, chunk):
                m = min(chunk, n - t)
                cache.append([b] * m, ks[b][t:t + m], vs[b][t:t + m])
                if w:
                    cache.trim(b, max(0, t + m - w))
        shard = dict(q_sharded_heads=a.shard_heads, out_sharded_heads=a.shard_heads)
        out, lse = cache.decode(q_in, ids, scale, window=w, **shard)
        torch.cuda.synchronize()
        err = (out.float() - ref_out[:, heads]).abs().max().item()
        lse_err = (lse - ref_lse[:, heads]).abs().max().item()
        ok = err <= 2e-2 and lse_err <= 1e-3

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            cache.decode(q_in, ids, scale, window=w, **shard)
        torch.cuda.synchronize()
        dist.barrier()
        start.record()
        for _ in range(a.iters):
            cache.decode(q_in, ids, scale, window=w, **shard)
        end.record()
        end.synchronize()
        us = 1000.0 * start.elapsed_time(end) / a.iters
        cache.close()

        stats = torch.tensor([err, lse_err, us, 0.0 if ok else 1.0], dtype=torch.float64, device="cuda")
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)
        failures += int(stats[3].item())
        if rank == 0:
            kv_mb = 2 * sum(lengths) * a.kv_heads * a.head_dim * 2 / 1e6
            print(f"{'PASS' if stats[3] == 0 else 'FAIL'} K={world} exchange={exchange} batch={a.batch} "
                  f"tokens={lengths[-1]}..{lengths[0]} q_heads={a.q_heads} kv_heads={a.kv_heads} "
                  f"d={a.head_dim} shard_heads={int(a.shard_heads)} window={w}: max |out - SDPA| {stats[0]:.3g}, "
                  f"max |lse - ref| {stats[1]:.3g}; decode step {stats[2]:.1f} us (max over ranks; "
                  f"{kv_mb:.0f} MB of KV, {kv_mb / world:.0f} MB per rank)", flush=True)
    comm.close()
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
