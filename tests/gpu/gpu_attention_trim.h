// SPDX-License-Identifier: MIT
// The sliding-window (trimmed) cases of gpu_attention_test (gpu_attention_trim.cc).
#pragma once

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream_ops.h"

// Runs the trimmed sliding-window decode loop for every interleave on comm (rank `rank` of
// `nranks`, MPI_COMM_WORLD's ranks), one PASS/FAIL line per case on rank 0, through the cache
// exchange `exchange` (sscKvExchange_t). Returns the number of failed cases (the same on every
// rank).
int runTrimCases(sscComm_t comm, hipStream_t stream, int rank, int nranks,
                 sscKvExchange_t exchange);
