// SPDX-License-Identifier: MIT
// ag_gemm_perf: sscAllGatherGemm (each rank an N-slice of the layer; X [M][K] all-gathered).
// Flags and output: docs/perf.md.
#include "perf/gemm_perf.h"

int main(int argc, char** argv) { return ssc::perf::gemmPerfMain(argc, argv, false); }
