// SPDX-License-Identifier: MIT
// The tuner's self-calibration (src/api/calibration.cc) end to end under mpirun, on the host
// backend, which is calibrated only when asked by name: a refresh times the sweep with every rank,
// every rank ends with the same calibrated profile and the cache file; a later init takes it from
// the cache; ranks whose caches disagree all keep the uncalibrated model (no hang, no failure);
// a corrupt file is ignored and rewritten; a non-blocking init calibrates in its own thread.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "src/comm/comm.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/mpi_gtest.h"
#include "tuner/model.h"

namespace ssc::test {
namespace {

namespace fs = std::filesystem;

int g_rank = 0, g_n = 1;
std::string g_dir;  // rank 0's temporary directory, shared by every rank (one host)

std::string profileName(sscComm_t comm) { return comm->tuner->profile().name; }

// Every rank's tuner fingerprint is the same.
bool sameEverywhere(sscComm_t comm) {
  const uint64_t mine = comm->tuner->fingerprint();
  std::vector<uint64_t> all(static_cast<size_t>(g_n));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (uint64_t f : all)
    if (f != mine) return false;
  return true;
}

// The communicator still computes: an all-reduce of the ranks' numbers.
void expectSum(sscComm_t comm) {
  std::vector<float> in(1000, static_cast<float>(g_rank + 1)), out(1000, -1);
  ASSERT_EQ(sscAllReduce(in.data(), out.data(), in.size(), sscFloat32, sscSum, comm, nullptr),
            sscSuccess)
      << sscGetLastError(comm);
  ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
  const float want = g_n * (g_n + 1) / 2.0f;
  EXPECT_EQ(out[0], want);
  EXPECT_EQ(out[999], want);
}

std::vector<std::string> cacheFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().string());
  return out;
}

class Calibration : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TUNE_CACHE", g_dir.c_str(), 1);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    unsetenv("STARSCREAM_TUNE");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  sscComm_t init() {
    sscComm_t comm = nullptr;
    EXPECT_EQ(sscCommInitMpi(MPI_COMM_WORLD, &comm), sscSuccess) << sscGetLastError(nullptr);
    return comm;
  }
};

TEST_F(Calibration, RefreshMeasuresCachesAndAgrees) {
  setenv("STARSCREAM_TUNE", "refresh", 1);
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(profileName(comm), "calibrated");
  EXPECT_TRUE(sameEverywhere(comm));
  const std::string origin = comm->tuner->profile().origin;
  EXPECT_EQ(origin.rfind(g_dir + "/", 0), 0u) << origin;
  EXPECT_TRUE(fs::exists(origin)) << origin;
  // The fit holds numbers for this partitioning, and the source says what was measured.
  ASSERT_EQ(comm->tuner->profile().variants.size(), 1u);
  EXPECT_NE(comm->tuner->profile().source.find("timed collectives"), std::string::npos);
  expectSum(comm);
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
  MPI_Barrier(MPI_COMM_WORLD);
  // Every rank wrote the same file: one file, no temporary left.
  if (g_rank == 0) EXPECT_EQ(cacheFiles(g_dir).size(), 1u);
}

TEST_F(Calibration, CachedInitReadsTheFile) {
  setenv("STARSCREAM_TUNE", "cached", 1);
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(profileName(comm), "calibrated");
  EXPECT_TRUE(sameEverywhere(comm));
  EXPECT_EQ(comm->tuner->profile().origin.rfind(g_dir + "/", 0), 0u);
  expectSum(comm);
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

TEST_F(Calibration, AutoOnTheHostBackendDoesNotMeasure) {
  setenv("STARSCREAM_TUNE", "auto", 1);
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(profileName(comm), "host");
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

// Rank 1 looks into an empty directory: the ranks' caches disagree, so none uses its own.
TEST_F(Calibration, DisagreeingCachesKeepTheUncalibratedModel) {
  if (g_n < 2) GTEST_SKIP() << "needs two ranks";
  const std::string empty = g_dir + "/empty-" + std::to_string(g_rank);
  if (g_rank == 1) setenv("STARSCREAM_TUNE_CACHE", empty.c_str(), 1);
  setenv("STARSCREAM_TUNE", "cached", 1);
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(profileName(comm), "host");
  EXPECT_TRUE(sameEverywhere(comm));
  expectSum(comm);
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

// A file cut short on disk: ignored (with a warning) and measured again over it.
TEST_F(Calibration, CorruptFileIsRemeasured) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0)
    for (const std::string& f : cacheFiles(g_dir))
      if (fs::is_regular_file(f))
        std::ofstream(f, std::ios::trunc) << "{\"format\": \"starscream-cal";
  MPI_Barrier(MPI_COMM_WORLD);
  setenv("STARSCREAM_TUNE", "cached", 1);
  sscComm_t comm = init();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(profileName(comm), "host") << "a corrupt file must not be used";
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
  MPI_Barrier(MPI_COMM_WORLD);
  setenv("STARSCREAM_TUNE", "refresh", 1);
  comm = init();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(profileName(comm), "calibrated");
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

// A non-blocking init calibrates in its init thread; the communicator says "in progress" until
// then, and works after.
TEST_F(Calibration, NonBlockingInitCalibrates) {
  setenv("STARSCREAM_TUNE", "refresh", 1);
  sscUniqueId id;
  if (g_rank == 0) ASSERT_EQ(sscGetUniqueId(&id), sscSuccess);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  sscConfig_t config = SSC_CONFIG_INITIALIZER;
  config.blocking = 0;
  sscComm_t comm = nullptr;
  const sscResult_t r = sscCommInitRankConfig(&comm, g_n, id, g_rank, &config);
  ASSERT_TRUE(r == sscSuccess || r == sscInProgress) << sscGetLastError(nullptr);
  sscResult_t state = sscInProgress;
  for (int i = 0; i < 6000 && state == sscInProgress; ++i) {
    ASSERT_EQ(sscCommGetAsyncError(comm, &state), sscSuccess);
    if (state == sscInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(state, sscSuccess) << sscGetLastError(comm);
  EXPECT_EQ(profileName(comm), "calibrated");
  EXPECT_TRUE(sameEverywhere(comm));
  expectSum(comm);
  EXPECT_EQ(sscCommDestroy(comm), sscSuccess);
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  std::string dir;
  if (ssc::test::g_rank == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ssc-calib-XXXXXX").string();
    dir = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  int len = static_cast<int>(dir.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  dir.resize(static_cast<size_t>(len));
  MPI_Bcast(dir.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  ssc::test::g_dir = dir;
  const int rc = dir.empty() ? 1 : RUN_ALL_TESTS();
  MPI_Barrier(MPI_COMM_WORLD);
  if (ssc::test::g_rank == 0 && !dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return ssc::test::mpiGtestFinish(rc);
}
