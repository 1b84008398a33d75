// SPDX-License-Identifier: MIT
// The prefill cases of gpu_attention_test (gpu_attention_prefill.cc).
#pragma once

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream_ops.h"

// Runs every prefill case on comm (rank `rank` of `nranks`, MPI_COMM_WORLD's ranks), printing
// one PASS/FAIL line per case on rank 0; exchange is the cache's sscKvExchange_t for the cases
// that do not name one. Returns the number of failed cases (the same on every rank).
int runPrefillCases(sscComm_t comm, hipStream_t stream, int rank, int nranks,
                    sscKvExchange_t exchange);
