/* SPDX-License-Identifier: MIT */
/*
 * Creating a Starscream communicator from an MPI communicator, for programs launched with mpirun.
 * Header-only, so libstarscream itself does not depend on MPI: include it after <mpi.h>.
 */
#ifndef STARSCREAM_STARSCREAM_MPI_H_
#define STARSCREAM_STARSCREAM_MPI_H_

#include <mpi.h>

#include "starscream/starscream.h"

/**
 * Collective over mpiComm: rank 0 creates the unique id, MPI broadcasts it, and every process
 * joins as its MPI rank. Returns sscSystemError if an MPI call fails.
 */
static inline sscResult_t sscCommInitMpi(MPI_Comm mpiComm, sscComm_t* comm) {
  int rank = 0, size = 0;
  if (MPI_Comm_rank(mpiComm, &rank) != MPI_SUCCESS || MPI_Comm_size(mpiComm, &size) != MPI_SUCCESS)
    return sscSystemError;
  sscUniqueId id;
  sscResult_t res = sscSuccess;
  if (rank == 0) res = sscGetUniqueId(&id);
  /* Everyone must learn whether the root failed, or the others would wait for it forever. */
  int rootOk = res == sscSuccess;
  if (MPI_Bcast(&rootOk, 1, MPI_INT, 0, mpiComm) != MPI_SUCCESS) return sscSystemError;
  if (!rootOk) return rank == 0 ? res : sscRemoteError;
  if (MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, mpiComm) != MPI_SUCCESS) return sscSystemError;
  return sscCommInitRank(comm, size, id, rank);
}

#endif /* STARSCREAM_STARSCREAM_MPI_H_ */
