// Start-up and end of a GoogleTest program run under mpirun (tests/integration).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

namespace ssc::test {

// Starts MPI with MPI_THREAD_MULTIPLE (communicators that span nodes run Starscream's network
// proxy thread, which calls MPI) and GoogleTest; only rank 0 prints GoogleTest's report.
inline void mpiGtestInit(int* argc, char*** argv, int* rank, int* nranks) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(argc, *argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, nranks);
  if (*rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
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
