// SPDX-License-Identifier: MIT
// The captured-decode cases of gpu_attention_test (gpu_attention_graph.cc).
#pragma once

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"

// Captures a decode into a CUDA/HIP graph and replays it while its sequences grow, for every
// interleave, full and sharded heads, and a trimmed window, on comm (rank `rank` of `nranks`,
// MPI_COMM_WORLD's ranks); one PASS/FAIL line per case on rank 0. Returns the number of failed
// cases (the same on every rank).
int runGraphCases(sscComm_t comm, hipStream_t stream, int rank, int nranks);
