#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The starscream package on a GPU: K ranks (MPS partitions of one GPU, or one GPU each) run the
custom ops against references computed with torch, torch.library.opcheck on every op,
torch.compile(fullgraph=True) with Inductor, CUDA-graph capture and replay, and the errors; all
through a torch.distributed NCCL process group served by the NCCL shim, whose communicators
come from the group's store (Comm.from_process_group). Needs PyTorch with CUDA, a GPU, and the
library built with the CUDA backend (STARSCREAM_GPU=cuda scripts/build.sh):

    python3 -m starscream.run --partitions 4 tests/python/gpu_ops_test.py

(from the checkout with PYTHONPATH=python, or starscream-run after pip install ./python).
Rank 0 prints PASS/FAIL/SKIP per check; the exit status is non-zero if any check failed on any
rank. Verdicts travel over gloo (the group's CPU side), so a broken NCCL path cannot hide its
own failure.
"""
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import starscream  # noqa: E402
from starscream.run import mpi_to_torch_environment  # noqa: E402
import _torch_checks as C  # noqa: E402


class Skip(Exception):
    pass


class Checks:
    def __init__(self, rank):
        self.rank, self.failures = rank, 0

    def run(self, name, fn):
        state, why = "PASS", ""
        try:
            result = fn()
            if result is not None:
                state, why = "FAIL", str(result)
        except Skip as e:
            state, why = "SKIP", str(e)
        except Exception as e:  # a check that raises has failed; the others still run
            state, why = "FAIL", f"{type(e).__name__}: {e}"
            traceback.print_exc()
        if state == "FAIL":
            print(f"rank {self.rank}: {name}: {why}", file=sys.stderr, flush=True)
        code = torch.tensor([{"PASS": 0, "SKIP": 1, "FAIL": 2}[state]])
        dist.all_reduce(code, op=dist.ReduceOp.MAX)  # CPU tensor: the gloo side of the group
        final = ("PASS", "SKIP", "FAIL")[code.item()]
        if self.rank == 0:
            print(f"{final} {name}{' (' + why + ')' if final == 'SKIP' and why else ''}", flush=True)
        self.failures += final == "FAIL"


def graph_decode(ctx):
    """A decode captured into a CUDA graph, replayed after appends made outside it: each replay
    equals the reference over the sequences as they are then."""
    st = C.KvState(ctx, [11, 40])
    scale = 1 / math.sqrt(C.KV["head_dim"])
    q = C.gen(700, (2, C.Q_HEADS, C.KV["head_dim"]), torch.bfloat16, ctx.device)
    st.cache.decode(q, [0, 1], scale)  # warm-up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = st.cache.decode(q, [0, 1], scale)
    for step in range(3):
        st.grow(7000 + 2 * step)  # on the current stream, as the graph's replays
        graph.replay()
        torch.cuda.synchronize()
        ref_out, ref_lse = st.reference_decode(q, scale)
        why = C._close(f"replay {step} out", out, ref_out, 2e-2) or \
            C._close(f"replay {step} lse", lse, ref_lse, 1e-3)
        if why:
            return why
    del graph
    st.cache.close()
    return None


def graph_gemm(ctx):
    """GEMM + reduce-scatter (variant auto: unfused under capture) captured and replayed on new
    inputs copied into the captured ones."""
    x, w = C.rs_inputs(ctx)
    ctx.gemm.reduce_scatter(x, w)  # the first call of a shape may probe the BLAS: not captured
    torch.cuda.synchronize()
    static_x = x.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ctx.gemm.reduce_scatter(static_x, w)
    static_x.mul_(-1)
    graph.replay()
    torch.cuda.synchronize()
    return C._close("replayed reduce_scatter", y, -C.rs_reference(ctx), C.GEMM_TOL[ctx.dtype])


def graph_refusals(ctx):
    """What cannot be captured says so, naming docs/python.md."""
    cache = C.make_cache(ctx)
    k, v = C.kv_tokens(ctx, 1, 1)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            cache.append([0], k, v)
        return "an append was captured"
    except starscream.StarscreamError as e:
        if "docs/python.md" not in str(e):
            return f"the refusal does not point at docs/python.md: {e}"
    except RuntimeError as e:  # the capture itself may report the op's error wrapped
        if "docs/python.md" not in str(e):
            return f"the refusal does not point at docs/python.md: {e}"
    finally:
        torch.cuda.synchronize()
        cache.close()
    return None


def reduce_overhead_decode(ctx):
    """torch.compile(mode="reduce-overhead") on a decode step (Inductor's CUDA graphs), with the
    appends outside: every call equals the reference."""
    st = C.KvState(ctx, [9, 33])
    scale = 1 / math.sqrt(C.KV["head_dim"])
    step = torch.compile(lambda q: st.cache.decode(q, [0, 1], scale), mode="reduce-overhead",
                         fullgraph=True)
    for i in range(4):
        st.grow(8000 + 2 * i)
        q = C.gen(800 + i, (2, C.Q_HEADS, C.KV["head_dim"]), torch.bfloat16, ctx.device)
        out, lse = step(q)
        out, lse = out.clone(), lse.clone()
        torch.cuda.synchronize()
        ref_out, ref_lse = st.reference_decode(q, scale)
        why = C._close(f"call {i} out", out, ref_out, 2e-2) or C._close(f"call {i} lse", lse, ref_lse, 1e-3)
        if why:
            return why
    st.cache.close()
    return None


def subgroup_comm(rank, world):
    """Communicators over a sub-group and a second one over the world get their own store keys."""
    evens = list(range(0, world, 2))
    sub = dist.new_group(ranks=evens)
    second = starscream.Comm.from_process_group()
    try:
        if second.size != world:
            return f"second world communicator has {second.size} ranks"
        if rank in evens:
            with starscream.Comm.from_process_group(sub) as c:
                if (c.rank, c.size) != (evens.index(rank), len(evens)):
                    return f"sub-group communicator is rank {c.rank} of {c.size}"
    finally:
        second.close()
    return None


def main():
    os.environ.update(mpi_to_torch_environment(os.environ))  # run by mpirun without the bootstrap
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("cpu:gloo,cuda:nccl", rank=rank, world_size=world)
    checks = Checks(rank)
    if rank == 0:
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name(dev)}, {world} rank(s), "
              f"library {starscream.library()}", flush=True)

    def verify():
        r = starscream.verify()
        if rank == 0:
            print(f"  verify: {r.shim}, preloaded {r.preloaded}, torch's NCCL {r.torch_nccl}")
        probe = torch.ones(4, device=dev)
        dist.all_reduce(probe)  # NCCL traffic through the shim
        return None if probe[0].item() == world else f"all_reduce gave {probe[0].item()}"
    checks.run("verify() and an NCCL all_reduce through the shim", verify)

    comm = starscream.Comm.from_process_group()
    ctx = C.Ctx(comm, dev)
    checks.run("Comm.from_process_group: rank and size", lambda: None if (comm.rank, comm.size) ==
               (rank, world) else f"rank {comm.rank} of {comm.size}")
    for variant in ("auto", "unfused", "chunked", "fused"):
        checks.run(f"gemm_reduce_scatter {variant}",
                   lambda v=variant: C.check_gemm_reduce_scatter(ctx, variant=v))
    checks.run("gemm_reduce_scatter + bias, fp32 out",
               lambda: C.check_gemm_reduce_scatter(ctx, with_bias=True, out_dtype=torch.float32))
    checks.run("gemm_reduce_scatter weight [K][N]",
               lambda: C.check_gemm_reduce_scatter(ctx, weight_kn=True))

    def copy_engine():
        x, w = C.rs_inputs(ctx)
        try:
            y = ctx.gemm.reduce_scatter(x, w, variant="fused", copy_engine=True)
        except starscream.StarscreamError as e:
            if e.code == 5:  # sscInvalidUsage: the driver lacks stream memory operations
                raise Skip(str(e))
            raise
        return C._close("copy-engine reduce_scatter", y, C.rs_reference(ctx), C.GEMM_TOL[ctx.dtype])
    checks.run("gemm_reduce_scatter fused, copy engine", copy_engine)
    for variant in ("auto", "unfused", "fused"):
        checks.run(f"all_gather_gemm {variant}",
                   lambda v=variant: C.check_all_gather_gemm(ctx, variant=v))
    checks.run("all_gather_gemm + bias, gathered X",
               lambda: C.check_all_gather_gemm(ctx, with_bias=True, gather_x=True))
    checks.run("attention_decode", lambda: C.check_decode(ctx))

    def decode_sharded():
        if C.Q_HEADS % world:
            raise Skip(f"{C.Q_HEADS} query heads do not split over {world} ranks")
        return C.check_decode(ctx, out_sharded=True)
    checks.run("attention_decode, sharded output heads", decode_sharded)
    checks.run("attention_prefill (chunked)", lambda: C.check_prefill(ctx))
    checks.run("opcheck gemm_reduce_scatter, all_gather_gemm", lambda: C.opcheck_gemm(ctx))
    checks.run("opcheck kv_append, attention_decode, attention_prefill",
               lambda: C.opcheck_attention(ctx))
    checks.run("torch.compile(fullgraph=True) GEMM layer", lambda: C.check_compiled_gemm(ctx))
    checks.run("torch.compile(fullgraph=True) append + decode",
               lambda: C.check_compiled_attention(ctx))
    checks.run("CUDA graph: decode replayed as sequences grow", lambda: graph_decode(ctx))
    checks.run("CUDA graph: gemm_reduce_scatter replayed", lambda: graph_gemm(ctx))
    checks.run("CUDA graph: append refused, naming docs/python.md", lambda: graph_refusals(ctx))
    checks.run("torch.compile(mode='reduce-overhead') decode", lambda: reduce_overhead_decode(ctx))
    checks.run("argument errors", lambda: C.check_errors(ctx))
    checks.run("communicators over a sub-group and a second world one",
               lambda: subgroup_comm(rank, world))

    torch.cuda.synchronize()
    ctx.close()
    comm.close()
    if rank == 0:
        print(f"\n{'FAILED' if checks.failures else 'OK'}: {checks.failures} check(s) failed",
              flush=True)
    dist.destroy_process_group()
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
