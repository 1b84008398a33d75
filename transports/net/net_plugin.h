// SPDX-License-Identifier: MIT
// The ABI between libstarscream and a network plugin (libstarscream-net-mpi.so).
//
// The network transport lives in a plugin of its own, loaded only when a communicator spans
// nodes, so that libstarscream itself does not depend on MPI: a single-node program (or PyTorch
// through the NCCL shim) never loads libmpi. The shape follows NCCL's net plugins: the core
// drives non-blocking sends and receives of byte ranges between ranks of a plugin communicator,
// and polls them; everything else (FIFOs, flow control, staging) is the core's.
//
// Plain C types only: the plugin may be built by another compiler or another release.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Result of every call: 0 on success; otherwise a message has been written to `err`.
typedef struct {
  char text[256];
} sscNetError_t;

typedef struct sscNetV1 {
  const char* name;  // "mpi"
  // Makes the plugin usable from several threads of this process (the communicator's proxy
  // thread, plus the application's). Idempotent. Reports this process's identity in the job:
  // *jobRank is unique among the processes that can reach each other, *jobSize their number.
  int (*init)(int64_t* jobRank, int64_t* jobSize, sscNetError_t* err);
  // Collective over the processes of jobRanks[0..n): a communicator in which process
  // jobRanks[i] is rank i. `tag` is the same on all of them and distinguishes communicators
  // created concurrently.
  int (*commCreate)(const int64_t* jobRanks, int n, int tag, void** comm, sscNetError_t* err);
  // Non-blocking transfers of at most 2^31-1 bytes. Messages between a pair of ranks with one
  // tag arrive in the order they were sent. A receive may be larger than the message.
  int (*isend)(void* comm, int peer, int tag, const void* data, size_t bytes, void** request,
               sscNetError_t* err);
  int (*irecv)(void* comm, int peer, int tag, void* data, size_t bytes, void** request,
               sscNetError_t* err);
  // *done = 1 when the request finished (it is then freed; *bytes is what a receive got).
  int (*test)(void* request, int* done, size_t* bytes, sscNetError_t* err);
  // Abandons a request that has not finished (teardown): a receive is cancelled, a send is left
  // to complete in the background. The request is freed.
  int (*cancel)(void* request, sscNetError_t* err);
  // Frees the communicator; no request of it may be pending.
  int (*commDestroy)(void* comm, sscNetError_t* err);
} sscNetV1;

// The one symbol a plugin exports.
const sscNetV1* sscNetPluginV1(void);
typedef const sscNetV1* (*sscNetPluginV1Fn)(void);

#ifdef __cplusplus
}
#endif
