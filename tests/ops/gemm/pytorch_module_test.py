#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The starscream Python package's GEMM layer (python/starscream/gemm.py) over the C API on the
host backend, without PyTorch: under mpirun, rank 0's unique id (all 128 bytes) reaches the
other ranks, every rank initialises the communicator and a GEMM context through ctypes, and
sscGemmQueryPlan answers through the package's sscGemmArgs_t (a layout mismatch would be
refused or answer wrongly). The tensor calls run on the device: tests/python/gpu_ops_test.py.

    SSC_LIB=build/lib/libstarscream.so mpirun -np 2 python3 tests/ops/gemm/pytorch_module_test.py DIR
"""
import os
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "python"))
if os.environ.get("SSC_LIB"):  # the library ctest built, by file
    os.environ.setdefault("STARSCREAM_LIB_DIR", os.path.dirname(os.environ["SSC_LIB"]))
import starscream  # noqa: E402

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir(),
                    "ssc_uid_%s" % os.environ.get("OMPI_COMM_WORLD_JOBID", os.getppid()))
if rank == 0:
    uid = starscream.unique_id()
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
comm = starscream.Comm.from_unique_id(uid, rank, world)
gemm = starscream.Gemm(comm)
assert (gemm.rank, gemm.nranks) == (rank, world)
assert starscream.row_shard(10, 4, 3) == (9, 1) and starscream.row_shard(10, 4, 0) == (0, 3)
fused = gemm.query_plan("reduce_scatter", 37, 29, 19, variant="fused", chunks=3)
auto = gemm.query_plan("reduce_scatter", 4096, 8192, 128)
expect_fused = ("fused", 3) if world > 1 else ("unfused", 1)  # one rank: the GEMM alone
assert fused == expect_fused, fused
assert auto == ("unfused", 1), auto
# The fused all-gather runs where the whole gathered X fits one workspace slot,
# and is refused, naming workspaceBytes, where it does not (1 Mi rows x 8192 bf16 = 16 GiB).
fused_ag = gemm.query_plan("all_gather", 37, 29, 19, variant="fused")
assert fused_ag[0] == ("fused" if world > 1 else "unfused"), fused_ag
try:
    gemm.query_plan("all_gather", 1 << 20, 64, 8192, variant="fused")
    assert world == 1, "a fused all-gather larger than the workspace must be refused"
except starscream.StarscreamError as e:
    assert "workspaceBytes" in str(e), e
gemm.close()
comm.close()
if rank == 0:
    os.remove(path)
print("pytorch_module_test: rank %d of %d ok" % (rank, world))
