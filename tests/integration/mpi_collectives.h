// SPDX-License-Identifier: MIT
// What the two files of test_mpi_collectives share: this process's communicator, stream and
// rank, made once in test_mpi_collectives.cc's main() and used by every case of both files.
#pragma once

#include "starscream/starscream.h"

namespace ssc::test {

extern sscComm_t g_comm;
extern sscStream_t g_stream;
extern int g_rank, g_n;

// The algorithms a caller can force, and the reduction ops (sscNumOps stands for PreMulSum).
inline constexpr const char* kAlgos[] = {"ring", "bidir_ring", "direct", "hierarchical"};
inline constexpr sscRedOp_t kOps[] = {sscSum, sscProd, sscMax, sscMin, sscAvg, sscNumOps};

// Sum over ranks of `local` (MPI_COMM_WORLD).
long long allSum(long long local);
// Forces the communicator's algorithm for every collective ("" gives the choice back to the tuner).
void forceAlgo(const char* algo);

}  // namespace ssc::test
