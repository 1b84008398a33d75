#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package's communicator, GEMM context and KV cache over the C API, on the host backend,
without PyTorch: two processes make a communicator from a key-value store (a folder standing in
for torch.distributed's store: rank 0 sets the unique id, rank 1 waits for it, as
Comm.from_process_group does through the group's store), then every call that needs no
tensor: topology, the GEMM plan through the package's sscGemmArgs_t (a layout mismatch would be
refused or answer wrongly), the fused all-gather's refusal naming workspaceBytes, the KV
cache's placement and lengths, and collective closes."""
import json
import os
import tempfile
import subprocess
import sys
import textwrap
import unittest

import _support

CHILD = textwrap.dedent("""
    import json, os, sys, time
    import starscream

    class FolderStore:  # set(key, bytes) / get(key) that waits, as c10d's stores
        def __init__(self, root):
            self.root = root
        def _path(self, key):
            return os.path.join(self.root, key.replace("/", "_"))
        def set(self, key, value):
            tmp = self._path(key) + ".tmp"
            with open(tmp, "wb") as f:
                f.write(value)
            os.rename(tmp, self._path(key))
        def get(self, key):
            deadline = time.time() + 60
            while not os.path.exists(self._path(key)):
                assert time.time() < deadline, "no unique id in the store"
                time.sleep(0.01)
            with open(self._path(key), "rb") as f:
                return f.read()

    rank, size, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    out = {}
    comm = starscream.Comm.from_store(FolderStore(root), rank, size, "starscream/comm/test/0")
    out["rank"], out["size"], out["device"] = comm.rank, comm.size, comm.device
    out["topology"] = comm.topology()
    gemm = starscream.Gemm(comm)
    out["fused_rs"] = gemm.query_plan("reduce_scatter", 37, 29, 19, variant="fused", chunks=3)
    out["auto_rs"] = gemm.query_plan("reduce_scatter", 4096, 8192, 128)
    out["fused_ag"] = gemm.query_plan("all_gather", 37, 29, 19, variant="fused")
    try:
        gemm.query_plan("all_gather", 1 << 20, 64, 8192, variant="fused")
        out["big_ag"] = "accepted"
    except starscream.StarscreamError as e:
        out["big_ag"] = str(e)
    gemm.close()
    cache = starscream.KvCache(comm, num_kv_heads=1, head_dim=64, page_size=4, max_pages=16,
                               max_seqs=4, max_batch=4, max_q_heads=8, exchange="allgather")
    out["owners"] = [cache.token_owner(0, p) for p in range(0, 32, 4)]
    out["length"] = cache.sequence_length(1)
    try:
        cache.trim(1, 5)
        out["trim"] = "accepted"
    except starscream.StarscreamError as e:
        out["trim"] = [e.code, e.call]
    cache.close()
    comm.close()
    print(json.dumps(out))
""")


@_support.need_library()
class CommTest(unittest.TestCase):
    def test_two_ranks_on_the_host_backend(self):
        with tempfile.TemporaryDirectory() as d:
            env = _support.subprocess_env(STARSCREAM_BACKEND="host", STARSCREAM_TIMEOUT="60")
            procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(r), "2", d],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for r in range(2)]
            results = []
            for p in procs:
                stdout, stderr = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, stderr)
                results.append(json.loads(stdout.strip().splitlines()[-1]))
        for rank, r in enumerate(results):
            with self.subTest(rank=rank):
                self.assertEqual((r["rank"], r["size"], r["device"]), (rank, 2, -1))
                self.assertEqual(r["topology"]["partitionsOnGpu"] * r["topology"]["gpus"], 2)
                self.assertEqual(r["fused_rs"], ["fused", 3])
                self.assertEqual(r["auto_rs"], ["unfused", 1])
                self.assertEqual(r["fused_ag"][0], "fused")
                self.assertIn("workspaceBytes", r["big_ag"])
                # Round robin over 2 ranks, a page (4 tokens) at a time.
                self.assertEqual(r["owners"], [0, 1] * 4)
                self.assertEqual(r["length"], 0)
                self.assertEqual(r["trim"], [4, "sscKvCacheTrimSequence"])  # past the length

    def test_unique_id_and_bad_arguments(self):
        import starscream
        uid = starscream.unique_id()
        self.assertEqual(len(uid), 128)
        with self.assertRaisesRegex(ValueError, "128 bytes"):
            starscream.Comm.from_unique_id(uid[:10], 0, 1)
        with self.assertRaisesRegex(ValueError, "rank 2 of 2"):
            starscream.Comm.from_unique_id(uid, 2, 2)

    def test_one_rank(self):
        import starscream
        env_backend = os.environ.get("STARSCREAM_BACKEND")
        os.environ["STARSCREAM_BACKEND"] = "host"
        try:
            with starscream.Comm.from_unique_id(starscream.unique_id(), 0, 1) as comm:
                self.assertEqual(comm.size, 1)
                with starscream.Gemm(comm) as gemm:
                    self.assertEqual(gemm.query_plan("all_gather", 8, 8, 8), ("unfused", 1))
                    with self.assertRaisesRegex(ValueError, "op must be"):
                        gemm.query_plan("all_reduce", 8, 8, 8)
                    with self.assertRaisesRegex(ValueError, "variant must be"):
                        gemm.query_plan("all_gather", 8, 8, 8, variant="fastest")
            self.assertIn("closed", repr(comm))
            with self.assertRaisesRegex(starscream.StarscreamError, "closed"):
                comm.handle
        finally:
            if env_backend is None:
                os.environ.pop("STARSCREAM_BACKEND")
            else:
                os.environ["STARSCREAM_BACKEND"] = env_backend


if __name__ == "__main__":
    _support.main()
