// SPDX-License-Identifier: MIT
// The fault cases of gpu_gemm_test (gpu_gemm_faults.cc).
#pragma once

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"

// --missing-rank (run with a small STARSCREAM_TIMEOUT): the last rank skips one
// SSC_GEMM_COPY_ENGINE all-gather that its peers make; the context's watchdog must release the
// peers' stream waits after STARSCREAM_TIMEOUT and the next call fail with sscTimeout naming the
// missing rank. Returns the failures of this rank (`rank` of `nranks`, MPI_COMM_WORLD's ranks).
int runMissingRank(sscComm_t comm, hipStream_t stream, int rank, int nranks);

// Calls under stream capture: what may be captured runs, what may not is refused with a message
// saying so. Returns the failures of this rank.
int runCaptureChecks(sscComm_t comm, hipStream_t stream, int rank, int nranks);
