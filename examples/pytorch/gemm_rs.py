#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Row-parallel linear layer on K partitions of one GPU with Starscream's fused GEMM +
reduce-scatter, called from PyTorch tensors, checked against torch.matmul + a reduce-scatter
done by torch.distributed, and timed. Launched by mpirun (one process per partition):

    tools/emulate/partition-run.sh 8 env SSC_LIB=$PWD/build/lib/libstarscream.so \\
        python3 examples/pytorch/gemm_rs.py --m 4096 --n 8192 --k 3584

Each rank holds a K-slice x_r [M][K/P] of the activations and w_r [N][K/P] of the weight (as
nn.Linear stores it); the layer's output is sum_r x_r @ w_r.T, of which each rank keeps its
rows (torch.chunk's split). Rank 0 prints the worst error against torch and the time per call
of each variant. The unique id and torch's reference reduce-scatter travel over a gloo group.
--bias adds nn.Linear's bias [N] (the layer's, the same on every rank), added once to the sum.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import starscream_gemm as sg  # noqa: E402


def mpi_environment():
    def first(*names, default):
        return next((os.environ[n] for n in names if os.environ.get(n)), default)
    rank = int(first("OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK", default="0"))
    world = int(first("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE", default="1"))
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    return rank, world


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
    us = torch.tensor([t0.elapsed_time(t1) * 1000.0 / iters])
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
    rank, world = mpi_environment()
    torch.cuda.set_device(0 if torch.cuda.device_count() == 1 else rank % torch.cuda.device_count())
    if world > 1 and torch.cuda.device_count() == 1 and "STARSCREAM_TOPO_FILE" not in os.environ:
        topo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                            "topologies", "h200-mps-%d.json" % world)
        if os.path.exists(topo):
            os.environ["STARSCREAM_TOPO_FILE"] = topo  # K partitions of one GPU (MPS)
    dist.init_process_group("gloo")
    uid = torch.zeros(128, dtype=torch.uint8)
    if rank == 0:
        uid = torch.frombuffer(bytearray(sg.unique_id()), dtype=torch.uint8).clone()
    dist.broadcast(uid, 0)
    comm = sg.Comm.from_unique_id(rank, world, bytes(uid.tolist()))
    gemm = sg.Gemm(comm)

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    kr = -(-args.k // world)
    g = torch.Generator(device="cuda").manual_seed(1234 + rank)
    x = torch.randn(args.m, kr, device="cuda", dtype=dtype, generator=g)
    w = torch.randn(args.n, kr, device="cuda", dtype=dtype, generator=g) / kr ** 0.5
    first, rows = sg.row_shard(args.m, world, rank)
    # The bias: the same on every rank (its own seed), in y's type.
    bias = (torch.randn(args.n, device="cuda", dtype=dtype, generator=torch.Generator(device="cuda").manual_seed(7))
            if args.bias else None)

    # Reference: torch.matmul of the partial product, then torch's reduce-scatter of the rows
    # (fp32 on the CPU over gloo; gloo has no reduce-scatter, so all-reduce and keep ours).
    partial = torch.matmul(x.float(), w.float().T).cpu()
    dist.all_reduce(partial)
    ref = partial[first:first + rows]
    if bias is not None:
        ref = ref + bias.float().cpu()

    worst = 0.0
    for name, variant in (("auto", sg.AUTO), ("unfused", sg.UNFUSED), ("fused", sg.FUSED)):
        try:
            y = gemm.reduce_scatter(x, w, variant=variant, bias=bias)
        except sg.StarscreamError as e:
            if rank == 0:
                print("%-8s not run: %s" % (name, e))
            continue
        torch.cuda.synchronize()
        err = ((y.float().cpu() - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item() if rows else 0.0
        e = torch.tensor([err])
        dist.all_reduce(e, op=dist.ReduceOp.MAX)
        worst = max(worst, e.item())
        us = time_us(lambda: gemm.reduce_scatter(x, w, variant=variant, out=y, bias=bias), args.iters)
        plan = gemm.query_plan(0, args.m, args.n, kr, dtype, variant)
        if rank == 0:
            print("starscream %-8s M=%d N=%d K=%d%s over %d ranks: %8.1f us per call, max rel. error %.2e "
                  "(ran variant %d x %d chunks)" % (name, args.m, args.n, args.k, " +bias" if args.bias else "",
                                                   world, us, e.item(), *plan))
    mm = time_us(lambda: torch.matmul(x, w.T), args.iters)
    if rank == 0:
        print("torch.matmul alone (the partial product, no collective): %8.1f us per call" % mm)
    ok = worst < (2e-2 if dtype == torch.bfloat16 else 4e-3)
    if rank == 0:
        print("%s: worst relative error %.2e against torch.matmul + reduce-scatter" % ("PASS" if ok else "FAIL", worst))
    gemm.destroy()
    comm.destroy()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
