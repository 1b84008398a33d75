#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The custom ops with PyTorch on the host backend (one rank, CPU tensors, no GPU): each op
against a reference computed with torch (GEMM and reduce-scatter, all-gather and GEMM, decode
and prefill against softmax attention in fp32), torch.library.opcheck on each op (schema,
fake kernel, autograd registration, AOT dispatch with dynamic shapes), torch.compile with
fullgraph=True (the aot_eager backend: no C++ compiler needed) and the argument errors.

Without PyTorch the whole file reports itself skipped (ctest: Skipped), saying so. The same
checks run on K GPU partitions in gpu_ops_test.py."""
import os
import unittest

import _support

torch = _support.torch_or_skip_file("tests/python/test_torch_ops.py (the custom ops with PyTorch)")
if _support.library_or_none() is None:
    print("SKIPPED tests/python/test_torch_ops.py: libstarscream.so is not built here", flush=True)
    raise SystemExit(_support.SKIP)

os.environ["STARSCREAM_BACKEND"] = "host"  # CPU tensors, also where the library has a GPU backend
import starscream  # noqa: E402
import _torch_checks as C  # noqa: E402


class TorchOpsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.comm = starscream.Comm.from_unique_id(starscream.unique_id(), 0, 1)
        cls.ctx = C.Ctx(cls.comm, "cpu")

    @classmethod
    def tearDownClass(cls):
        cls.ctx.close()
        cls.comm.close()

    def check(self, why):
        self.assertIsNone(why, why)

    def test_gemm_reduce_scatter(self):
        for kw in ({}, {"with_bias": True}, {"out_dtype": torch.float32}, {"weight_kn": True},
                   {"variant": "unfused"}, {"variant": "chunked"}):
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                self.check(C.check_gemm_reduce_scatter(self.ctx, **kw))

    def test_all_gather_gemm(self):
        for kw in ({}, {"with_bias": True}, {"gather_x": True}):
            with self.subTest(**kw):
                self.check(C.check_all_gather_gemm(self.ctx, **kw))

    def test_decode_and_prefill(self):
        self.check(C.check_decode(self.ctx))
        self.check(C.check_decode(self.ctx, out_sharded=True))
        self.check(C.check_prefill(self.ctx))

    def test_opcheck(self):
        C.opcheck_gemm(self.ctx)
        C.opcheck_attention(self.ctx)

    def test_compile_fullgraph(self):
        self.check(C.check_compiled_gemm(self.ctx, backend="aot_eager"))
        self.check(C.check_compiled_attention(self.ctx, backend="aot_eager"))

    def test_errors(self):
        self.check(C.check_errors(self.ctx))

    def test_fake_shapes_symbolic(self):
        # The fake kernels under FakeTensorMode: shapes without running anything.
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            x = torch.empty(10, 64, dtype=torch.bfloat16)
            w = torch.empty(32, 64, dtype=torch.bfloat16)
            y = torch.ops.starscream.gemm_reduce_scatter(x, w, None, 0, 4, 3, False, 0, 0, False, None)
            self.assertEqual(tuple(y.shape), (1, 32))
            y, g = torch.ops.starscream.all_gather_gemm(x[:3], w, None, 0, 10, 4, 0, False, 0, 0,
                                                        False, torch.float32, True)
            self.assertEqual((tuple(y.shape), y.dtype, tuple(g.shape)), ((10, 32), torch.float32, (10, 64)))
            q = torch.empty(8, 2, 128, dtype=torch.bfloat16)
            out, lse = torch.ops.starscream.attention_decode(q, torch.empty(1), None, 0, list(range(8)),
                                                             0.1, 0, 0x1, 4)
            self.assertEqual((tuple(out.shape), tuple(lse.shape), lse.dtype),
                             ((8, 8, 128), (8, 8), torch.float32))


if __name__ == "__main__":
    _support.main()
