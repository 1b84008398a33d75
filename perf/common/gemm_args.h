// SPDX-License-Identifier: MIT
// The GEMM-collective perf tools (gemm_rs_perf, ag_gemm_perf; perf/gemm_perf.cc): their command
// line is the collective tools' (args.h) with the sizes read as M, the rows of X (the tokens of a
// linear layer), plus -L (layers) and -V (variant); their layers are the per-GPU TP8 shapes of
// three models; their table and JSON records follow the collective tools' style. Pure: no MPI, no
// library calls, so tests/perf drives it alone.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perf/common/args.h"
#include "perf/common/report.h"
#include "starscream/starscream_ops.h"

namespace ssc::perf {

// One linear layer of a tensor-parallel (TP8) model as one GPU holds it: Y[M][N] = X[M][K] W^T.
// Column-parallel layers split N across GPUs, row-parallel ones K.
struct GemmLayer {
  const char* name;
  int64_t k, n;
  bool columnParallel;
};
// Llama-3-70B, Llama-3.1-405B and GPT-OSS-120B, also gemm_coll_perf's.
std::span<const GemmLayer> gemmLayers();
// -L: "" takes every layer, else a comma-separated list of substrings of which one must match.
bool layerWanted(std::string_view filter, std::string_view name);

// What -V asks for: an sscGemmVariant_t and, for the fused all-gather, the per-rank form.
struct GemmVariant {
  sscGemmVariant_t variant = sscGemmAuto;
  bool perRank = false;  // "fused_per_rank": args.chunks = nranks
  std::string name = "auto";
};
struct GemmFlags {
  std::string layers;   // -L
  GemmVariant variant;  // -V
};

// Takes -L/--layers and -V/--variant with their values (as "-L x", "-Lx", "--layers=x" or
// "--layers x") out of argv into *flags and copies every other argument, argv[0] first, into
// *rest for parseArgs. Returns "" or why a value is bad.
std::string splitGemmFlags(int argc, char* const argv[], GemmFlags* flags,
                           std::vector<char*>* rest);

// The tools' defaults where they differ from the collective tools': -b 16 -e 16384 -f 4 (M = 16
// .. 16384 by 4, the rows), -d bfloat16, -n 10, -w 3.
Options gemmDefaultOptions();
// "" or why the options cannot run (a datatype other than bfloat16, half or all); appends a
// "# -x has no effect" line to *warnings for each collective flag that means nothing here.
std::string checkGemmOptions(const Options& options, std::string* warnings);
// The types a run visits: -d all is bfloat16 then half.
std::vector<sscDataType_t> gemmTypes(const Options& options);

// One row of the table: the per-GPU problem (layer, M, N, K), this run's split, what ran.
struct GemmRow {
  std::string layer;
  int64_t m = 0, n = 0, k = 0;   // the per-GPU problem
  int64_t rankN = 0, rankK = 0;  // each rank's GEMM: N (all-gather: split) and K (reduce-scatter)
  const char* type = "";
  std::string variant;  // what ran: "unfused", "chunked x3", "fused x1", "fused x8"
  double timeUs = 0;
  double tflops = 0;  // 2 M N K over the time: the per-GPU problem's rate, all ranks together
  Bandwidth bw;       // of the collective's buffer (reduce-scatter: M x N, all-gather: M x K)
  bool checked = false;
  int64_t wrong = 0;
};
// The three header lines and one row, in the collective tools' layout (formatFloat widths).
std::string gemmTableHeader();
std::string gemmRowText(const GemmRow& row);
// "# nThread 1 nGpus 1 minRows .. maxRows .. step: ..(factor) warmup iters: .. iters: ..
// validation: .."
std::string gemmRunHeader(const Options& options, const GemmFlags& flags);
// One JSON object (no newline): the row, the run's identity and settings.
std::string gemmRowJson(const RunInfo& run, const Options& options, const GemmFlags& flags,
                        const GemmRow& row, const std::string& date);
std::string gemmUsage(std::string_view program);

// The collective's bytes of a row (reduce-scatter: the M x N partials; all-gather: the M x K
// inputs), whose algbw and busbw ((n-1)/n) the table shows, as reduce_scatter_perf and
// all_gather_perf would for that buffer.
Bandwidth gemmBandwidth(bool reduceScatter, int64_t m, int64_t n, int64_t k, size_t eltSize,
                        double seconds, int nranks);

}  // namespace ssc::perf
