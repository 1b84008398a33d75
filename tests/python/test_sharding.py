#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""starscream.row_shard (pure Python, used by the fake kernels) equals libstarscream's
sscGemmRowShard everywhere on a grid, and starscream.shard_2d answers through the C helper with
the header's plan (the op, the split dimension, the estimates)."""
import unittest

import _support
import starscream
from starscream.sharding import row_shard_c


class RowShardTest(unittest.TestCase):
    def test_torch_chunk_rule(self):
        self.assertEqual([starscream.row_shard(10, 4, r) for r in range(4)],
                         [(0, 3), (3, 3), (6, 3), (9, 1)])
        self.assertEqual(starscream.row_shard(2, 4, 3), (2, 0))
        self.assertEqual(starscream.row_shard(0, 3, 1), (0, 0))

    def test_bad_arguments(self):
        for args in ((10, 0, 0), (10, 4, 4), (10, 4, -1), (-1, 2, 0)):
            with self.subTest(args=args), self.assertRaises(ValueError):
                starscream.row_shard(*args)

    @_support.need_library()
    def test_equals_the_library(self):
        for nranks in range(1, 10):
            for m in list(range(0, 40)) + [1023, 4096, 4097, 65537]:
                for rank in range(nranks):
                    self.assertEqual(starscream.row_shard(m, nranks, rank),
                                     row_shard_c(m, nranks, rank), (m, nranks, rank))


@_support.need_library()
class Shard2dTest(unittest.TestCase):
    def test_plan(self):
        for inter in ("column", "row"):
            for m in (16, 4096):
                with self.subTest(inter=inter, m=m):
                    p = starscream.shard_2d(inter, m, 8192, 3584, 8)
                    self.assertIn(p.op, ("reduce_scatter", "all_gather"))
                    self.assertEqual(p.m, m)
                    # The op splits K (reduce-scatter) or N (all-gather): partition 0's share.
                    split = (3584, p.k) if p.op == "reduce_scatter" else (8192, p.n)
                    self.assertEqual(split[1], starscream.row_shard(split[0], 8, 0)[1])
                    # 2D: the split dimension is orthogonal to the inter-GPU one.
                    self.assertEqual(p.two_d, (inter == "column") == (p.op == "reduce_scatter"))
                    self.assertGreater(p.est_us, 0)
                    self.assertLessEqual(p.est_us, p.other_est_us)

    def test_one_partition(self):
        p = starscream.shard_2d("row", 128, 256, 512, 1)
        self.assertEqual((p.m, p.n, p.k), (128, 256, 512))

    def test_errors(self):
        with self.assertRaises(ValueError):
            starscream.shard_2d("diagonal", 1, 1, 1, 2)
        with self.assertRaises(starscream.StarscreamError) as cm:
            starscream.shard_2d("row", 128, 256, 512, 0)
        self.assertIn("sscGemmShard2d", str(cm.exception))
        self.assertEqual(cm.exception.code, 4)  # sscInvalidArgument


if __name__ == "__main__":
    _support.main()
