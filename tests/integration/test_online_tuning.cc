// SPDX-License-Identifier: MIT
// Online tuning (STARSCREAM_TUNE_ONLINE, src/comm/online_tuning.h) under mpirun on the host
// backend: while size classes try their candidates every result is right, every class decides,
// every rank decides alike, on plain and on registered buffers (zero-copy among the candidates);
// calls that do not try (forced algorithms) stay as forced; a rank that stops calling before a
// class decides makes the others fail with a timeout, not hang.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/comm/comm.h"
#include "src/comm/online_tuning.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/mpi_gtest.h"
#include "tuner/anchors.h"

namespace ssc::test {
namespace {

int g_rank = 0, g_n = 1;
constexpr int kTrials = 2;

class OnlineTuningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TUNE_ONLINE", std::to_string(kTrials).c_str(), 1);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    unsetenv("STARSCREAM_TUNE_ONLINE");
    unsetenv("STARSCREAM_ALGO");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  static sscComm_t init() {
    sscComm_t comm = nullptr;
    EXPECT_EQ(sscCommInitMpi(MPI_COMM_WORLD, &comm), sscSuccess) << sscGetLastError(nullptr);
    return comm;
  }
};

// Element i of rank r's input.
float inputOf(int r, size_t i) { return static_cast<float>((r + 1) * 3 + static_cast<int>(i % 7)); }

// One call of `coll` on `elems` floats per rank (per block for reduce-scatter and all-gather),
// checked against the reference; false on the first wrong element. `inBuf`, `outBuf`: the
// buffers to use (registered ones), else plain vectors of this call's own.
bool runChecked(sscComm_t comm, CollKind coll, size_t elems, float* inBuf = nullptr,
                float* outBuf = nullptr) {
  const size_t n = static_cast<size_t>(g_n);
  const int root = g_n - 1;
  const size_t inElems = coll == CollKind::kReduceScatter ? elems * n : elems;
  const size_t outElems = coll == CollKind::kAllGather ? elems * n : elems;
  std::vector<float> inVec(inBuf == nullptr ? inElems : 0),
      outVec(outBuf == nullptr ? outElems : 0);
  float* in = inBuf != nullptr ? inBuf : inVec.data();
  float* out = outBuf != nullptr ? outBuf : outVec.data();
  for (size_t i = 0; i < outElems; ++i) out[i] = -1;
  for (size_t i = 0; i < inElems; ++i) in[i] = inputOf(g_rank, i);
  sscResult_t r = sscSuccess;
  switch (coll) {
    case CollKind::kAllReduce:
      r = sscAllReduce(in, out, elems, sscFloat32, sscSum, comm, nullptr);
      break;
    case CollKind::kReduceScatter:
      r = sscReduceScatter(in, out, elems, sscFloat32, sscSum, comm, nullptr);
      break;
    case CollKind::kAllGather: r = sscAllGather(in, out, elems, sscFloat32, comm, nullptr); break;
    case CollKind::kBroadcast:
      r = sscBroadcast(in, out, elems, sscFloat32, root, comm, nullptr);
      break;
    default: ADD_FAILURE() << "no launcher"; return false;
  }
  EXPECT_EQ(r, sscSuccess) << sscGetLastError(comm);
  EXPECT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
  if (r != sscSuccess) return false;
  for (size_t i = 0; i < outElems; ++i) {
    float want = 0;
    if (coll == CollKind::kAllReduce || coll == CollKind::kReduceScatter) {
      const size_t at =
          coll == CollKind::kReduceScatter ? static_cast<size_t>(g_rank) * elems + i : i;
      for (int q = 0; q < g_n; ++q) want += inputOf(q, at);
    } else if (coll == CollKind::kAllGather) {
      want = inputOf(static_cast<int>(i / elems), i % elems);
    } else {
      want = inputOf(root, i);
    }
    if (out[i] != want) {
      ADD_FAILURE() << collName(coll) << " of " << elems << " floats: element " << i << " is "
                    << out[i] << ", want " << want;
      return false;
    }
  }
  return true;
}

// Every rank's classes, as text: (collective, size, candidates, decision).
std::string classesText(sscComm_t comm) {
  std::string text;
  for (const OnlineTuning::ClassView& c : comm->online->classes()) {
    text += fmt::format("{} {} B sym={} [", collName(c.coll), c.bytes, c.symmetric);
    for (const Choice& k : c.candidates) text += candidateName(k.algo, k.protocol) + " ";
    text += fmt::format("] decided={} measured={} winner={}\n", c.decided, c.measured, c.winner);
  }
  return text;
}

bool sameOnEveryRank(const std::string& text) {
  const uint64_t mine = std::hash<std::string>{}(text);
  std::vector<uint64_t> all(static_cast<size_t>(g_n));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (uint64_t h : all)
    if (h != mine) return false;
  return true;
}

TEST_F(OnlineTuningTest, EveryClassDecidesAlikeAndEveryResultIsRight) {
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  ASSERT_NE(comm->online, nullptr);
  const CollKind colls[] = {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                            CollKind::kBroadcast};
  // Odd sizes from 1 element up; calls enough for the candidates' trials and the deciding call,
  // in every round a class may need, and some after.
  const size_t sizes[] = {1, 255, 16383, 262143};
  const int calls = OnlineTuning::kMaxRounds * (3 * kTrials + 1) + 2;
  for (CollKind coll : colls)
    for (size_t elems : sizes)
      for (int k = 0; k < calls; ++k) ASSERT_TRUE(runChecked(comm, coll, elems)) << "call " << k;
  const std::vector<OnlineTuning::ClassView> classes = comm->online->classes();
  const std::string text = classesText(comm);
  EXPECT_EQ(classes.size(), std::size(colls) * std::size(sizes)) << text;
  size_t tried = 0, measured = 0;
  for (const OnlineTuning::ClassView& c : classes) {
    EXPECT_TRUE(c.decided) << text;
    EXPECT_LT(c.winner, c.candidates.size()) << text;
    if (c.candidates.size() > 1) ++tried;
    if (c.measured) ++measured;
  }
  // The topologies this runs on give several FIFO algorithms at the larger sizes; each call was
  // finished before the next (the results were read), so every trial was timed.
  EXPECT_GT(tried, 0u) << text;
  EXPECT_EQ(measured, tried) << text;
  EXPECT_TRUE(sameOnEveryRank(text)) << "rank " << g_rank << ":\n" << text;
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

// Registered buffers: the zero-copy algorithm is among what a class tries, beside the FIFO
// algorithms, and every trial's result is right.
TEST_F(OnlineTuningTest, RegisteredBuffersTryZeroCopyToo) {
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  constexpr size_t kElems = 262143;
  const size_t bytes = kElems * sizeof(float) * static_cast<size_t>(g_n);
  void *in = nullptr, *out = nullptr, *hin = nullptr, *hout = nullptr;
  ASSERT_EQ(sscMemAlloc(&in, bytes), sscSuccess);
  ASSERT_EQ(sscMemAlloc(&out, bytes), sscSuccess);
  ASSERT_EQ(sscCommRegister(comm, in, bytes, &hin), sscSuccess) << sscGetLastError(comm);
  ASSERT_EQ(sscCommRegister(comm, out, bytes, &hout), sscSuccess) << sscGetLastError(comm);
  for (CollKind coll : {CollKind::kAllReduce, CollKind::kAllGather})
    for (size_t elems : {size_t{1000}, kElems})
      for (int k = 0; k < 3 * kTrials + 2; ++k)
        ASSERT_TRUE(
            runChecked(comm, coll, elems, static_cast<float*>(in), static_cast<float*>(out)))
            << collName(coll) << " call " << k;
  const std::string text = classesText(comm);
  bool zeroCopyTried = false;
  for (const OnlineTuning::ClassView& c : comm->online->classes()) {
    EXPECT_TRUE(c.symmetric) << text;
    EXPECT_TRUE(c.decided) << text;
    for (const Choice& k : c.candidates)
      zeroCopyTried = zeroCopyTried || (k.algo == Algo::kSymmetric && c.candidates.size() > 1);
  }
  EXPECT_TRUE(zeroCopyTried) << text;
  EXPECT_TRUE(sameOnEveryRank(text)) << "rank " << g_rank << ":\n" << text;
  EXPECT_EQ(sscCommDeregister(comm, hin), sscSuccess);
  EXPECT_EQ(sscCommDeregister(comm, hout), sscSuccess);
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
  EXPECT_EQ(sscMemFree(in), sscSuccess);
  EXPECT_EQ(sscMemFree(out), sscSuccess);
}

// A forced algorithm is the user's word: its calls never try anything else.
TEST_F(OnlineTuningTest, ForcedCallsDoNotTry) {
  setenv("STARSCREAM_ALGO", "allreduce=ring", 1);
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  for (int k = 0; k < 3 * kTrials + 2; ++k)
    ASSERT_TRUE(runChecked(comm, CollKind::kAllReduce, 262143));
  for (const OnlineTuning::ClassView& c : comm->online->classes())
    EXPECT_NE(c.coll, CollKind::kAllReduce) << classesText(comm);
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

// The deciding call meets every rank; a rank that never makes it leaves the others with an error
// after STARSCREAM_TIMEOUT, not in a hang.
TEST_F(OnlineTuningTest, ARankThatStopsCallingFailsTheOthersInTime) {
  if (g_n < 2) GTEST_SKIP() << "needs two ranks";
  // No plain-buffer mapping: its per-call agreement would notice the missing rank first.
  setenv("STARSCREAM_ZERO_COPY_MIN_BYTES", "-1", 1);
  setenv("STARSCREAM_TIMEOUT", "3", 1);
  sscComm_t comm = init();
  setenv("STARSCREAM_TIMEOUT", "60", 1);
  unsetenv("STARSCREAM_ZERO_COPY_MIN_BYTES");
  ASSERT_NE(comm, nullptr);
  // The largest size's class has several candidates here (the test above checks that some class
  // does; find which one on this topology).
  constexpr size_t kElems = 262143;
  ASSERT_TRUE(runChecked(comm, CollKind::kAllReduce, kElems));
  const std::vector<OnlineTuning::ClassView> classes = comm->online->classes();
  ASSERT_EQ(classes.size(), 1u);
  const size_t trials = classes[0].candidates.size() * kTrials;
  if (trials < 2) {
    EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
    GTEST_SKIP() << "one candidate on this topology: nothing decides";
  }
  for (size_t k = 1; k < trials; ++k) ASSERT_TRUE(runChecked(comm, CollKind::kAllReduce, kElems));
  if (g_rank != g_n - 1) {
    std::vector<float> in(kElems, 1), out(kElems, 0);
    const sscResult_t r =
        sscAllReduce(in.data(), out.data(), kElems, sscFloat32, sscSum, comm, nullptr);
    EXPECT_EQ(r, sscTimeout) << sscGetLastError(comm);
    const std::string why = sscGetLastError(comm);
    EXPECT_NE(why.find("STARSCREAM_TUNE_ONLINE: allreduce"), std::string::npos) << why;
    EXPECT_NE(why.find("STARSCREAM_TIMEOUT=3 s"), std::string::npos) << why;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(sscCommAbort(comm), sscSuccess);
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  const int rc = RUN_ALL_TESTS();
  return ssc::test::mpiGtestFinish(rc);
}
