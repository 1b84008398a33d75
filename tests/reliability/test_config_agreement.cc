// SPDX-License-Identifier: MIT
// Settings that change what a rank sends or expects must be the same on every rank, and init
// checks it: one rank set differently fails init on every rank within a second, naming the
// variable, the values and the ranks, where before a differing STARSCREAM_ALGO hung the first
// collective until STARSCREAM_TIMEOUT and other differences failed later under a misleading
// name ("tuner profile differs", "bootstrap allGather mismatch"). Equivalent spellings of one
// setting agree. Ranks are forked processes on the host backend (fault_harness.h), each with its
// own environment; tests/reliability/test_config_agreement_mpi.cc does the same under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tests/reliability/fault_harness.h"

namespace ssc::testing {
namespace {

constexpr int kRanks = 3;
// Every rank fails this soon after the job started (a hang would take STARSCREAM_TIMEOUT, 30 s).
constexpr double kFailSeconds = 1.0;

using Env = std::vector<std::pair<std::string, std::string>>;

struct Case {
  const char* name;                   // the test's name
  int rank;                           // the rank whose environment differs
  Env differs;                        // set on that rank only
  std::vector<std::string> expected;  // in every rank's message
};

std::string topologyFile(const char* name) {
  return std::string(SSC_REPO_DIR) + "/tools/topologies/" + name;
}

std::vector<Case> cases() {
  return {
      // Before: passed init, then the first all-reduce waited until STARSCREAM_TIMEOUT.
      {"Algo",
       1,
       {{"STARSCREAM_ALGO", "ring"}},
       {"STARSCREAM_ALGO is unset on ranks 0, 2 but 'ring' on rank 1"}},
      {"AlgoForOneCollective",
       2,
       {{"STARSCREAM_ALGO", "allreduce=ring,allgather=direct"}},
       {"STARSCREAM_ALGO is unset on ranks 0-1 but 'allreduce=ring,allgather=direct' on rank 2"}},
      // Before: "tuner profile differs between rank 0 and rank 1 (set STARSCREAM_TUNER_PROFILE
      // alike on every rank)".
      {"HostSlots",
       1,
       {{"STARSCREAM_HOST_SLOTS", "16"}},
       {"STARSCREAM_HOST_SLOTS is unset (default 8) on ranks 0, 2 but '16' on rank 1"}},
      {"HostSlotBytes",
       1,
       {{"STARSCREAM_HOST_SLOT_BYTES", "128K"}},
       {"STARSCREAM_HOST_SLOT_BYTES is unset (default 64K) on ranks 0, 2 but '128K' on rank 1"}},
      {"HostChannels",
       0,
       {{"STARSCREAM_HOST_CHANNELS", "1"}},
       {"STARSCREAM_HOST_CHANNELS is '1' on rank 0 but unset (default 2) on ranks 1-2"}},
      // Before: "bootstrap allGather mismatch: ... bytes per rank; ... 8 bytes".
      {"StagingBytes",
       1,
       {{"STARSCREAM_STAGING_BYTES", "256K"}},
       {"STARSCREAM_STAGING_BYTES is unset on ranks 0, 2 but '256K' on rank 1"}},
      {"ZeroCopyMinBytes",
       1,
       {{"STARSCREAM_ZERO_COPY_MIN_BYTES", "-1"}},
       {"STARSCREAM_ZERO_COPY_MIN_BYTES is unset (default 0) on ranks 0, 2 but '-1' on rank 1"}},
      {"TopologyFile",
       1,
       {{"STARSCREAM_TOPO_FILE", topologyFile("h200-mps-3.json")}},
       {"STARSCREAM_TOPO_FILE is unset (discovery) on ranks 0, 2 but '",
        "h200-mps-3.json' (topology 'h200-mps-3' #"}},
      {"Check",
       2,
       {{"STARSCREAM_CHECK", "1"}},
       {"STARSCREAM_CHECK is unset (default 0) on ranks 0-1 but '1' on rank 2"}},
      // The calibration mode: "refresh" would time a sweep that the other ranks never join.
      {"TuneMode",
       1,
       {{"STARSCREAM_TUNE", "refresh"}},
       {"STARSCREAM_TUNE is unset (default auto) on ranks 0, 2 but 'refresh' on rank 1"}},
      // Online tuning: a rank that tries candidates runs other algorithms than its peers.
      {"TuneOnline",
       2,
       {{"STARSCREAM_TUNE_ONLINE", "3"}},
       {"STARSCREAM_TUNE_ONLINE is unset (default 0) on ranks 0-1 but '3' on rank 2"}},
      {"TunerProfile",
       1,
       {{"STARSCREAM_TUNER_PROFILE", std::string(SSC_REPO_DIR) + "/tuner/profiles/h200-mps.json"}},
       {"STARSCREAM_TUNER_PROFILE is unset on ranks 0, 2 but '", "h200-mps.json' (#"}},
      {"ZeroCopyGrid",
       1,
       {{"STARSCREAM_ZERO_COPY_GRID", "wide"}},
       {"STARSCREAM_ZERO_COPY_GRID is unset (default auto) on ranks 0, 2 but 'wide' on rank 1"}},
      // Read by the ops layer: a rank with the GEMM ops' arrival barrier on waits in a collective
      // kernel its peers never launch; the prefill split decides who maps KV pools (collective).
      {"GemmBarrier",
       1,
       {{"STARSCREAM_GEMM_BARRIER", "on"}},
       {"STARSCREAM_GEMM_BARRIER is unset (default auto) on ranks 0, 2 but 'on' on rank 1"}},
      {"AttnPrefill",
       2,
       {{"STARSCREAM_ATTN_PREFILL", "partials"}},
       {"STARSCREAM_ATTN_PREFILL is unset (default auto) on ranks 0-1 but 'partials' on rank 2"}},
      // Several at once: each is named.
      {"SeveralSettings",
       1,
       {{"STARSCREAM_HOST_SLOTS", "4"}, {"STARSCREAM_ALGO", "direct"}},
       {"STARSCREAM_ALGO is unset on ranks 0, 2 but 'direct' on rank 1; ",
        "STARSCREAM_HOST_SLOTS is unset (default 8) on ranks 0, 2 but '4' on rank 1"}},
  };
}

// The test's name in ctest's list, instead of the parameter's bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ConfigAgreement : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "30", 1);
    for (const char* name :
         {"STARSCREAM_TOPO_FILE", "STARSCREAM_ALGO", "STARSCREAM_HOST_SLOTS",
          "STARSCREAM_HOST_SLOT_BYTES", "STARSCREAM_HOST_CHANNELS", "STARSCREAM_STAGING_BYTES",
          "STARSCREAM_ZERO_COPY_MIN_BYTES", "STARSCREAM_CHECK", "STARSCREAM_TUNE",
          "STARSCREAM_TUNE_ONLINE", "STARSCREAM_TUNER_PROFILE", "STARSCREAM_ZERO_COPY_GRID",
          "STARSCREAM_GEMM_BARRIER", "STARSCREAM_ATTN_PREFILL"})
      ::unsetenv(name);
  }

  // Runs init (and, when it succeeds, one all-reduce) on kRanks forked ranks, `env[r]` set on
  // rank r; returns the reports and how long after the start each rank reported.
  static std::vector<RankReport> run(const std::vector<Env>& env, double* slowest) {
    const double start = monotonicSeconds();
    FaultJob job(kRanks, [&env](const RankContext& ctx) {
      for (const auto& [name, value] : env[static_cast<size_t>(ctx.rank())])
        ::setenv(name.c_str(), value.c_str(), 1);
      sscComm_t comm = nullptr;
      sscResult_t r = sscCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
      if (r != sscSuccess) return ctx.report(r, nullptr);
      std::vector<float> buf(4096, static_cast<float>(ctx.rank() + 1));
      r = sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
      if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
      if (r == sscSuccess && buf.back() != kRanks * (kRanks + 1) / 2.0f) r = sscInternalError;
      ctx.report(r, comm);
      (void)sscCommDestroy(comm);
    });
    std::vector<RankReport> reports = job.finish(60);
    *slowest = 0;
    for (const RankReport& rep : reports)
      if (rep.reported) *slowest = std::max(*slowest, rep.seconds - start);
    return reports;
  }
};

TEST_P(ConfigAgreement, OneRankSetDifferentlyFailsEveryRankAtInit) {
  const Case& c = GetParam();
  std::vector<Env> env(kRanks);
  env[static_cast<size_t>(c.rank)] = c.differs;
  double slowest = 0;
  const std::vector<RankReport> reports = run(env, &slowest);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankReport& rep = reports[static_cast<size_t>(r)];
    ASSERT_TRUE(rep.reported) << "exit status " << rep.exitStatus;
    EXPECT_EQ(rep.result, sscInvalidUsage) << rep.message;
    EXPECT_NE(rep.message.find("the ranks' settings differ"), std::string::npos) << rep.message;
    for (const std::string& part : c.expected)
      EXPECT_NE(rep.message.find(part), std::string::npos)
          << "missing: " << part << "\nin: " << rep.message;
  }
  EXPECT_LT(slowest, kFailSeconds);
  std::printf("every rank failed within %.0f ms: %s\n", slowest * 1e3, reports[0].message.c_str());
}

INSTANTIATE_TEST_SUITE_P(Settings, ConfigAgreement, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

// Different spellings of the same setting agree: the comparison is on what the value means.
TEST_F(ConfigAgreement, EquivalentSpellingsAgree) {
  std::vector<Env> env(kRanks);
  env[0] = {{"STARSCREAM_ALGO", "allreduce=ring,allgather=direct"},
            {"STARSCREAM_HOST_SLOT_BYTES", "64K"},
            {"STARSCREAM_TUNE", "auto"},
            {"STARSCREAM_GEMM_BARRIER", "auto"}};
  env[1] = {{"STARSCREAM_ALGO", "allgather=direct,allreduce=flat_ring"},
            {"STARSCREAM_HOST_SLOT_BYTES", "65536"},
            {"STARSCREAM_HOST_SLOTS", "8"}};
  env[2] = {{"STARSCREAM_ALGO", "AllGather=direct,allreduce=RING"},
            {"STARSCREAM_HOST_SLOT_BYTES", "65500"},
            {"STARSCREAM_ZERO_COPY_MIN_BYTES", "0"}};
  double slowest = 0;
  const std::vector<RankReport> reports = run(env, &slowest);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(reports[static_cast<size_t>(r)].reported);
    EXPECT_EQ(reports[static_cast<size_t>(r)].result, sscSuccess)
        << reports[static_cast<size_t>(r)].message;
  }
}

// The same topology file on every rank (a common case the check must not disturb).
TEST_F(ConfigAgreement, TheSameSettingsOnEveryRankRun) {
  const Env same = {{"STARSCREAM_TOPO_FILE", topologyFile("h200-mps-3.json")},
                    {"STARSCREAM_HOST_SLOTS", "4"},
                    {"STARSCREAM_ALGO", "ring"}};
  double slowest = 0;
  const std::vector<RankReport> reports = run(std::vector<Env>(kRanks, same), &slowest);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(reports[static_cast<size_t>(r)].reported);
    EXPECT_EQ(reports[static_cast<size_t>(r)].result, sscSuccess)
        << reports[static_cast<size_t>(r)].message;
  }
}

}  // namespace
}  // namespace ssc::testing
