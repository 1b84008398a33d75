// The symmetric kernels' device-side numbering (src/kernels/gpu/sym_kernel.h), checked on the
// host: the LL round that the last block of a launch advances on the device, and the control
// area's own counters, which must not overlap the barrier slots or the LL inboxes; and which
// bulk kernel a plan runs in (the launcher's choice: a per-op reduction kernel, the 2-rank push
// kernel, or the kernel for any plan).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <set>

#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {
namespace {

TEST(SymLayout, LLRoundsAlternateParityAndNeverCarryFlagZeroAcrossTheWrap) {
  uint64_t round = 0xFFFFFFF0ull;
  std::set<int> clearedParities;
  for (int i = 0; i < 40; ++i) {
    const uint64_t next = llNextRound(round);
    EXPECT_NE(static_cast<uint32_t>(next), 0u) << "flag 0 is what a cleared line holds";
    EXPECT_NE(next & 1, round & 1) << "parities must alternate at round " << round;
    EXPECT_GT(next, round);
    if (llClearsAfterRound(round)) {
      EXPECT_GE(static_cast<uint32_t>(round), 0xFFFFFFFEu);
      clearedParities.insert(static_cast<int>(round & 1));
    }
    round = next;
  }
  EXPECT_EQ(clearedParities.size(), 2u) << "each inbox parity is cleared once before the wrap";
  EXPECT_EQ(llNextRound(1), 2u);
}

TEST(SymLayout, OwnCountersSitBetweenTheBarrierSlotsAndTheInboxes) {
  const uint64_t words[] = {SymCtrlLayout::kGridArrive, SymCtrlLayout::kGridGeneration,
                            SymCtrlLayout::kLLDone, SymCtrlLayout::kLLRound};
  std::set<uint64_t> distinct;
  for (uint64_t w : words) {
    EXPECT_GE(w, SymCtrlLayout::kBarriers + kMaxSymBlocks * sizeof(SymBarrierSlot));
    EXPECT_LE(w + 8, SymCtrlLayout::kInbox);
    EXPECT_EQ(w % 8, 0u);
    distinct.insert(w);
  }
  EXPECT_EQ(distinct.size(), 4u);
}

// A plan [barrier, step..., barrier] of the given data ops, n ranks, count elements per step.
SymArgs planOf(std::initializer_list<uint8_t> ops, int nranks, uint64_t count, uint32_t elemBytes = 4) {
  SymArgs a{};
  a.nranks = nranks;
  a.elemBytes = elemBytes;
  a.steps[a.nsteps++].op = kOpBarrier;
  for (uint8_t op : ops) {
    a.steps[a.nsteps].op = op;
    a.steps[a.nsteps++].count = count;
  }
  a.steps[a.nsteps++].op = kOpBarrier;
  return a;
}

TEST(SymKernelChoice, EachReductionPlanRunsInItsOwnKernelAndEveryOtherPlanInTheAnyPlanKernel) {
  for (int n : {2, 3, 4, 8}) {
    EXPECT_EQ(symReductionOp(planOf({kOpPeerReduce}, n, 1000)), kOpPeerReduce) << n;
    EXPECT_EQ(symReductionOp(planOf({kOpPeerReduceBcast}, n, 1000)), kOpPeerReduceBcast) << n;
    EXPECT_EQ(symReductionOp(planOf({kOpPeerPush}, n, 1000)), kAnyDataOp) << n;
    EXPECT_EQ(symReductionOp(planOf({kOpPeerGather}, n, 1000)), kAnyDataOp) << n;
  }
  // Middle barriers or two data steps: the kernel for any plan, which loops over the steps.
  SymArgs twoSteps = planOf({kOpPeerReduce, kOpBarrier, kOpPeerReduceBcast}, 4, 1000);
  EXPECT_EQ(symReductionOp(twoSteps), kAnyDataOp);
  EXPECT_EQ(symReductionOp(planOf({kOpPeerReduce, kOpPeerReduce}, 4, 1000)), kAnyDataOp);
  // A reduction without its closing barrier is not the fixed shape the per-op kernels read.
  SymArgs open = planOf({kOpPeerReduce}, 4, 1000);
  open.steps[2].op = kOpPeerReduce;
  EXPECT_EQ(symReductionOp(open), kAnyDataOp);
  EXPECT_NE(kAnyDataOp, kOpBarrier);
}

TEST(SymKernelChoice, PushKernelTakesTwoRankAllGathersUpTo256MiBOfOutputOnly) {
  const uint64_t limitElems = kSymPushMaxBytes / 4 / 2;  // float, 2 ranks: output = 2 x count
  EXPECT_TRUE(symUsesPushKernel(planOf({kOpPeerPush}, 2, 1)));
  EXPECT_TRUE(symUsesPushKernel(planOf({kOpPeerPush}, 2, limitElems)));
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerPush}, 2, limitElems + 1)));
  EXPECT_TRUE(symUsesPushKernel(planOf({kOpPeerPush}, 2, limitElems * 2, 2)));  // 2-byte elements
  for (int n : {3, 4, 8}) EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerPush}, n, 1000))) << n;
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerReduce}, 2, 1000)));
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerGather}, 2, 1000)));
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerPush, kOpPeerPush}, 2, 1000)));
  // Its grid: kSymPushBlocksPerSM blocks of kSymPushThreads fit one SM's 2048 threads.
  EXPECT_LE(kSymPushBlocksPerSM * kSymPushThreads, 2048);
}

}  // namespace
}  // namespace ssc::gpu
