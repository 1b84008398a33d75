#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Row-parallel linear layer on K partitions of one GPU with Starscream's fused GEMM +
reduce-scatter (starscream.Gemm, the custom op torch.ops.starscream.gemm_reduce_scatter),
checked against torch.matmul + torch.distributed's all-reduce, and timed:

    starscream-run --partitions 8 examples/pytorch/gemm_rs.py --m 4096 --n 8192 --k 3584

(pip install ./python first, or `PYTHONPATH=python python3 -m starscream.run ...` from the
checkout). Each rank holds a K-slice x_r [M][K/P] of the activations and w_r [N][K/P] of the
weight (as nn.Linear stores it); the layer's output is sum_r x_r @ w_r.T, of which each rank
keeps its rows (torch.chunk's split). torch.distributed runs on NCCL, which starscream-run
serves with Starscream's shim (several ranks on one GPU); the Starscream communicator comes
from that process group. Rank 0 prints the worst error against torch and the time per call of
each variant. --bias adds nn.Linear's bias [N] (the same on every rank), added once to the sum.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

try:
    import starscream
except ImportError:  # run from the checkout without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import starscream


def time_us(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(iters):
        fn()
    t1.record()
    t1.synchronize()
    us = torch.tensor([t0.elapsed_time(t1) * 1000.0 / iters], device="cuda")
    dist.all_reduce(us, op=dist.ReduceOp.MAX)  # the slowest rank
    return us.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--k", type=int, default=3584, help="the layer's K (split over the ranks)")
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--bias", action="store_true", help="the layer has a bias (nn.Linear's default)")
    args = ap.parse_args()

    # starscream-run sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("nccl")
    comm = starscream.Comm.from_process_group()
    gemm = starscream.Gemm(comm)

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    kr = -(-args.k // world)
    g = torch.Generator(device="cuda").manual_seed(1234 + rank)
    x = torch.randn(args.m, kr, device="cuda", dtype=dtype, generator=g)
    w = torch.randn(args.n, kr, device="cuda", dtype=dtype, generator=g) / kr ** 0.5
    first, rows = starscream.row_shard(args.m, world, rank)
    # The bias: the same on every rank (its own seed), in y's type.
    bias = (torch.randn(args.n, device="cuda", dtype=dtype, generator=torch.Generator(device="cuda").manual_seed(7))
            if args.bias else None)

    # Reference: torch.matmul of the partial product in fp32, summed over the ranks by
    # torch.distributed; each rank keeps its rows.
    partial = torch.matmul(x.float(), w.float().T)
    dist.all_reduce(partial)
    ref = partial[first:first + rows]
    if bias is not None:
        ref = ref + bias.float()

    worst = 0.0
    for variant in ("auto", "unfused", "fused"):
        try:
            y = gemm.reduce_scatter(x, w, variant=variant, bias=bias)
        except starscream.StarscreamError as e:
            if rank == 0:
                print("%-8s not run: %s" % (variant, e))
            continue
        torch.cuda.synchronize()
        err = ((y.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item() if rows else 0.0
        e = torch.tensor([err], device="cuda")
        dist.all_reduce(e, op=dist.ReduceOp.MAX)
        worst = max(worst, e.item())
        us = time_us(lambda: gemm.reduce_scatter(x, w, variant=variant, bias=bias), args.iters)
        plan = gemm.query_plan("reduce_scatter", args.m, args.n, kr, dtype=dtype, variant=variant)
        if rank == 0:
            print("starscream %-8s M=%d N=%d K=%d%s over %d ranks: %8.1f us per call, max rel. error %.2e "
                  "(ran %s x %d chunks)" % (variant, args.m, args.n, args.k, " +bias" if args.bias else "",
                                            world, us, e.item(), *plan))
    mm = time_us(lambda: torch.matmul(x, w.T), args.iters)
    if rank == 0:
        print("torch.matmul alone (the partial product, no collective): %8.1f us per call" % mm)
    ok = worst < (2e-2 if dtype == torch.bfloat16 else 4e-3)
    if rank == 0:
        print("%s: worst relative error %.2e against torch.matmul + all-reduce" % ("PASS" if ok else "FAIL", worst))
    torch.cuda.synchronize()
    gemm.close()
    comm.close()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
