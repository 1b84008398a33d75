// SPDX-License-Identifier: MIT
// The fused GEMM-collective perf tools (gemm_rs_perf, ag_gemm_perf): the collective tools' flags,
// table and JSON records (docs/perf.md) for sscGemmReduceScatter and sscAllGatherGemm over the
// per-GPU TP8 layers (perf/common/gemm_args.cc), M swept as the collective tools sweep bytes.
#pragma once

namespace ssc::perf {

// The whole program (gemm_perf.cc); reduceScatter picks the op. Returns the exit code
// (common/launch.h's kExit*).
int gemmPerfMain(int argc, char** argv, bool reduceScatter);

}  // namespace ssc::perf
