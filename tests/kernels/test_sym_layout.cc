// SPDX-License-Identifier: MIT
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
SymArgs planOf(std::initializer_list<uint8_t> ops, int nranks, uint64_t count,
               uint32_t elemBytes = 4, bool wide = true) {
  SymArgs a{};
  a.wideGrid = wide ? 1 : 0;
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

TEST(SymKernelChoice, PushKernelTakesWideGridAllGathersUpTo256MiBOfOutputOnly) {
  for (int n : {2, 3, 4, 8}) {
    const uint64_t limitElems = kSymPushMaxBytes / 4 / n;  // float: output = n x count
    EXPECT_TRUE(symUsesPushKernel(planOf({kOpPeerPush}, n, 1))) << n;
    EXPECT_TRUE(symUsesPushKernel(planOf({kOpPeerPush}, n, limitElems))) << n;
    EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerPush}, n, limitElems + 1))) << n;
    EXPECT_TRUE(symUsesPushKernel(planOf({kOpPeerPush}, n, limitElems * 2, 2)))
        << n;  // 2-byte elements
    // The bulk grid (the tuner's other choice) keeps the bulk kernel at every size.
    EXPECT_FALSE(symIsPushPlan(planOf({kOpPeerPush}, n, 1, 4, false))) << n;
    EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerPush}, n, 1, 4, false))) << n;
  }
  // Only the one-push plan has that kernel, whatever the plan asks for.
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerReduce}, 2, 1000)));
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerGather}, 2, 1000)));
  EXPECT_FALSE(symUsesPushKernel(planOf({kOpPeerPush, kOpPeerPush}, 2, 1000)));
  // Its grid: kSymPushBlocksPerSM blocks of kSymPushThreads fit one SM's 2048 threads.
  EXPECT_LE(kSymPushBlocksPerSM * kSymPushThreads, 2048);
}

// Larger wide-grid all-gathers are cut into launches of the push kernel (gpu_symmetric.cc).
TEST(SymKernelChoice, LargeWideAllGathersAreCutIntoPushLaunchesThatCoverTheStepExactly) {
  for (int n : {2, 8}) {
    for (uint32_t esize : {1u, 2u, 4u, 8u}) {
      const uint64_t limitElems = kSymPushMaxBytes / esize / n;
      for (uint64_t count : {uint64_t{1}, limitElems - 1, limitElems, limitElems + 1,
                             2 * limitElems, 4 * limitElems + 12345, 3 * limitElems - 7}) {
        SymArgs a = planOf({kOpPeerPush}, n, count, esize);
        ASSERT_TRUE(symIsPushPlan(a));
        const uint64_t chunk = symPushChunkElems(a);
        if (count <= limitElems) {
          EXPECT_EQ(chunk, count) << esize << " " << count;  // one launch, the whole step
          continue;
        }
        EXPECT_GT(chunk, 0u);
        EXPECT_EQ(chunk * esize % 4096, 0u) << "launches after the first keep its alignment";
        // What the executor does: launches of chunk elements, the last one the rest.
        uint64_t done = 0, launches = 0;
        while (done < count) {
          SymArgs piece = a;
          piece.steps[1].count = std::min(chunk, count - done);
          EXPECT_TRUE(symUsesPushKernel(piece)) << esize << " " << count << " launch " << launches;
          done += piece.steps[1].count;
          ++launches;
        }
        EXPECT_EQ(done, count);
        EXPECT_EQ(launches, (count + chunk - 1) / chunk);
        EXPECT_LE(launches, (count * esize * n + kSymPushMaxBytes - 1) / kSymPushMaxBytes + 1)
            << "no more launches than the 256 MiB pieces need, give or take the rounding";
      }
    }
  }
  // Not a push plan: the bulk grid, or another step.
  EXPECT_FALSE(symIsPushPlan(planOf({kOpPeerPush}, 4, 1000, 4, false)));
  EXPECT_FALSE(symIsPushPlan(planOf({kOpPeerGather}, 2, 1000)));
}

// Which plans leave the bulk kernels for the shifted-load kernel (sym_unaligned.cuh): those where
// some step's pointers disagree at 16 bytes. The pointers are made-up addresses (never read): two
// registered buffers per rank at 64 KiB-aligned bases, as allocations and their IPC mappings are.
TEST(SymKernelChoice, PlansWhosePointersDisagreeAt16BytesTakeTheUnalignedKernel) {
  const auto withBuffers = [](SymArgs a, int rank) {
    a.rank = rank;
    for (int q = 0; q < a.nranks; ++q) {
      a.peer[0][q] = reinterpret_cast<void*>(uintptr_t{0x100000} * (q + 1));
      a.peer[1][q] = reinterpret_cast<void*>(uintptr_t{0x100000} * (q + 1) + 0x80000);
    }
    a.local[0] = a.peer[0][rank];
    a.local[1] = a.peer[1][rank];
    return a;
  };
  for (int n : {2, 3, 5, 8}) {
    for (int rank : {0, 1}) {
      for (uint64_t count : {uint64_t{1000}, uint64_t{1001}, uint64_t{1002}, uint64_t{1004}}) {
        for (uint32_t es : {2u, 4u}) {
          // Blocks of count elements: rank r's block of every input at r x count, the output at 0
          // (reduce-scatter); this rank's input into every output at rank x count (all-gather's
          // push); block q of the output from every peer's input at 0 (gather).
          const bool blockAligned = count * es % 16 == 0;
          SymArgs rs = withBuffers(planOf({kOpPeerReduce}, n, count, es), rank);
          rs.steps[1].srcBuf = 0;
          rs.steps[1].dstBuf = 1;
          rs.steps[1].srcOff = rank * count;
          rs.steps[1].recvPeer = rs.steps[1].sendPeer = -1;
          EXPECT_EQ(symVectorAligned(rs), rank == 0 || blockAligned)
              << n << " " << rank << " " << count << " " << es;
          SymArgs ag = withBuffers(planOf({kOpPeerPush}, n, count, es), rank);
          ag.steps[1].srcBuf = 0;
          ag.steps[1].dstBuf = 1;
          ag.steps[1].dstOff = rank * count;
          EXPECT_EQ(symVectorAligned(ag), rank == 0 || blockAligned)
              << n << " " << rank << " " << count << " " << es;
          SymArgs ga = withBuffers(planOf({kOpPeerGather}, n, count, es), rank);
          ga.steps[1].srcBuf = 0;
          ga.steps[1].dstBuf = 1;
          EXPECT_EQ(symVectorAligned(ga), blockAligned)
              << n << " " << rank << " " << count << " " << es;
        }
      }
    }
  }
  // An empty step has nothing to move; a pointer off its element's alignment never vectorizes.
  SymArgs none = withBuffers(planOf({kOpPeerPush}, 4, 0), 1);
  none.steps[1].dstOff = 3;
  EXPECT_TRUE(symVectorAligned(none));
  SymArgs odd = withBuffers(planOf({kOpPeerPush}, 4, 64), 0);
  odd.local[0] = reinterpret_cast<void*>(uintptr_t{0x100002});
  EXPECT_FALSE(symVectorAligned(odd));
}

}  // namespace
}  // namespace ssc::gpu
