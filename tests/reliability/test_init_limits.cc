// SPDX-License-Identifier: MIT
// Limits of the machine and inputs past any sensible size: a clean error naming the cause, never
// an abort, an overcommit surprise or a long wait. sscCommInitAll whose threads cannot all start
// (a thread or memory limit), registrations that are not buffers, 64 TiB of host memory, calls
// on a finalized communicator, and a topology file far past the size of any machine's.
// Host backend; ranks are threads of the test, or a forked child where a limit is set.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "src/topology/topology.h"
#include "tests/reliability/fault_harness.h"

namespace ssc::testing {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class InitLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "30", 1);
    ::unsetenv("STARSCREAM_TOPO_FILE");
  }
  void TearDown() override { commFailThreadStartsAfter(-1); }

  // n ranks in this process (sscCommInitAll), checked to work.
  std::vector<sscComm_t> initAll(int n) {
    std::vector<sscComm_t> comms(static_cast<size_t>(n), nullptr);
    EXPECT_EQ(sscCommInitAll(comms.data(), n, nullptr), sscSuccess) << sscGetLastError(nullptr);
    return comms;
  }
  static void destroyAll(const std::vector<sscComm_t>& comms) {
    for (sscComm_t c : comms) EXPECT_EQ(sscCommDestroy(c), sscSuccess);
  }
};

// The thread of rank 5 of 16 cannot start (as under RLIMIT_NPROC): the 5 started are aborted and
// joined, and the call returns sscSystemError naming the thread instead of std::terminate
// (a vector of running std::threads destroyed during unwinding).
TEST_F(InitLimits, InitAllWhoseThreadCannotStartFailsCleanly) {
  commFailThreadStartsAfter(5);
  std::vector<sscComm_t> comms(16, reinterpret_cast<sscComm_t>(0x1));
  const double t0 = monotonicSeconds();
  EXPECT_EQ(sscCommInitAll(comms.data(), 16, nullptr), sscSystemError);
  const double took = monotonicSeconds() - t0;
  const std::string why = sscGetLastError(nullptr);
  std::printf("%.0f ms: %s\n", took * 1e3, why.c_str());
  EXPECT_TRUE(contains(why, "sscCommInitAll: cannot start thread 6 of 16")) << why;
  EXPECT_TRUE(contains(why, "5 started were aborted")) << why;
  EXPECT_LT(took, 5.0) << "the started ranks waited for the missing one";
  for (sscComm_t c : comms) EXPECT_EQ(c, nullptr);
  // Nothing left behind that a later init trips over.
  destroyAll(initAll(4));
}

// The same under a real limit: thousands of ranks in a process whose address space is capped a
// little above what it uses, so thread stacks run out after a few dozen (root is exempt from
// RLIMIT_NPROC, not from RLIMIT_AS). In a forked child: the limit must not reach the test.
TEST_F(InitLimits, InitAllOfThousandsOfRanksUnderAMemoryLimitFailsCleanly) {
  if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer reserves the address space a limit caps";
  FaultJob job(1, [](const RankContext& ctx) {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) pages = 0;
      std::fclose(f);
    }
    const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                       (rlim_t{384} << 20);
    const rlimit limit{cap, cap};
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(4);
    std::vector<sscComm_t> comms(4096, nullptr);
    const sscResult_t r = sscCommInitAll(comms.data(), static_cast<int>(comms.size()), nullptr);
    ctx.report(r, nullptr);
    for (sscComm_t c : comms) (void)sscCommDestroy(c);
  });
  const RankReport rep = job.finish(120)[0];
  ASSERT_TRUE(rep.reported) << "no report: exit status " << rep.exitStatus
                            << " (134 = SIGABRT: std::terminate)";
  EXPECT_EQ(rep.exitStatus, 0);
  EXPECT_EQ(rep.result, sscSystemError) << rep.message;
  std::printf("%s\n", rep.message.c_str());
  EXPECT_TRUE(contains(rep.message, "cannot start thread") || contains(rep.message, "memory"))
      << rep.message;
}

// A non-blocking init whose thread cannot start: an error, and no communicator.
TEST_F(InitLimits, NonBlockingInitWhoseThreadCannotStartFailsCleanly) {
  sscUniqueId id;
  ASSERT_EQ(sscGetUniqueId(&id), sscSuccess);
  sscConfig_t config = SSC_CONFIG_INITIALIZER;
  config.blocking = 0;
  commFailThreadStartsAfter(0);
  sscComm_t comm = reinterpret_cast<sscComm_t>(0x1);
  EXPECT_EQ(sscCommInitRankConfig(&comm, 1, id, 0, &config), sscSystemError);
  EXPECT_EQ(comm, nullptr);
  EXPECT_TRUE(contains(sscGetLastError(nullptr), "cannot start the thread of a non-blocking init"))
      << sscGetLastError(nullptr);
}

TEST_F(InitLimits, RegisteringARangeThatIsNotABufferIsRefused) {
  std::vector<sscComm_t> comms = initAll(2);
  std::vector<char> buf(4096);
  void* handle = nullptr;
  EXPECT_EQ(sscCommRegister(comms[0], buf.data(), SIZE_MAX, &handle), sscInvalidArgument);
  EXPECT_TRUE(contains(sscGetLastError(nullptr), "larger than half of the address space"))
      << sscGetLastError(nullptr);
  void* nearTheEnd = reinterpret_cast<void*>(UINTPTR_MAX - 4095);
  EXPECT_EQ(sscCommRegister(comms[0], nearTheEnd, 8192, &handle), sscInvalidArgument);
  EXPECT_TRUE(contains(sscGetLastError(nullptr), "wraps around the end of the address space"))
      << sscGetLastError(nullptr);
  EXPECT_EQ(handle, nullptr);
  destroyAll(comms);
}

TEST_F(InitLimits, SixtyFourTebibytesOfHostMemoryIsACleanError) {
  void* p = reinterpret_cast<void*>(0x1);
  const size_t bytes = size_t{64} << 40;
  EXPECT_EQ(sscMemAlloc(&p, bytes), sscSystemError);
  EXPECT_EQ(p, nullptr);
  const std::string why = sscGetLastError(nullptr);
  EXPECT_TRUE(contains(why, "out of host memory: cannot allocate 70368744177664 bytes")) << why;
  // What fits still works.
  ASSERT_EQ(sscMemAlloc(&p, 1 << 20), sscSuccess) << sscGetLastError(nullptr);
  static_cast<char*>(p)[(1 << 20) - 1] = 1;
  EXPECT_EQ(sscMemFree(p), sscSuccess);
}

TEST_F(InitLimits, CallsAfterFinalizeAreRefused) {
  std::vector<sscComm_t> comms = initAll(2);
  for (sscComm_t c : comms) ASSERT_EQ(sscCommFinalize(c), sscSuccess) << sscGetLastError(c);
  std::vector<float> buf(64, 1.0f);
  EXPECT_EQ(sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comms[0], nullptr),
            sscInvalidUsage);
  EXPECT_TRUE(contains(sscGetLastError(nullptr), "sscAllReduce: communicator was finalized"))
      << sscGetLastError(nullptr);
  EXPECT_EQ(sscSend(buf.data(), buf.size(), sscFloat32, 1, comms[0], nullptr), sscInvalidUsage);
  void* handle = nullptr;
  EXPECT_EQ(sscCommRegister(comms[0], buf.data(), sizeof(float) * buf.size(), &handle),
            sscInvalidUsage);
  // Queries, a second finalize and destroy remain.
  int n = 0;
  EXPECT_EQ(sscCommCount(comms[0], &n), sscSuccess);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(sscCommFinalize(comms[0]), sscSuccess);
  destroyAll(comms);
}

// Past the cap a topology file is refused before it is read: this 33 MB file (a placement of 2.5
// million ranks) took 9.9 s per rank to parse and refuse.
TEST_F(InitLimits, AnOversizedTopologyFileIsRefusedBeforeItIsRead) {
  char dir[] = "/tmp/ssc-topo-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/huge.json";
  {
    std::ofstream out(path);
    out << R"({"format": "starscream-topology/1", "nodes": 1, "gpus_per_node": 1, )"
        << R"("partitions_per_gpu": 1, "placement": [)";
    const std::string entry = "[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0],\n";
    for (size_t written = 0; written < (33u << 20); written += entry.size()) out << entry;
    out << "[0, 0, 0]]}\n";
  }
  Topology topo;
  double t0 = monotonicSeconds();
  EXPECT_EQ(loadTopologyFile(path, 1, &topo), sscInvalidArgument);
  EXPECT_LT(monotonicSeconds() - t0, 0.5);
  std::string why = sscGetLastError(nullptr);
  EXPECT_TRUE(contains(why, "is too large for a topology file (at most 4194304 bytes, 4 MiB)"))
      << why;
  // Through init: every rank fails at once, naming the variable.
  ::setenv("STARSCREAM_TOPO_FILE", path.c_str(), 1);
  std::vector<sscComm_t> comms(2, nullptr);
  t0 = monotonicSeconds();
  EXPECT_EQ(sscCommInitAll(comms.data(), 2, nullptr), sscInvalidArgument);
  EXPECT_LT(monotonicSeconds() - t0, 2.0);
  why = sscGetLastError(nullptr);
  EXPECT_TRUE(contains(why, "STARSCREAM_TOPO_FILE: topology file")) << why;
  EXPECT_TRUE(contains(why, "too large")) << why;
  ::unsetenv("STARSCREAM_TOPO_FILE");
  ::unlink(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace ssc::testing
