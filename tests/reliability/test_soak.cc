// SPDX-License-Identifier: MIT
// Long runs stay bounded: 10^5 collectives and 10^3 communicator create/destroy cycles (through
// sscCommSplit) leave resident memory, open file descriptors and threads where they were after a
// warm-up. Each rank is its own process (one rank per process: the plain-buffer peer cache, the
// peer watch and the bootstrap all take their production paths).
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/reliability/fault_harness.h"

namespace ssc::testing {
namespace {

struct Usage {
  long rssKiB = 0;
  int fds = 0;
  int threads = 0;
};

Usage usageNow() {
  Usage u;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) u.rssKiB = std::atol(line.c_str() + 6);
    if (line.rfind("Threads:", 0) == 0) u.threads = std::atoi(line.c_str() + 8);
  }
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) u.fds += e->d_name[0] != '.';
    ::closedir(d);
    --u.fds;  // the directory stream itself
  }
  return u;
}

// Reports sscSuccess when growth stays within bounds, else sscInternalError with the figures.
void reportGrowth(const RankContext& ctx, const char* what, const Usage& before, const Usage& after,
                  long maxRssGrowthKiB) {
  const bool ok = after.fds <= before.fds && after.threads <= before.threads &&
                  after.rssKiB - before.rssKiB <= maxRssGrowthKiB;
  ctx.report(ok ? sscSuccess : sscInternalError,
             std::string(what) + ": RSS " + std::to_string(before.rssKiB) + " -> " +
                 std::to_string(after.rssKiB) + " KiB, fds " + std::to_string(before.fds) + " -> " +
                 std::to_string(after.fds) + ", threads " + std::to_string(before.threads) +
                 " -> " + std::to_string(after.threads));
}

class Soak : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "60", 1);
    ::unsetenv("STARSCREAM_TOPO_FILE");
  }
};

TEST_F(Soak, HundredThousandCollectivesKeepMemoryFdsAndThreadsBounded) {
  FaultJob job(2, [](const RankContext& ctx) {
    sscComm_t comm = nullptr;
    if (sscCommInitRank(&comm, 2, ctx.id(), ctx.rank()) != sscSuccess)
      return ctx.report(sscInternalError, nullptr);
    std::vector<float> in(8, 1.0f), out(8);
    auto batch = [&](int calls) {
      for (int i = 0; i < calls; ++i) {
        if (sscAllReduce(in.data(), out.data(), in.size(), sscFloat32, sscSum, comm, nullptr) !=
            sscSuccess)
          return false;
        if (i % 256 == 255 && sscStreamSynchronize(nullptr) != sscSuccess) return false;
      }
      return sscStreamSynchronize(nullptr) == sscSuccess && out[0] == 2.0f;
    };
    if (!batch(2000)) return ctx.report(sscInternalError, comm);
    const Usage before = usageNow();
    if (!batch(100000)) return ctx.report(sscInternalError, comm);
    reportGrowth(ctx, "1e5 all-reduces", before, usageNow(), 2048);
    (void)sscCommDestroy(comm);
  });
  for (const RankReport& rep : job.finish(600)) {
    ASSERT_TRUE(rep.reported);
    EXPECT_EQ(rep.result, sscSuccess) << rep.message;
    std::printf("%s\n", rep.message.c_str());
  }
}

TEST_F(Soak, ThousandCommunicatorCyclesKeepMemoryFdsAndThreadsBounded) {
  FaultJob job(2, [](const RankContext& ctx) {
    sscComm_t parent = nullptr;
    if (sscCommInitRank(&parent, 2, ctx.id(), ctx.rank()) != sscSuccess)
      return ctx.report(sscInternalError, nullptr);
    std::vector<float> buf(16, 1.0f);
    auto cycles = [&](int n) {
      for (int i = 0; i < n; ++i) {
        sscComm_t child = nullptr;
        if (sscCommSplit(parent, 0, ctx.rank(), &child, nullptr) != sscSuccess) return false;
        if (sscAllReduce(buf.data(), buf.data(), 1, sscFloat32, sscMax, child, nullptr) !=
                sscSuccess ||
            sscStreamSynchronize(nullptr) != sscSuccess || sscCommFinalize(child) != sscSuccess ||
            sscCommDestroy(child) != sscSuccess)
          return false;
      }
      return true;
    };
    if (!cycles(50)) return ctx.report(sscInternalError, parent);
    const Usage before = usageNow();
    if (!cycles(1000)) return ctx.report(sscInternalError, parent);
    // Bootstrap root threads are detached and end by themselves once their ranks joined: give the
    // last one a moment before counting threads.
    ::usleep(200 * 1000);
    reportGrowth(ctx, "1e3 communicator cycles", before, usageNow(), 4096);
    (void)sscCommDestroy(parent);
  });
  for (const RankReport& rep : job.finish(900)) {
    ASSERT_TRUE(rep.reported);
    EXPECT_EQ(rep.result, sscSuccess) << rep.message;
    std::printf("%s\n", rep.message.c_str());
  }
}

}  // namespace
}  // namespace ssc::testing
