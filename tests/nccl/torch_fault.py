#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A dead or aborting rank under PyTorch (backend "nccl" through libstarscream-nccl): how long
until every survivor's torch.distributed call fails, and does the error name the rank?

Starts K worker processes itself (mpirun would tear the job down the moment a rank dies, before
the survivors could time anything). All workers all-reduce 16 MiB tensors in a loop; after a
warm-up the victim either SIGKILLs itself (--mode kill) or aborts its process group and stays
alive (--mode abort). Each survivor records when its first torch.distributed call raised and the
error text; the launcher prints one line per rank and a summary with the slowest survivor:

    K=8; nvidia-cuda-mps-control -d
    LD_PRELOAD=$PWD/build/lib/libstarscream-nccl.so python3 tests/nccl/torch_fault.py \\
        --ranks $K --mode kill --mps-percent $(awk -v k=$K 'BEGIN { print 100 / k }')

Exit status 0 when every survivor raised within --limit seconds (default 1.0) with the victim's
rank in the message. PyTorch's own watchdog teardown is turned off
(TORCH_NCCL_ASYNC_ERROR_HANDLING=0) so that the error surfaces at the next call, where it is
timed, instead of killing the process from the watchdog thread.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def worker(args):
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    try:
        dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    except TypeError:  # torch before 2.3: no device_id
        dist.init_process_group("nccl")
    t = torch.ones(4 << 20, device="cuda")
    for _ in range(5):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    ok = abs(t[0].item() - world ** 5) < 1e-3 * world ** 5
    out = {"rank": rank, "warmup_ok": ok}
    with open(os.path.join(args.dir, f"ready.{rank}"), "w") as f:
        f.write("1")
    # Wait until every rank is warm, so the fault hits a running job.
    while len([n for n in os.listdir(args.dir) if n.startswith("ready.")]) < world:
        time.sleep(0.01)
    if rank == args.victim:
        time.sleep(0.3)
        out["fault_at"] = time.monotonic()
        if args.mode == "kill":
            with open(os.path.join(args.dir, f"out.{rank}.json"), "w") as f:
                json.dump(out, f)
            os.kill(os.getpid(), signal.SIGKILL)
        pg = dist.distributed_c10d._get_default_group()
        how = None
        for name, fn in (("_abort_process_group", lambda: dist.distributed_c10d._abort_process_group()),
                         ("backend.abort", lambda: pg._get_backend(torch.device("cuda")).abort()),
                         ("pg.abort", lambda: pg.abort())):
            try:
                fn()
                how = name
                break
            except Exception as e:  # older or newer torch: try the next spelling
                out.setdefault("abort_tries", []).append(f"{name}: {e}")
        out["abort_api"] = how
        with open(os.path.join(args.dir, f"out.{rank}.json"), "w") as f:
            json.dump(out, f)
        time.sleep(args.limit + 3)  # alive: the survivors must hear "aborted", not "died"
        os._exit(0)
    calls = 0
    while True:
        try:
            dist.all_reduce(t)
            torch.cuda.synchronize()
            calls += 1
        except Exception as e:
            out["raised_at"] = time.monotonic()
            out["error"] = str(e)[-600:]
            break
        if calls > 100000:
            out["error"] = "never raised"
            break
    out["calls"] = calls
    with open(os.path.join(args.dir, f"out.{rank}.json"), "w") as f:
        json.dump(out, f)
    os._exit(0)  # the process group is broken: skip PyTorch's teardown


def launch(args):
    d = tempfile.mkdtemp(prefix="ssc-fault-")
    env = dict(os.environ, WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(args.port), TORCH_NCCL_ASYNC_ERROR_HANDLING="0",
               NCCL_NVLS_ENABLE="0")
    if args.mps_percent:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(args.mps_percent)
    procs = []
    for r in range(args.ranks):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        cmd = [sys.executable, __file__, "--worker", "--dir", d, "--mode", args.mode,
               "--victim", str(args.victim), "--limit", str(args.limit)]
        procs.append(subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL if r else None,
                                      stderr=open(os.path.join(d, f"stderr.{r}"), "w")))
    deadline = time.monotonic() + args.timeout
    for p in procs:
        try:
            p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
    results = {}
    for r in range(args.ranks):
        try:
            with open(os.path.join(d, f"out.{r}.json")) as f:
                results[r] = json.load(f)
        except OSError:
            results[r] = {"rank": r, "error": "no result (see " + os.path.join(d, f"stderr.{r}") + ")"}
    fault_at = results.get(args.victim, {}).get("fault_at")
    worst, ok = 0.0, fault_at is not None
    word = "died" if args.mode == "kill" else "aborted"
    for r in range(args.ranks):
        res = results[r]
        if r == args.victim:
            print(f"rank {r}: victim ({args.mode}{', ' + str(res.get('abort_api')) if args.mode == 'abort' else ''})")
            continue
        named = f"rank {args.victim} {word}" in res.get("error", "")
        if fault_at is None or "raised_at" not in res:
            print(f"rank {r}: no error recorded: {res.get('error', '')[:300]}")
            ok = False
            continue
        dt = res["raised_at"] - fault_at
        worst = max(worst, dt)
        ok = ok and named and dt <= args.limit and res.get("warmup_ok", False)
        msg = res["error"].replace("\n", " | ")
        print(f"rank {r}: raised after {dt * 1000:.0f} ms, names the victim: {named}; {msg[-240:]}")
    print(f"# K={args.ranks} mode={args.mode} victim={args.victim}: slowest survivor {worst * 1000:.0f} ms "
          f"after the fault (limit {args.limit * 1000:.0f} ms): {'PASS' if ok else 'FAIL'}; logs in {d}")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--mode", choices=["kill", "abort"], default="kill")
    p.add_argument("--victim", type=int, default=3)
    p.add_argument("--limit", type=float, default=1.0, help="seconds a survivor may take")
    p.add_argument("--timeout", type=float, default=120, help="seconds for the whole job")
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--mps-percent", type=float, default=0)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
