#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One layer's decode step with Starscream's sharded KV cache, from PyTorch, checked against SDPA.

K ranks (one per partition of a GPU, launched by mpirun) hold a KV cache sharded by sequence
position (starscream_attention.KvCache over libstarscream.so); every rank appends the same
tokens and keeps the pages it owns, then each step every rank passes the same query and gets the
exact attention over all tokens. The result is compared with
torch.nn.functional.scaled_dot_product_attention over the unsharded KV in fp32, and the step is
timed (CUDA events on PyTorch's current stream, max over ranks). Default shape: one GPU's share
of Llama-3-70B at TP 8 (8 query heads, 1 KV head, head dim 128), bf16, batch 8, ~32K tokens.

    tools/emulate/partition-run.sh 8 env SSC_LIB=$PWD/build/lib/libstarscream.so \\
        python3 examples/attention/decode_step.py [--batch 8] [--context 32768] [--shard-heads]

--window W runs a sliding-window layer instead (GPT-OSS: 128 on alternate layers): the cache is
not sharded (each sequence on one rank), every append is followed by a trim to the last W tokens
(KvCache.trim, sscKvCacheTrimSequence), so the pool holds only the windows, and the reference is
SDPA over each sequence's last W tokens.

The communicator's unique id travels over a gloo group (torch.distributed, env:// from Open MPI's
variables). Exit status 0 when every rank's check passed.
"""
import argparse
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from starscream_attention import (SSC_ATTN_OUT_SHARDED_HEADS, SSC_ATTN_Q_SHARDED_HEADS,  # noqa: E402
                                  KvCache, Library)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def launch_env():
    env = os.environ
    rank = int(env.get("OMPI_COMM_WORLD_RANK", env.get("RANK", "0")))
    world = int(env.get("OMPI_COMM_WORLD_SIZE", env.get("WORLD_SIZE", "1")))
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29533")
    return rank, world


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

    rank, world = launch_env()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    if world > 1 and torch.cuda.device_count() == 1:  # K MPS partitions of one GPU
        os.environ.setdefault("STARSCREAM_TOPO_FILE", f"{REPO}/tools/topologies/h200-mps-{world}.json")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    lib = Library()
    uid = torch.zeros(128, dtype=torch.uint8)
    if rank == 0:
        uid = torch.tensor(list(lib.unique_id()), dtype=torch.uint8)
    dist.broadcast(uid, 0)
    comm = lib.comm_init(world, bytes(uid.tolist()), rank)

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

    flags = SSC_ATTN_Q_SHARDED_HEADS | SSC_ATTN_OUT_SHARDED_HEADS if a.shard_heads else 0
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
        cache = KvCache(lib, comm, num_kv_heads=a.kv_heads, head_dim=a.head_dim, page_size=a.page,
                        max_pages=max_pages, max_seqs=a.batch, max_batch=a.batch, max_q_heads=a.q_heads,
                        interleave="sequence_owner" if w else "round_robin", exchange=exchange)
        for b, n in enumerate(lengths):
            for t in range(0, n, chunk):
                m = min(chunk, n - t)
                cache.append([b] * m, ks[b][t:t + m], vs[b][t:t + m])
                if w:
                    cache.trim(b, max(0, t + m - w))
        out, lse = cache.decode(q_in, ids, scale, flags=flags, window=w)
        torch.cuda.synchronize()
        err = (out.float() - ref_out[:, heads]).abs().max().item()
        lse_err = (lse - ref_lse[:, heads]).abs().max().item()
        ok = err <= 2e-2 and lse_err <= 1e-3

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            cache.decode(q_in, ids, scale, flags=flags, window=w, out=out, lse=lse)
        torch.cuda.synchronize()
        dist.barrier()
        start.record()
        for _ in range(a.iters):
            cache.decode(q_in, ids, scale, flags=flags, window=w, out=out, lse=lse)
        end.record()
        end.synchronize()
        us = 1000.0 * start.elapsed_time(end) / a.iters
        cache.close()

        stats = torch.tensor([err, lse_err, us, 0.0 if ok else 1.0], dtype=torch.float64)
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)
        failures += int(stats[3].item())
        if rank == 0:
            kv_mb = 2 * sum(lengths) * a.kv_heads * a.head_dim * 2 / 1e6
            print(f"{'PASS' if stats[3] == 0 else 'FAIL'} K={world} exchange={exchange} batch={a.batch} "
                  f"tokens={lengths[-1]}..{lengths[0]} q_heads={a.q_heads} kv_heads={a.kv_heads} "
                  f"d={a.head_dim} shard_heads={int(a.shard_heads)} window={w}: max |out - SDPA| {stats[0]:.3g}, "
                  f"max |lse - ref| {stats[1]:.3g}; decode step {stats[2]:.1f} us (max over ranks; "
                  f"{kv_mb:.0f} MB of KV, {kv_mb / world:.0f} MB per rank)", flush=True)
    lib.comm_destroy(comm)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
