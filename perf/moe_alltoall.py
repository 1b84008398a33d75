#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mixture-of-experts all-to-all and pipeline send/receive through torch.distributed.

Times what an expert-parallel MoE layer and a pipeline stage send, through whatever NCCL the
process loads (under LD_PRELOAD=libstarscream-nccl.so that is Starscream), against a copy
roofline measured in the same run (or given with --roofline):

  moe   dispatch + combine with dist.all_to_all_single and uneven splits: every rank routes its
        --tokens tokens (rows of --hidden bf16) to the top --topk of --experts experts, whose
        popularity follows a Zipf law of exponent --zipf (one copy of a row per (token, expert)
        pair, as all_to_all_single dispatch without deduplication); the experts are spread
        evenly over the ranks, so the skew becomes uneven per-rank splits. Dispatch sends the
        rows to the experts' ranks, combine sends them back (the splits reversed).
  ring  dist.batch_isend_irecv of one activation per step to the next rank and from the previous
        one (a pipeline's neighbour exchange), for each size of --ring-bytes.

Roofline. All ranks of one GPU (MPS partitions) share its copy rate C (bytes copied per second,
one read and one write each): --roofline C in GB/s, or measured here with every rank copying
--copy-bytes at once (torch's device-to-device copy), C being the sum of the ranks' rates. A
collective that must copy B bytes in all (every block, a rank's block to itself included) cannot
finish before B / C; share = that time / the measured time. busbw follows nccl-tests: for the
all-to-all the bytes a rank sends to other ranks per second (the mean over ranks of an uneven
split), for the ring the bytes a rank sends per second; the roofline's busbw is printed next to
it. Times are the slowest rank's mean over --iters iterations after --warmup, synchronising once
at the end of the timed loop.

Run (K ranks on one NVIDIA GPU under MPS, docs/perf.md):

  tools/emulate/partition-run.sh 8 env LD_PRELOAD=$PWD/build/lib/libstarscream-nccl.so \\
      python3 perf/moe_alltoall.py --mode both

Prints one line per measurement on rank 0 (and --json FILE writes them as a list).
"""
import argparse
import json
import os
import sys
import time


def parse_bytes(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B").rstrip("I")
    unit = text[-1] if text and text[-1] in units else ""
    return int(float(text[: len(text) - len(unit)]) * units[unit])


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--mode", choices=["moe", "ring", "both"], default="moe")
    p.add_argument("--tokens", type=int, default=8192, help="tokens per rank (default 8192)")
    p.add_argument("--hidden", type=int, default=7168, help="row size in bf16 elements (default 7168)")
    p.add_argument("--experts", type=int, default=64, help="experts in all (default 64)")
    p.add_argument("--topk", type=int, default=8, help="experts per token (default 8)")
    p.add_argument("--zipf", type=float, default=1.2,
                   help="Zipf exponent of the experts' popularity; 0 = uniform (default 1.2)")
    p.add_argument("--seed", type=int, default=1234, help="routing seed (default 1234)")
    p.add_argument("--ring-bytes", default="",
                   help="comma-separated sizes for --mode ring (K, M, G suffixes; default: one "
                        "activation of --tokens x --hidden bf16, and 8M, 64M, 512M)")
    p.add_argument("--iters", type=int, default=20, help="timed iterations (default 20)")
    p.add_argument("--warmup", type=int, default=5,
                   help="untimed iterations first; the first maps the buffers (default 5)")
    p.add_argument("--roofline", type=float, default=0.0,
                   help="the GPU's copy rate in GB/s (bytes copied per second, all ranks "
                        "together); default: measured in this run")
    p.add_argument("--copy-bytes", type=parse_bytes, default=parse_bytes("256M"),
                   help="bytes each rank copies to measure the roofline (default 256M)")
    p.add_argument("--json", default="", help="also write the measurements to this file")
    p.add_argument("--label", default="", help="a label printed with every line")
    args = p.parse_args(argv)
    if args.topk > args.experts or args.topk < 1:
        p.error("--topk must be between 1 and --experts")
    if min(args.tokens, args.hidden, args.iters) < 1 or args.warmup < 0:
        p.error("--tokens, --hidden and --iters must be positive, --warmup not negative")
    return args


def main(argv):
    args = parse_args(argv)
    # torch only after the arguments, so that --help works without it.
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29537")
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    if args.experts % world != 0:
        if rank == 0:
            print(f"moe_alltoall: --experts {args.experts} is not a multiple of {world} ranks",
                  file=sys.stderr)
        dist.destroy_process_group()
        return 2
    records = []

    def slowest(seconds):
        t = torch.tensor([seconds], device=dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def timed(step):
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            step()
        torch.cuda.synchronize()
        return slowest((time.perf_counter() - start) / args.iters)

    # The roofline: every rank copies at once; C is the sum of their rates.
    copy_gbps = args.roofline
    if copy_gbps <= 0:
        n = max(1, args.copy_bytes // 2)
        src = torch.ones(n, dtype=torch.bfloat16, device=dev)
        dst = torch.empty_like(src)
        sec = timed(lambda: dst.copy_(src))
        copy_gbps = world * (n * 2) / sec / 1e9  # the slowest rank's rate, times the ranks
        del src, dst
        torch.cuda.empty_cache()

    def report(name, extra, seconds, busbw_bytes, copied_bytes, ok):
        """busbw_bytes: a rank's busbw numerator; copied_bytes: what all ranks copy in all."""
        busbw = busbw_bytes / seconds / 1e9
        roof_seconds = copied_bytes / (copy_gbps * 1e9)
        roof_busbw = busbw_bytes / roof_seconds / 1e9
        share = roof_seconds / seconds
        rec = {"test": name, "label": args.label, "K": world, **extra, "us": seconds * 1e6,
               "busbw_GBps": busbw, "roofline_busbw_GBps": roof_busbw, "share": share,
               "copy_GBps": copy_gbps, "ok": ok}
        records.append(rec)
        if rank == 0:
            fields = " ".join(f"{k}={v}" for k, v in extra.items())
            print(f"moe_alltoall {args.label} {name} K={world} {fields} us={seconds * 1e6:.1f} "
                  f"busbw={busbw:.1f}GB/s roofline={roof_busbw:.1f}GB/s share={share:.2f}"
                  f"{'' if ok else ' WRONG'}", flush=True)

    if args.mode in ("moe", "both"):
        per_rank = args.experts // world
        # Expert popularity: Zipf over a fixed permutation of the experts (the same on every
        # rank), so the hot experts do not all sit on rank 0.
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        weights = 1.0 / torch.arange(1, args.experts + 1, dtype=torch.float64) ** args.zipf
        weights = weights[torch.randperm(args.experts, generator=g)]
        g.manual_seed(args.seed * 1000003 + rank)
        chosen = torch.multinomial(weights.expand(args.tokens, -1).contiguous(), args.topk, replacement=False,
                                   generator=g)                      # [tokens, topk]
        dest = (chosen // per_rank).flatten()                        # the expert's rank per pair
        order = torch.argsort(dest, stable=True)
        rows = torch.arange(args.tokens).repeat_interleave(args.topk)[order]
        in_splits = torch.bincount(dest, minlength=world)
        out_splits = torch.empty_like(in_splits, device=dev)
        dist.all_to_all_single(out_splits, in_splits.to(dev))
        in_splits_l = in_splits.tolist()
        out_splits_l = out_splits.cpu().tolist()
        # Each row carries its source rank in element 0 (exact in bf16 up to 256), the rest ones;
        # the check reads it back after one round, and combine must return the rows unchanged.
        x = torch.ones(args.tokens, args.hidden, dtype=torch.bfloat16, device=dev)
        x[:, 0] = rank
        send = x.index_select(0, rows.to(dev))
        recv = torch.empty(sum(out_splits_l), args.hidden, dtype=torch.bfloat16, device=dev)
        back = torch.empty_like(send)

        def dispatch():
            dist.all_to_all_single(recv, send, out_splits_l, in_splits_l)

        def combine():
            dist.all_to_all_single(back, recv, in_splits_l, out_splits_l)

        dispatch()
        combine()
        torch.cuda.synchronize()
        src_of_row = torch.arange(world, device=dev).repeat_interleave(
            torch.tensor(out_splits_l, device=dev))
        ok_local = bool((recv[:, 0] == src_of_row.to(torch.bfloat16)).all().item()) and \
            bool(torch.equal(back, send))
        ok_t = torch.tensor([1 if ok_local else 0], device=dev)
        dist.all_reduce(ok_t, op=dist.ReduceOp.MIN)
        ok = ok_t.item() == 1
        row_bytes = args.hidden * 2
        # Bytes every rank sends (all ranks' splits), to others and in all.
        sends = torch.tensor(in_splits_l, device=dev, dtype=torch.float64).unsqueeze(0)
        all_sends = [torch.empty_like(sends) for _ in range(world)]
        dist.all_gather(all_sends, sends)
        matrix = torch.cat(all_sends).cpu()                          # [from, to] rows
        total = matrix.sum().item() * row_bytes
        cross = (matrix.sum() - matrix.diagonal().sum()).item() * row_bytes
        busbw_bytes = cross / world                                  # mean per rank
        max_recv = int(matrix.sum(0).max().item())
        extra = {"tokens": args.tokens, "hidden": args.hidden, "experts": args.experts,
                 "topk": args.topk, "zipf": args.zipf, "bytes": int(total / world),
                 "max_recv_rows": max_recv}
        report("dispatch", extra, timed(dispatch), busbw_bytes, total, ok)
        report("combine", extra, timed(combine), busbw_bytes, total, ok)
        report("dispatch+combine", extra, timed(lambda: (dispatch(), combine())), 2 * busbw_bytes,
               2 * total, ok)
        del x, send, recv, back
        torch.cuda.empty_cache()

    if args.mode in ("ring", "both"):
        sizes = [parse_bytes(s) for s in args.ring_bytes.split(",") if s.strip()] or \
            [8 << 20, 64 << 20, args.tokens * args.hidden * 2, 512 << 20]
        nxt, prv = (rank + 1) % world, (rank + world - 1) % world
        for nbytes in sizes:
            n = max(1, nbytes // 2)
            out = torch.full((n,), float(rank % 256), dtype=torch.bfloat16, device=dev)
            inp = torch.empty_like(out)

            def exchange():
                ops = [dist.P2POp(dist.isend, out, nxt), dist.P2POp(dist.irecv, inp, prv)]
                for req in dist.batch_isend_irecv(ops):
                    req.wait()

            exchange()
            torch.cuda.synchronize()
            ok_t = torch.tensor([1 if bool((inp == float(prv % 256)).all().item()) else 0],
                                device=dev)
            dist.all_reduce(ok_t, op=dist.ReduceOp.MIN)
            # Every rank sends n * 2 bytes; all ranks together copy world times that.
            report("ring", {"bytes": n * 2}, timed(exchange), n * 2, world * n * 2,
                   ok_t.item() == 1)
            del out, inp
            torch.cuda.empty_cache()

    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    dist.destroy_process_group()
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
