// SPDX-License-Identifier: MIT
// Start-up and end of a GoogleTest program run under mpirun (tests/integration).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace ssc::test {

// What a rank other than 0 prints: its failures only, each naming the rank (rank 0 prints
// GoogleTest's whole report; eight copies of it would bury the one line that matters).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (t.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, t.test_suite_name(), t.name());
  }

 private:
  int rank_;
};

// Starts MPI with MPI_THREAD_MULTIPLE (communicators that span nodes run Starscream's network
// proxy thread, which calls MPI) and GoogleTest; rank 0 prints GoogleTest's report, the other
// ranks their failures (RankFailurePrinter).
inline void mpiGtestInit(int* argc, char*** argv, int* rank, int* nranks) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(argc, *argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, nranks);
  if (*rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(*rank));
  }
}

// Ends MPI; any rank's failure (rc != 0) fails the run. Returns the exit code.
inline int mpiGtestFinish(int rc) {
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace ssc::test
