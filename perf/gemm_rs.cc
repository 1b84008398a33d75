// SPDX-License-Identifier: MIT
// gemm_rs_perf: sscGemmReduceScatter (each rank a K-slice of the layer; partials [M][N]
// reduce-scattered). Flags and output: docs/perf.md.
#include "perf/gemm_perf.h"

int main(int argc, char** argv) { return ssc::perf::gemmPerfMain(argc, argv, true); }
