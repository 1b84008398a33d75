// SPDX-License-Identifier: MIT
// sscGemmAuto's rates read from a communicator's tuner (gemmRates, gemm_rates.h) and the rule's
// answers with them (autoPicksFused, gemm_plan.h) on machines described by topology files and
// the shipped profiles: the K = 8 H200 rates test_gemm_rule.cc feeds by hand, and sensible
// answers at K = 2, 3, 4, 8 and 16, on a GPU with no shipped profile (the topology's link
// figures) and on an MI300X in CPX mode.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/ops/gemm/gemm_rates.h"
#include "src/topology/topology.h"
#include "tuner/model.h"
#include "tuner/profile.h"

namespace ssc::gemm {
namespace {

// One GPU of `model` split into `k` ranks by `mode` (MPS: the emulation's shape, any rank count).
Topology oneGpu(const std::string& model, const std::string& mode, int k) {
  const std::string text =
      "{\"format\": \"starscream-topology/1\", \"name\": \"one-gpu-" + std::to_string(k) +
      "\", \"nodes\": 1, \"gpus_per_node\": 1, \"partitions_per_gpu\": " + std::to_string(k) +
      ", \"gpu_model\": \"" + model + "\", \"compute_partition\": \"" + mode +
      "\", \"placement\": \"packed\"}";
  Topology t;
  EXPECT_EQ(parseTopology(text, "<test>", kAnyRankCount, &t), sscSuccess) << lastError();
  return t;
}
Topology mpsGpu(const std::string& model, int k) { return oneGpu(model, "MPS", k); }

// The communicator's tuner for t: the profile init would resolve (the shipped one for its GPU
// model, else the topology's links).
std::unique_ptr<Tuner> tunerFor(const Topology& t, std::string* profileName = nullptr) {
  TunerProfile p;
  EXPECT_EQ(resolveProfile(t, &p), sscSuccess) << lastError();
  if (profileName != nullptr) *profileName = p.name;
  return std::make_unique<Tuner>(t, p);
}

Problem problem(Op op, int64_t m, int64_t n, int64_t k, int nranks) {
  Problem p;
  p.op = op;
  p.m = m;
  p.n = n;
  p.k = k;
  p.nranks = nranks;
  return p;
}

// The TP8 layers of gemm_coll_perf (perf/common/gemm_args.cc), per GPU: K x N.
struct Layer {
  const char* name;
  int64_t k, n;
};
const Layer kLayers[] = {
    {"gptoss120b.o", 512, 2880},     {"gptoss120b.qkv", 2880, 640},
    {"llama405b.down", 6656, 16384}, {"llama405b.gate_up", 16384, 13312},
    {"llama405b.o", 2048, 16384},    {"llama405b.qkv", 16384, 2304},
    {"llama70b.down", 3584, 8192},   {"llama70b.gate_up", 8192, 7168},
    {"llama70b.o", 1024, 8192},      {"llama70b.qkv", 8192, 1280},
};
const int64_t kMs[] = {16, 64, 256, 1024, 4096, 16384, 65536};

// The op's shape of a layer split over `ranks` partitions: the all-gather splits N, the
// reduce-scatter K.
Problem layerProblem(const Layer& l, Op op, int64_t m, int ranks) {
  return op == Op::kAllGather ? problem(op, m, (l.n + ranks - 1) / ranks, l.k, ranks)
                              : problem(op, m, l.n, (l.k + ranks - 1) / ranks, ranks);
}

bool autoFuses(const Problem& p, const GemmRates& r) {
  Plan pl;
  std::string why;
  EXPECT_TRUE(makePlan(p, sscGemmAuto, 0, size_t{1} << 40, &pl, &why, true, &r)) << why;
  return pl.variant == sscGemmFused;
}

// The K = 8 rates test_gemm_rule.cc feeds by hand are the shipped profile's, read through the
// tuner (all-gathers of 64 MiB and more run on the bulk grid; below, the wide grid's 14.27 us
// and 380 GB/s, where the fixed costs decide anyway).
TEST(GemmRates, TheShippedH200ProfileAtEightPartitions) {
  Topology t;
  ASSERT_EQ(loadTopologyFile(std::string(SSC_SOURCE_DIR) + "/tools/topologies/h200-mps-8.json",
                             kAnyRankCount, &t),
            sscSuccess)
      << lastError();
  std::string name;
  const std::unique_ptr<Tuner> owned = tunerFor(t, &name);
  const Tuner& tuner = *owned;
  EXPECT_EQ(name, "h200-mps");
  const GemmRates ag = gemmRates(tuner, problem(Op::kAllGather, 16384, 1024, 8192, 8), true);
  // Read through the tuner: the profile's own figures, and estimates within a few percent of
  // the ones test_gemm_rule.cc feeds by hand (a refit moves them a little).
  EXPECT_EQ(ag.launchUs, tuner.variant().launchUs);
  EXPECT_NEAR(ag.launchUs, 10.34, 0.3);
  EXPECT_EQ(ag.copyGBps, tuner.copyGBps());
  EXPECT_NEAR(ag.copyGBps, 255.6, 5);
  EXPECT_NEAR(ag.memGBps, 2 * ag.copyGBps, 1e-9);
  EXPECT_NEAR(ag.gemmTflops, ag.memGBps * kGemmRidgeFlopsPerByte * 1e-3, 1e-9);
  EXPECT_NEAR(ag.syncUs, 14.27, 0.3);
  EXPECT_NEAR(ag.collFixedUs, 15.82, 0.3);
  EXPECT_NEAR(ag.collGBps, 399.0, 2.0);
  EXPECT_TRUE(ag.barrier);
  const GemmRates rs = gemmRates(tuner, problem(Op::kReduceScatter, 16384, 8192, 1024, 8), false);
  EXPECT_NEAR(rs.collFixedUs, 15.82, 0.3);
  EXPECT_NEAR(rs.collGBps, 463.5, 2.0);
  EXPECT_FALSE(rs.barrier);
  // A size class's rates are the same for every size in it (the context caches them by class).
  const Problem a = problem(Op::kAllGather, 16384, 1024, 8192, 8);
  Problem b = a;
  b.m = 16383;
  ASSERT_EQ(rateClass(collectiveBytes(a)), rateClass(collectiveBytes(b)));
  EXPECT_EQ(gemmRates(tuner, a, true).collGBps, gemmRates(tuner, b, true).collGBps);
  EXPECT_EQ(rateClassBytes(rateClass(collectiveBytes(a))),
            collectiveBytes(a));  // 256 MiB: a class's end
}

// Sensible at any rank count: small M stays unfused (fixed costs and, for the per-rank
// all-gather, a read of W per peer dominate), the largest M fuses the all-gather of every layer
// (the collective's bytes dominate), a layer once fused stays fused as M grows, and the
// reduce-scatter never fuses (its fused form moves the same bytes and trades the collective's
// fixed cost for two waits and two launches).
TEST(GemmRates, SensibleAtEveryRankCount) {
  for (int ranks : {2, 3, 4, 8, 16}) {
    const std::unique_ptr<Tuner> owned = tunerFor(mpsGpu("H200", ranks));
    const Tuner& tuner = *owned;
    int fusedCells = 0;
    for (const Layer& l : kLayers)
      for (Op op : {Op::kAllGather, Op::kReduceScatter}) {
        bool fusedBelow = false;
        for (int64_t m : kMs) {
          SCOPED_TRACE(testing::Message()
                       << "K = " << ranks << (op == Op::kAllGather ? " ag " : " rs ") << l.name
                       << " M = " << m);
          const Problem p = layerProblem(l, op, m, ranks);
          const GemmRates r = gemmRates(tuner, p, true);
          ASSERT_TRUE(r.valid());
          const bool fused = autoFuses(p, r);
          fusedCells += fused ? 1 : 0;
          if (m <= 256 || op == Op::kReduceScatter) {
            EXPECT_FALSE(fused);
          }
          if (op == Op::kAllGather && m == 65536) {
            EXPECT_TRUE(fused);
          }
          if (fusedBelow) {
            EXPECT_TRUE(fused) << "fused at a smaller M";
          }
          fusedBelow = fusedBelow || fused;
        }
      }
    EXPECT_GE(fusedCells, 10) << "K = " << ranks;
  }
}

// A GPU with no shipped profile takes the topology's link figures (defaultProfile): the rates are
// still complete, and the rule answers as on the H200 where the shapes are far from the line.
TEST(GemmRates, NoShippedProfile) {
  std::string name;
  const std::unique_ptr<Tuner> owned = tunerFor(mpsGpu("H100", 8), &name);
  const Tuner& tuner = *owned;
  EXPECT_NE(name, "h200-mps");
  const Problem small = problem(Op::kAllGather, 64, 1024, 8192, 8);
  const Problem large = problem(Op::kAllGather, 65536, 896, 8192, 8);
  const GemmRates r = gemmRates(tuner, large, true);
  ASSERT_TRUE(r.valid());
  EXPECT_GT(r.copyGBps, 0);
  EXPECT_FALSE(autoFuses(small, gemmRates(tuner, small, true)));
  EXPECT_TRUE(autoFuses(large, r));
}

// An MI300X in CPX mode (eight partitions with their own compute units: no barrier), its
// shipped projection: the same shape of answers.
TEST(GemmRates, Mi300xCpx) {
  std::string name;
  const std::unique_ptr<Tuner> owned = tunerFor(oneGpu("MI300X", "CPX", 8), &name);
  const Tuner& tuner = *owned;
  EXPECT_EQ(name, "mi300x-cpx");
  for (const Layer& l : kLayers) {
    SCOPED_TRACE(l.name);
    const Problem small = layerProblem(l, Op::kAllGather, 16, 8);
    const Problem large = layerProblem(l, Op::kAllGather, 65536, 8);
    EXPECT_FALSE(autoFuses(small, gemmRates(tuner, small, false)));
    EXPECT_TRUE(autoFuses(large, gemmRates(tuner, large, false)));
    const Problem rs = layerProblem(l, Op::kReduceScatter, 65536, 8);
    EXPECT_FALSE(autoFuses(rs, gemmRates(tuner, rs, false)));
  }
}

}  // namespace
}  // namespace ssc::gemm
