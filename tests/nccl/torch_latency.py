# SPDX-License-Identifier: MIT
# Times torch.distributed.all_reduce (float32, in place, the tensors PyTorch allocates) through
# whatever NCCL the process loads: under LD_PRELOAD=libstarscream-nccl.so that is Starscream.
# Prints one line per size on rank 0: bytes, microseconds per call (the slowest rank's mean
# over back-to-back calls after a warm-up, synchronising once at the end as a training step does)
# and the bus bandwidth nccl-tests would report (2 (K - 1) / K x bytes / time).
#
#   tools/emulate/partition-run.sh K env LD_PRELOAD=$PWD/build/lib/libstarscream-nccl.so \
#       python3 tests/nccl/torch_latency.py [label [bytes ...]]
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", 0))
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    sizes = [int(a) for a in sys.argv[2:]] or [8, 8 << 10, 64 << 10, 1 << 20, 16 << 20]
    for nbytes in sizes:
        # First a checked call (in place, every rank's own values), then the timed ones on zeros.
        t = torch.full((max(1, nbytes // 4),), float(rank + 1), device="cuda")
        dist.all_reduce(t)
        ok = bool((t == world * (world + 1) / 2).all().item())
        t.zero_()
        iters = 200 if nbytes <= (1 << 20) else 50 if nbytes <= (64 << 20) else 20
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        us = torch.tensor([(time.perf_counter() - start) / iters * 1e6], device="cuda")
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        if rank == 0:
            busbw = 2 * (world - 1) / world * nbytes / us.item() / 1e3
            print(f"torch_latency {label} K={world} bytes={nbytes} us={us.item():.1f} "
                  f"busbw={busbw:.1f}GB/s{'' if ok else ' WRONG'}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
