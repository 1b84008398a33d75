// SPDX-License-Identifier: MIT
// The decode kernel's copy ring layout (src/ops/attention/attention_kernel.h, attnDecodeSwizzle),
// checked on the host: the swizzle keeps every 16-byte piece inside its row and gives each piece
// its own place (else the kernel would read another token's data), and every quarter warp of the
// kernel's access patterns (attention_decode_mma.cuh: the K and V fragment reads of
// mmaAttendFragments' lane map, and the cp.async copies) touches 8 distinct 16-byte bank groups.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "src/ops/attention/attention_kernel.h"

namespace ssc::gpu {
namespace {

constexpr int kRows = 16;  // a step's tokens

// Byte offset in the slot of piece c of row r, as the kernel stores and reads it.
int pieceAt(int headDim, int r, int c) { return r * headDim * 2 + (c ^ attnDecodeSwizzle(r)) * 16; }

// A quarter warp's 8 accesses of 16 bytes are served in one pass when they fall in 8 distinct
// 16-byte groups of the 128-byte bank line.
void expectConflictFree(const std::vector<int>& offsets, const char* what, int headDim, int which) {
  ASSERT_EQ(offsets.size(), 8u);
  std::set<int> groups;
  for (int o : offsets) groups.insert((o / 16) % 8);
  EXPECT_EQ(groups.size(), 8u) << what << " at head dim " << headDim << ", access " << which;
}

class AttnDecodeRing : public ::testing::TestWithParam<int> {};

TEST_P(AttnDecodeRing, SwizzleIsAPermutationOfEachRowsPieces) {
  const int headDim = GetParam(), pieces = headDim / 8;
  for (int r = 0; r < kRows; ++r) {
    std::set<int> at;
    for (int c = 0; c < pieces; ++c) {
      const int off = pieceAt(headDim, r, c);
      EXPECT_GE(off, r * headDim * 2) << "row " << r << " piece " << c;
      EXPECT_LT(off, (r + 1) * headDim * 2) << "row " << r << " piece " << c;
      at.insert(off);
    }
    EXPECT_EQ(at.size(), static_cast<size_t>(pieces)) << "row " << r;
  }
}

TEST_P(AttnDecodeRing, FragmentReadsOfEachQuarterWarpHitDistinctBankGroups) {
  const int headDim = GetParam();
  // Lane (g, t) = (lane / 4, lane % 4). K: rows g + 8i at piece 4c + t; V: rows 2t + (i & 1) +
  // 8 (i >> 1) at piece 8h + g.
  for (int q = 0; q < 4; ++q) {
    for (int i = 0; i < 2; ++i)
      for (int c = 0; c < headDim / 32; ++c) {
        std::vector<int> offsets;
        for (int lane = 8 * q; lane < 8 * q + 8; ++lane)
          offsets.push_back(pieceAt(headDim, lane / 4 + 8 * i, 4 * c + lane % 4));
        expectConflictFree(offsets, "K fragment read", headDim, 10 * i + c);
      }
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < headDim / 64; ++h) {
        std::vector<int> offsets;
        for (int lane = 8 * q; lane < 8 * q + 8; ++lane)
          offsets.push_back(
              pieceAt(headDim, 2 * (lane % 4) + (i & 1) + 8 * (i >> 1), 8 * h + lane / 4));
        expectConflictFree(offsets, "V fragment read", headDim, 10 * i + h);
      }
  }
}

TEST_P(AttnDecodeRing, CopiesOfEachQuarterWarpHitDistinctBankGroupsAndFillTheSlot) {
  const int headDim = GetParam(), pieces = headDim / 8;
  std::set<int> written;
  for (int it = 0; it < kRows * pieces / 32; ++it)
    for (int q = 0; q < 4; ++q) {
      std::vector<int> offsets;
      for (int lane = 8 * q; lane < 8 * q + 8; ++lane) {
        const int piece = it * 32 + lane;
        offsets.push_back(pieceAt(headDim, piece / pieces, piece % pieces));
        written.insert(offsets.back());
      }
      expectConflictFree(offsets, "copy", headDim, it);
    }
  EXPECT_EQ(written.size(), static_cast<size_t>(kRows * pieces))
      << "every piece of the slot written once";
}

INSTANTIATE_TEST_SUITE_P(HeadDims, AttnDecodeRing, ::testing::Values(64, 128),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "d" + std::to_string(i.param);
                         });

}  // namespace
}  // namespace ssc::gpu
