#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The custom ops' shape functions and argument checks (starscream/_shapes.py), which both the
real kernels and the fake kernels (torch.compile's view of the ops) use: output shapes per
rank, and the errors for shapes and dtypes the library would refuse. No PyTorch needed."""
import unittest

import _support  # noqa: F401
from starscream import _shapes as S

BF16, F16, F32 = "torch.bfloat16", "torch.float16", "torch.float32"


class GemmShapesTest(unittest.TestCase):
    def test_reduce_scatter_rows(self):
        # M = 10 over 4 ranks: 3, 3, 3, 1 rows, N from w.
        self.assertEqual([S.gemm_reduce_scatter((10, 64), (32, 64), False, 4, r)
                          for r in range(4)], [(3, 32), (3, 32), (3, 32), (1, 32)])
        self.assertEqual(S.gemm_reduce_scatter((10, 64), (64, 32), True, 4, 3), (1, 32))
        self.assertEqual(S.gemm_reduce_scatter((2, 8), (4, 8), False, 4, 3, bias_shape=(4,)), (0, 4))

    def test_reduce_scatter_errors(self):
        with self.assertRaisesRegex(ValueError, "w holds k = 32"):
            S.gemm_reduce_scatter((10, 64), (64, 32), False, 2, 0)
        with self.assertRaisesRegex(ValueError, "bias must be"):
            S.gemm_reduce_scatter((10, 64), (32, 64), False, 2, 0, bias_shape=(64,))
        with self.assertRaisesRegex(ValueError, "2 dimensions"):
            S.gemm_reduce_scatter((10, 64, 1), (32, 64), False, 2, 0)

    def test_all_gather(self):
        self.assertEqual(S.all_gather_gemm((3, 64), (32, 64), 10, False, 4, 0), ((10, 32), 64))
        self.assertEqual(S.all_gather_gemm((1, 64), (64, 32), 10, True, 4, 3), ((10, 32), 64))
        self.assertEqual(S.all_gather_gemm((0, 64), (32, 64), 2, False, 4, 3), ((2, 32), 64))
        with self.assertRaisesRegex(ValueError, r"\[3\]\[64\]"):
            S.all_gather_gemm((4, 64), (32, 64), 10, False, 4, 0)

    def test_dtypes(self):
        S.gemm_dtypes(BF16, BF16, None, None)
        S.gemm_dtypes(F16, F16, F32, F32)
        S.gemm_dtypes(BF16, BF16, BF16, BF16)
        for args in ((F32, F32, None, None), (BF16, F16, None, None), (BF16, BF16, F16, None),
                     (BF16, BF16, F32, BF16)):
            with self.subTest(args=args), self.assertRaises(TypeError):
                S.gemm_dtypes(*args)


class AttentionShapesTest(unittest.TestCase):
    def test_append(self):
        S.kv_append((5, 1, 128), (5, 1, 128), 5, 1, 128)
        with self.assertRaisesRegex(ValueError, "v must be"):
            S.kv_append((5, 1, 128), (5, 1, 64), 5, 1, 128)
        with self.assertRaisesRegex(ValueError, "one token per seq_ids entry"):
            S.kv_append((4, 1, 128), (4, 1, 128), 5, 1, 128)

    def test_decode(self):
        q = (8, 8, 128)
        self.assertEqual(S.attention_decode(q, 8, 4, 0), (8, (8, 8, 128), (8, 8)))
        self.assertEqual(S.attention_decode(q, 8, 4, S.ATTN_OUT_SHARDED_HEADS),
                         (8, (8, 2, 128), (8, 2)))
        # q holds this rank's 2 heads of 8.
        self.assertEqual(S.attention_decode((8, 2, 128), 8, 4,
                                            S.ATTN_Q_SHARDED_HEADS | S.ATTN_OUT_SHARDED_HEADS),
                         (8, (8, 2, 128), (8, 2)))
        self.assertEqual(S.attention_decode((8, 2, 128), 8, 4, S.ATTN_Q_SHARDED_HEADS),
                         (8, (8, 8, 128), (8, 8)))
        with self.assertRaisesRegex(ValueError, "seq_ids 7"):
            S.attention_decode(q, 7, 4, 0)
        with self.assertRaisesRegex(ValueError, "do not split"):
            S.attention_decode((8, 6, 128), 8, 4, S.ATTN_OUT_SHARDED_HEADS)
        with self.assertRaisesRegex(ValueError, "flags"):
            S.attention_decode(q, 8, 4, 0x4)

    def test_prefill(self):
        self.assertEqual(S.attention_prefill((7, 8, 64), 2, [0, 3, 7], 2, 0),
                         (8, (7, 8, 64), (7, 8)))
        self.assertEqual(S.attention_prefill((7, 8, 64), 2, [0, 3, 7], 2, S.ATTN_OUT_SHARDED_HEADS),
                         (8, (7, 4, 64), (7, 4)))
        for cu in ([0, 3], [1, 3, 7], [0, 5, 3], [0, 3, 6]):
            with self.subTest(cu=cu), self.assertRaises(ValueError):
                S.attention_prefill((7, 8, 64), 2, cu, 2, 0)
        with self.assertRaisesRegex(ValueError, "q_sharded_heads"):
            S.attention_prefill((7, 8, 64), 2, [0, 3, 7], 2, S.ATTN_Q_SHARDED_HEADS)


if __name__ == "__main__":
    _support.main()
