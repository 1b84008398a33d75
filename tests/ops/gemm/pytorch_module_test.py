#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""examples/pytorch/starscream_gemm.py's C-API layer on the host backend, without PyTorch (a stub
module stands in for it): under mpirun, rank 0's unique id (all 128 bytes) reaches the other
ranks, every rank initialises the communicator and a GEMM context through ctypes, and
sscGemmQueryPlan answers through the module's argument structure (a layout mismatch with
sscGemmArgs_t would be refused or answer wrongly). The GPU half (torch tensors, streams) runs
on the device: examples/pytorch/gemm_rs.py.

    SSC_LIB=build/lib/libstarscream.so mpirun -np 2 python3 tests/ops/gemm/pytorch_module_test.py DIR
"""
import os
import sys
import tempfile
import time
import types

here = os.path.dirname(os.path.abspath(__file__))
sys.modules.setdefault("torch", types.SimpleNamespace(bfloat16="bf16", float16="fp16", float32="fp32"))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "examples", "pytorch"))
import starscream_gemm as sg  # noqa: E402

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir(),
                    "ssc_uid_%s" % os.environ.get("OMPI_COMM_WORLD_JOBID", os.getppid()))
if rank == 0:
    uid = sg.unique_id()
    assert len(uid) == 128, len(uid)
    with open(path + ".tmp", "wb") as f:
        f.write(uid)
    os.rename(path + ".tmp", path)
else:
    deadline = time.time() + 30
    while not os.path.exists(path):
        assert time.time() < deadline, "no unique id from rank 0"
        time.sleep(0.02)
    with open(path, "rb") as f:
        uid = f.read()
comm = sg.Comm.from_unique_id(rank, world, uid)
gemm = sg.Gemm(comm)
assert (gemm.rank.value, gemm.nranks.value) == (rank, world)
assert sg.row_shard(10, 4, 3) == (9, 1) and sg.row_shard(10, 4, 0) == (0, 3)
fused = gemm.query_plan(0, 37, 29, 19, variant=sg.FUSED, chunks=3)
auto = gemm.query_plan(0, 4096, 8192, 128)
expect_fused = (sg.FUSED, 3) if world > 1 else (sg.UNFUSED, 1)  # one rank: the GEMM alone
assert fused == expect_fused, fused
assert auto == (sg.UNFUSED, 1), auto
# The fused all-gather runs where the whole gathered X fits one workspace slot,
# and is refused, naming workspaceBytes, where it does not (1 Mi rows x 8192 bf16 = 16 GiB).
fused_ag = gemm.query_plan(1, 37, 29, 19, variant=sg.FUSED)
assert fused_ag[0] == (sg.FUSED if world > 1 else sg.UNFUSED), fused_ag
try:
    gemm.query_plan(1, 1 << 20, 64, 8192, variant=sg.FUSED)
    assert world == 1, "a fused all-gather larger than the workspace must be refused"
except sg.StarscreamError as e:
    assert "workspaceBytes" in str(e), e
gemm.destroy()
comm.destroy()
if rank == 0:
    os.remove(path)
print("pytorch_module_test: rank %d of %d ok" % (rank, world))
