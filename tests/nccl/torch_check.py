#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch's torch.distributed (backend "nccl") through libstarscream-nccl, K ranks on one GPU.

Checks every collective PyTorch's NCCL backend uses, a sub-group made with new_group, and a
two-layer tensor-parallel MLP against the single-process result, then measures all_reduce bus
bandwidth from 1 MiB to 256 MiB. Launched by mpirun (no torchrun): RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT are derived from Open MPI's OMPI_COMM_WORLD_* variables.
On the H200, K = 2, 4 or 8 processes share GPU 0 under MPS (stock NCCL refuses that with
"duplicate GPU"; Starscream does not):

    tools/emulate/partition-run.sh 4 \\
        env LD_PRELOAD=$PWD/build/lib/libstarscream-nccl.so python3 tests/nccl/torch_check.py

Rank 0 prints one "PASS name" / "FAIL name" line per check and the bandwidth table; the exit
status is non-zero if any check failed on any rank. Verdicts travel over a separate gloo group,
so a broken NCCL path cannot hide its own failure.
"""

import argparse
import math
import os
import sys


def mpi_environment():
    """Fills torch.distributed's env:// variables from Open MPI's (or PMI's) launch variables."""
    def first(*names, default=None):
        for name in names:
            if os.environ.get(name):
                return os.environ[name]
        return default

    rank = int(first("OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK", default="0"))
    world = int(first("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE", default="1"))
    local = int(first("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK", default="0"))
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world)
    os.environ["LOCAL_RANK"] = str(local)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    return rank, world, local


def shim_loaded():
    """True when libstarscream-nccl.so is mapped into this process."""
    with open("/proc/self/maps") as maps:
        return any("libstarscream-nccl" in line for line in maps)


class Checks:
    """Collects per-rank verdicts; the verdict of a check is the AND over ranks (via gloo)."""

    def __init__(self, dist, torch, verdict_group, rank):
        self.dist, self.torch, self.group, self.rank = dist, torch, verdict_group, rank
        self.failures = 0

    def run(self, name, fn):
        ok, why = True, ""
        try:
            result = fn()
            if result is not None and result is not True:
                ok, why = False, str(result)
        except Exception as e:  # a check that raises has failed; the others still run
            ok, why = False, f"{type(e).__name__}: {e}"
        if not ok:
            print(f"rank {self.rank}: {name}: {why}", file=sys.stderr, flush=True)
        flag = self.torch.tensor([1 if ok else 0], dtype=self.torch.int32)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MIN, group=self.group)
        passed = bool(flag.item())
        if self.rank == 0:
            print(f"{'PASS' if passed else 'FAIL'} {name}", flush=True)
        if not passed:
            self.failures += 1
        return passed


def close(torch, got, want, rtol=1e-5, atol=1e-6):
    """None when got matches want, else a description of the worst element."""
    if torch.allclose(got, want, rtol=rtol, atol=atol):
        return None
    err = (got - want).abs().max().item()
    return f"max abs error {err:g} (got {got.flatten()[:4].tolist()} want {want.flatten()[:4].tolist()})"


def collective_checks(checks, dist, torch, rank, world, dev):
    n = world
    count = 4099  # not a multiple of anything convenient

    def values(r, size=count, dtype=torch.float32):
        return (torch.arange(size, device=dev, dtype=torch.float64) % 13 + r + 1).to(dtype)

    def total(op):
        stack = torch.stack([values(r, dtype=torch.float64) for r in range(n)])
        if op == "sum":
            return stack.sum(0)
        if op == "avg":
            return stack.sum(0) / n
        return stack.max(0).values

    for name, op in (("sum", dist.ReduceOp.SUM), ("avg", dist.ReduceOp.AVG), ("max", dist.ReduceOp.MAX)):
        def check(name=name, op=op):
            x = values(rank)
            dist.all_reduce(x, op=op)
            return close(torch, x.double(), total(name))
        checks.run(f"all_reduce {name}", check)

    def premul(scalar_on_device):
        if not hasattr(dist, "_make_nccl_premul_sum"):
            return None  # this PyTorch has no pre-multiplied sum: nothing to check
        if scalar_on_device:
            # The factor tensor's storage is the scalar NCCL reads on the device when the
            # operation runs (ncclScalarDevice); PyTorch 2.11 takes the tensor itself.
            op = dist._make_nccl_premul_sum(torch.tensor([0.5], device=dev))  # ncclScalarDevice
        else:
            op = dist._make_nccl_premul_sum(0.5)  # ncclScalarHostImmediate
        x = values(rank)
        dist.all_reduce(x, op=op)
        return close(torch, x.double(), 0.5 * total("sum"))
    checks.run("all_reduce premul_sum (host scalar)", lambda: premul(False))
    checks.run("all_reduce premul_sum (device scalar)", lambda: premul(True))

    def all_gather(block):
        out = torch.empty(n * block, device=dev)
        dist.all_gather_into_tensor(out, values(rank, block))
        return close(torch, out, torch.cat([values(r, block) for r in range(n)]))

    def reduce_scatter(block):
        inp = values(rank, n * block)
        out = torch.empty(block, device=dev)
        dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM)
        # Element i of every rank's input is i % 13 + r + 1: this rank's slice of the sum.
        mine = torch.arange(rank * block, (rank + 1) * block, device=dev, dtype=torch.float64) % 13
        return close(torch, out.double(), n * (mine + 1) + sum(range(n)))

    checks.run("all_gather_into_tensor", lambda: all_gather(count))
    checks.run("reduce_scatter_tensor", lambda: reduce_scatter(count))
    # Blocks of 4 MiB + 12 bytes a rank: large enough for the zero-copy kernels, and rank r's
    # block starts 12 r bytes past a 16-byte boundary of the gathered tensor, so most blocks are
    # misaligned and the call runs the misaligned kernel (docs/zero-copy.md). nccl-tests cannot
    # make such blocks: it rounds each rank's block down to 16 bytes.
    big = (1 << 20) + 3
    checks.run("all_gather_into_tensor, 4 MiB + 12 B a rank", lambda: all_gather(big))
    checks.run("reduce_scatter_tensor, 4 MiB + 12 B a rank", lambda: reduce_scatter(big))

    def broadcast():
        root = n - 1
        x = values(rank)
        dist.broadcast(x, src=root)
        return close(torch, x, values(root))
    checks.run("broadcast", broadcast)

    def reduce():
        # To a root that is neither first nor last where there are three ranks or more.
        root = n // 2
        x = values(rank)
        dist.reduce(x, dst=root, op=dist.ReduceOp.SUM)
        return close(torch, x.double(), total("sum")) if rank == root else None
    checks.run("reduce", reduce)

    def all_gather_list():
        # The list form: PyTorch gathers into one flat buffer, then copies out per rank.
        outs = [torch.empty(count, device=dev) for _ in range(n)]
        dist.all_gather(outs, values(rank))
        return close(torch, torch.cat(outs), torch.cat([values(r) for r in range(n)]))
    checks.run("all_gather (list)", all_gather_list)

    def gather():
        # ProcessGroupNCCL's gather: grouped point-to-point to the root (every root in turn).
        for root in range(n):
            outs = [torch.empty(count, device=dev) for _ in range(n)] if rank == root else None
            dist.gather(values(rank), gather_list=outs, dst=root)
            if rank == root:
                why = close(torch, torch.cat(outs), torch.cat([values(r) for r in range(n)]))
                if why is not None:
                    return f"root {root}: {why}"
        return None
    checks.run("gather (every root)", gather)

    def scatter():
        for root in range(n):
            ins = [values(100 * root + r) for r in range(n)] if rank == root else None
            out = torch.empty(count, device=dev)
            dist.scatter(out, scatter_list=ins, src=root)
            why = close(torch, out, values(100 * root + rank))
            if why is not None:
                return f"root {root}: {why}"
        return None
    checks.run("scatter (every root)", scatter)

    def barrier():
        dist.barrier()
        return None
    checks.run("barrier", barrier)

    def all_to_all(uneven):
        # Block sent from rank s to rank d holds s*1000 + d; with uneven splits rank s sends
        # d+1 elements to rank d.
        sizes_in = [d + 1 for d in range(n)] if uneven else [count] * n
        sizes_out = [rank + 1] * n if uneven else [count] * n
        inp = torch.cat([torch.full((sizes_in[d],), rank * 1000.0 + d, device=dev) for d in range(n)])
        out = torch.empty(sum(sizes_out), device=dev)
        if uneven:
            dist.all_to_all_single(out, inp, output_split_sizes=sizes_out, input_split_sizes=sizes_in)
        else:
            dist.all_to_all_single(out, inp)
        want = torch.cat([torch.full((sizes_out[s],), s * 1000.0 + rank, device=dev) for s in range(n)])
        return close(torch, out, want)
    checks.run("all_to_all_single", lambda: all_to_all(False))
    checks.run("all_to_all_single (uneven splits)", lambda: all_to_all(True))

    def ring():
        nxt, prv = (rank + 1) % n, (rank - 1) % n
        send, recv = values(rank), torch.empty(count, device=dev)
        ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, recv, prv)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        return close(torch, recv, values(prv))
    checks.run("send/recv ring (batch_isend_irecv)", ring)

    def pairs():
        # Blocking send/recv between rank pairs (0,1), (2,3), ...; an odd last rank sits out.
        peer = rank ^ 1
        if peer >= n:
            return None
        x = values(rank)
        if rank % 2 == 0:
            dist.send(x, dst=peer)
            dist.recv(x, src=peer)
        else:
            y = torch.empty_like(x)
            dist.recv(y, src=peer)
            dist.send(x, dst=peer)
            x = y
        return close(torch, x, values(peer))
    checks.run("send/recv pairs", pairs)

    evens = list(range(0, n, 2))
    sub = dist.new_group(ranks=evens)  # every rank calls new_group; only members use it

    def sub_group():
        if rank not in evens:
            return None
        x = torch.full((count,), float(rank), device=dev)
        dist.all_reduce(x, group=sub)
        return close(torch, x, torch.full((count,), float(sum(evens)), device=dev))
    checks.run("new_group + sub-group all_reduce", sub_group)


def tensor_parallel_mlp(checks, dist, torch, rank, world, dev):
    """y = W2 gelu(W1 x): W1 split by output rows (column parallel), W2 by input columns (row
    parallel), partial outputs summed with all_reduce; must match the unsplit computation."""
    batch, d_in, d_out = 16, 256, 128
    hidden = 64 * world
    gen = torch.Generator(device="cpu").manual_seed(1234)  # same weights on every rank
    w1 = torch.randn(hidden, d_in, generator=gen) / math.sqrt(d_in)
    w2 = torch.randn(d_out, hidden, generator=gen) / math.sqrt(hidden)
    x = torch.randn(batch, d_in, generator=gen)
    w1, w2, x = w1.to(dev), w2.to(dev), x.to(dev)

    def check():
        reference = torch.nn.functional.gelu(x @ w1.t()) @ w2.t()
        shard = hidden // world
        rows = slice(rank * shard, (rank + 1) * shard)
        partial = torch.nn.functional.gelu(x @ w1[rows].t()) @ w2[:, rows].t()
        dist.all_reduce(partial)
        return close(torch, partial, reference, rtol=1e-4, atol=1e-5)
    checks.run("tensor-parallel MLP matches single process", check)


def bandwidth(dist, torch, rank, world, dev, verdict_group, args):
    """all_reduce bus bandwidth (nccl-tests' definition: algbw * 2(n-1)/n), slowest rank's time."""
    if rank == 0:
        print(f"\nall_reduce float32, {world} rank(s), {args.iters} iterations after {args.warmup} warm-up")
        print(f"{'size (B)':>12} {'count':>12} {'time (us)':>12} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}")
    size = args.min_mib << 20
    while size <= args.max_mib << 20:
        count = size // 4
        x = torch.zeros(count, device=dev)  # zeros: the sum stays finite however many iterations
        for _ in range(args.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize(dev)
        dist.barrier(group=verdict_group)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            dist.all_reduce(x)
        end.record()
        end.synchronize()
        seconds = torch.tensor([start.elapsed_time(end) / 1e3 / args.iters], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX, group=verdict_group)
        t = seconds.item()
        algbw = size / t / 1e9
        busbw = algbw * 2 * (world - 1) / world
        if rank == 0:
            print(f"{size:>12} {count:>12} {t * 1e6:>12.1f} {algbw:>13.2f} {busbw:>13.2f}", flush=True)
        del x
        size *= 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-mib", type=int, default=1, help="smallest all_reduce size (MiB)")
    parser.add_argument("--max-mib", type=int, default=256, help="largest all_reduce size (MiB)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-bandwidth", action="store_true", help="checks only")
    parser.add_argument("--allow-vendor-nccl", action="store_true",
                        help="do not require libstarscream-nccl.so to be loaded (a baseline run)")
    args = parser.parse_args()

    rank, world, local = mpi_environment()
    import torch
    import torch.distributed as dist

    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    # device_id binds the process group to the GPU: PyTorch then creates the NCCL communicator
    # eagerly and makes sub-groups with ncclCommSplit.
    dist.init_process_group(backend="nccl", rank=rank, world_size=world, device_id=dev)
    verdicts = dist.new_group(backend="gloo")
    checks = Checks(dist, torch, verdicts, rank)
    if rank == 0:
        version = ".".join(str(v) for v in torch.cuda.nccl.version())
        print(f"torch {torch.__version__}, NCCL API {version}, {world} rank(s) on "
              f"{torch.cuda.get_device_name(dev)}", flush=True)
    checks.run("nccl* served by libstarscream-nccl",
               lambda: None if args.allow_vendor_nccl or shim_loaded()
               else "libstarscream-nccl.so is not loaded (run with LD_PRELOAD, see docs/nccl-shim.md)")

    collective_checks(checks, dist, torch, rank, world, dev)
    tensor_parallel_mlp(checks, dist, torch, rank, world, dev)
    torch.cuda.synchronize(dev)
    if not args.no_bandwidth and checks.failures == 0:
        bandwidth(dist, torch, rank, world, dev, verdicts, args)

    if rank == 0:
        print(f"\n{'FAILED' if checks.failures else 'OK'}: {checks.failures} check(s) failed", flush=True)
    dist.destroy_process_group()
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
