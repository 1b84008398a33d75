// SPDX-License-Identifier: MIT
// On one GPU shared by K ranks (MPS partitions), every rank must see one physical GPU with K
// partitions, ordered 0..K-1 and identical everywhere. Run under tools/emulate/partition-run.sh;
// with no GPU it says SKIPPED and succeeds (the host backend makes each rank its own GPU).
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  sscComm_t comm = nullptr;
  int failed = 0;
  if (sscCommInitMpi(MPI_COMM_WORLD, &comm) != sscSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", rank, sscGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int device = -1;
  sscCommDevice(comm, &device);
  int anyHost = device < 0, hostRanks = 0;
  MPI_Allreduce(&anyHost, &hostRanks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (hostRanks > 0) {
    if (rank == 0) std::printf("SKIPPED: host backend (no GPU): ranks are separate GPUs\n");
  } else {
    sscRankTopology_t t;
    sscCommGetRankTopology(comm, rank, &t);
    std::vector<int> all(6 * n);
    int mine[6] = {t.node, t.gpu, t.partition, t.partitionsOnGpu, t.gpus, t.nodes};
    MPI_Gather(mine, 6, MPI_INT, all.data(), 6, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("rank node gpu partition partitionsOnGpu gpus nodes\n");
      std::vector<int> seen(n, 0);
      for (int r = 0; r < n; ++r) {
        const int* v = &all[6 * r];
        std::printf("%4d %4d %3d %9d %15d %4d %5d\n", r, v[0], v[1], v[2], v[3], v[4], v[5]);
        if (v[1] != 0 || v[3] != n || v[4] != 1 || v[5] != 1 || v[2] < 0 || v[2] >= n)
          failed = 1;
        else
          seen[v[2]]++;
      }
      for (int p = 0; p < n; ++p) failed |= seen[p] != 1;
      std::printf("%s: %d MPS rank(s) %s one GPU with %d partitions\n",
                  failed ? "FAILED" : "PASSED", n, failed ? "do not form" : "form", n);
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  sscCommDestroy(comm);
  MPI_Finalize();
  return failed;
}
