// SPDX-License-Identifier: MIT
// What a plan step reads, writes and how it is cut (src/collectives/step_semantics.h): the host
// executor and the GPU plan kernel both take these answers, so CI checks here what the GPU runs.
#include "src/collectives/step_semantics.h"

#include <gtest/gtest.h>

#include <vector>

namespace ssc {
namespace {

constexpr StepOp kFifoOps[] = {StepOp::kCopy,
                               StepOp::kReduce,
                               StepOp::kSend,
                               StepOp::kRecv,
                               StepOp::kRecvReduceSend,
                               StepOp::kRecvReduceCopy,
                               StepOp::kRecvReduceCopySend,
                               StepOp::kRecvCopySend};

// The table of plan.h's comments: conn(recvPeer) (+) src -> dst and conn(sendPeer).
struct Row {
  StepOp op;
  bool receives, sends, readsSrc, writesDst, reduces, mayPost;
};
constexpr Row kTable[] = {
    {StepOp::kCopy, false, false, true, true, false, true},
    {StepOp::kReduce, false, false, true, true, true, false},
    {StepOp::kSend, false, true, true, false, false, false},
    {StepOp::kRecv, true, false, false, true, false, false},
    {StepOp::kRecvReduceSend, true, true, true, false, true, false},
    {StepOp::kRecvReduceCopy, true, false, true, true, true, true},
    {StepOp::kRecvReduceCopySend, true, true, true, true, true, true},
    {StepOp::kRecvCopySend, true, true, false, true, false, false},
};

TEST(StepSemantics, FifoStepsReadAndWriteWhatPlanSays) {
  for (const Row& r : kTable) {
    SCOPED_TRACE(static_cast<int>(r.op));
    EXPECT_EQ(stepReceives(r.op), r.receives);
    EXPECT_EQ(stepSends(r.op), r.sends);
    EXPECT_EQ(stepReadsSrc(r.op), r.readsSrc);
    EXPECT_EQ(stepWritesDst(r.op), r.writesDst);
    EXPECT_EQ(stepReduces(r.op), r.reduces);
    EXPECT_EQ(stepMayPostOp(r.op), r.mayPost);
    EXPECT_EQ(stepAccumulatesDst(r.op), r.op == StepOp::kReduce);
    EXPECT_FALSE(isPeerStep(r.op));
    EXPECT_FALSE(isP2pHandshakeStep(r.op));
  }
}

TEST(StepSemantics, OtherStepsUseNoFifo) {
  for (StepOp op : {StepOp::kBarrier, StepOp::kPeerReduce, StepOp::kPeerReduceBcast,
                    StepOp::kPeerPush, StepOp::kPeerGather, StepOp::kPeerSwap, StepOp::kP2pOffer,
                    StepOp::kP2pPush, StepOp::kP2pWait}) {
    SCOPED_TRACE(static_cast<int>(op));
    EXPECT_FALSE(stepReceives(op));
    EXPECT_FALSE(stepSends(op));
  }
  EXPECT_TRUE(isPeerStep(StepOp::kPeerSwap));
  EXPECT_FALSE(isPeerStep(StepOp::kBarrier));
  EXPECT_TRUE(isP2pHandshakeStep(StepOp::kP2pOffer));
  EXPECT_TRUE(isP2pHandshakeStep(StepOp::kP2pWait));
  EXPECT_TRUE(stepReduces(StepOp::kPeerReduce));
  EXPECT_TRUE(stepMayPostOp(StepOp::kPeerReduceBcast));
  EXPECT_FALSE(stepMayPostOp(StepOp::kPeerPush));
}

TEST(StepSemantics, PreAndPostSteps) {
  EXPECT_TRUE(stepAppliesPreOp(kFlagPreOp, true));
  EXPECT_TRUE(stepAppliesPreOp(kFlagPreOp | kFlagPostOp, true));
  EXPECT_FALSE(stepAppliesPreOp(kFlagPreOp, false));
  EXPECT_FALSE(stepAppliesPreOp(kFlagPostOp, true));
  for (StepOp op : kFifoOps) {
    SCOPED_TRACE(static_cast<int>(op));
    EXPECT_EQ(stepAppliesPostOp(op, kFlagPostOp, 4), stepMayPostOp(op));
    EXPECT_FALSE(stepAppliesPostOp(op, kFlagPostOp, 0));
    EXPECT_FALSE(stepAppliesPostOp(op, kFlagPreOp, 4));
  }
}

// Chunks of at most one slot cover the step exactly once, in order.
TEST(StepSemantics, ChunksCoverTheStep) {
  for (uint64_t elemBytes : {1u, 2u, 4u, 8u}) {
    for (uint64_t slotBytes : {64u, 1000u, 4096u}) {
      const uint64_t slotElems = slotElemsOf(slotBytes, elemBytes);
      EXPECT_EQ(slotElems, slotBytes / elemBytes);
      for (uint64_t count : {0u, 1u, 7u, 500u, 512u, 513u, 4096u, 10000u}) {
        uint64_t covered = 0, chunks = 0;
        for (uint64_t done = 0; done < count; done += slotElems) {
          const uint64_t n = stepChunkElems(count, done, slotElems);
          EXPECT_GT(n, 0u);
          EXPECT_LE(n * elemBytes, slotBytes);
          EXPECT_EQ(done, covered);
          covered += n;
          ++chunks;
        }
        EXPECT_EQ(covered, count);
        EXPECT_EQ(chunks, stepSlots(count, slotElems));
      }
    }
  }
}

// The GPU's blocks split each chunk into pieces: every byte of the chunk in one piece, pieces at
// multiples of pieceBytes, none past the chunk.
TEST(StepSemantics, PiecesSplitAChunk) {
  for (uint64_t pieceBytes : {16u, 1024u, 4096u}) {
    for (uint64_t blocks : {1u, 2u, 3u, 8u}) {
      for (uint64_t chunkBytes : {0u, 4u, 16u, 1000u, 1024u, 5000u}) {
        if (chunkBytes > blocks * pieceBytes) continue;  // a slot is blocks x pieceBytes at most
        std::vector<int> owner(chunkBytes, -1);
        for (uint64_t b = 0; b < blocks; ++b) {
          const SlotPiece p = slotPiece(chunkBytes, b, pieceBytes);
          EXPECT_EQ(p.lo, b * pieceBytes);
          EXPECT_LE(p.bytes, pieceBytes);
          for (uint64_t i = p.lo; i < p.lo + p.bytes; ++i) {
            ASSERT_LT(i, chunkBytes);
            EXPECT_EQ(owner[i], -1);
            owner[i] = static_cast<int>(b);
          }
        }
        for (int o : owner) EXPECT_NE(o, -1);
      }
    }
  }
}

TEST(StepSemantics, PointToPointBuffers) {
  EXPECT_EQ(stepP2pOp(StepOp::kSend, kBufUserBase + 4, 0), 4);
  EXPECT_EQ(stepP2pOp(StepOp::kRecv, 0, kBufUserBase), 0);
  EXPECT_EQ(stepP2pOp(StepOp::kSend, kBufIn, kBufUserBase + 1), -1);
  EXPECT_EQ(stepP2pOp(StepOp::kRecv, kBufUserBase + 1, kBufScratch), -1);
  EXPECT_EQ(stepP2pOp(StepOp::kCopy, kBufUserBase, kBufUserBase), -1);
  EXPECT_EQ(stepP2pOp(StepOp::kRecvCopySend, kBufUserBase, kBufUserBase), -1);
}

TEST(StepSemantics, PeerBlocks) {
  EXPECT_EQ(peerBlockOff(10, 0, 7), 10u);
  EXPECT_EQ(peerBlockOff(10, 3, 7), 31u);
  // Each pair's two blocks are swapped once: rank r's half and its peer's half tile [0, count).
  for (uint64_t count : {0u, 1u, 2u, 7u, 100u}) {
    for (int r = 0; r < 4; ++r) {
      for (int q = 0; q < 4; ++q) {
        if (q == r) continue;
        uint64_t lo = 0, hi = 0, plo = 0, phi = 0;
        peerSwapHalf(r, q, count, &lo, &hi);
        peerSwapHalf(q, r, count, &plo, &phi);
        EXPECT_LE(lo, hi);
        EXPECT_LE(plo, phi);
        EXPECT_EQ((hi - lo) + (phi - plo), count);
        EXPECT_TRUE(hi == plo || phi == lo);
        EXPECT_EQ(r < q ? lo : plo, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace ssc
