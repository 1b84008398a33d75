// SPDX-License-Identifier: MIT
#include "perf/common/gemm_args.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>

#include <nlohmann/json.hpp>

#include "perf/common/datatype.h"
#include "starscream/starscream_ops.h"

namespace ssc::perf {
namespace {

constexpr GemmLayer kLayers[] = {
    {"llama70b.qkv", 8192, 1280, true},        {"llama70b.o", 1024, 8192, false},
    {"llama70b.gate_up", 8192, 7168, true},    {"llama70b.down", 3584, 8192, false},
    {"llama405b.qkv", 16384, 2304, true},      {"llama405b.o", 2048, 16384, false},
    {"llama405b.gate_up", 16384, 13312, true}, {"llama405b.down", 6656, 16384, false},
    {"gptoss120b.qkv", 2880, 640, true},       {"gptoss120b.o", 512, 2880, false},
};

struct VariantName {
  const char* name;
  sscGemmVariant_t variant;
  bool perRank;
};
constexpr VariantName kVariants[] = {
    {"auto", sscGemmAuto, false},           {"unfused", sscGemmUnfused, false},
    {"chunked", sscGemmChunked, false},     {"fused", sscGemmFused, false},
    {"fused_per_rank", sscGemmFused, true},
};

std::string setVariant(std::string_view text, GemmVariant* out) {
  for (const VariantName& v : kVariants) {
    if (text == v.name) {
      out->variant = v.variant;
      out->perRank = v.perRank;
      out->name = v.name;
      return "";
    }
  }
  return "-V: unknown variant '" + std::string(text) +
         "' (auto, unfused, chunked, fused, fused_per_rank)";
}

}  // namespace

std::span<const GemmLayer> gemmLayers() { return kLayers; }

bool layerWanted(std::string_view filter, std::string_view name) {
  if (filter.empty()) return true;
  size_t pos = 0;
  while (pos <= filter.size()) {
    const size_t comma = filter.find(',', pos);
    const std::string_view part =
        filter.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!part.empty() && name.find(part) != std::string_view::npos) return true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

std::string splitGemmFlags(int argc, char* const argv[], GemmFlags* flags,
                           std::vector<char*>* rest) {
  rest->clear();
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    // Which of ours, and where its value is: the next argument, or attached.
    char which = 0;
    std::string_view value;
    bool attached = false;
    for (auto [shortFlag, longFlag, c] :
         {std::tuple{"-L", "--layers", 'L'}, std::tuple{"-V", "--variant", 'V'}}) {
      const std::string_view s = shortFlag, l = longFlag;
      if (i == 0) break;
      if (a == s || a == l) {
        which = c;
      } else if (a.size() > 2 && a.substr(0, 2) == s) {
        which = c, value = a.substr(2), attached = true;
      } else if (a.size() > l.size() + 1 && a.substr(0, l.size() + 1) == std::string(l) + "=") {
        which = c, value = a.substr(l.size() + 1), attached = true;
      }
      if (which != 0) break;
    }
    if (which == 0) {
      rest->push_back(argv[i]);
      continue;
    }
    if (!attached) {
      if (i + 1 >= argc) return std::string("-") + which + ": missing value";
      value = argv[++i];
    }
    if (which == 'L') {
      flags->layers = std::string(value);
    } else {
      const std::string why = setVariant(value, &flags->variant);
      if (!why.empty()) return why;
    }
  }
  return "";
}

Options gemmDefaultOptions() {
  Options o;
  o.minBytes = 16;
  o.maxBytes = 16384;
  o.stepFactor = 4;
  o.type = sscBfloat16;
  o.iters = 10;
  o.warmupIters = 3;
  return o;
}

std::string checkGemmOptions(const Options& o, std::string* warnings) {
  if (o.type && *o.type != sscBfloat16 && *o.type != sscFloat16)
    return std::string("-d: the GEMM ops take bfloat16 or half (or all: both), not ") +
           typeName(*o.type);
  const Options d;
  const auto warn = [&](bool differs, const char* flag) {
    if (differs)
      *warnings += std::string("# ") + flag + " has no effect on the GEMM tools; ignored\n";
  };
  warn(o.aggIters != d.aggIters, "-m (agg iters)");
  warn(o.runCycles != d.runCycles, "-N (run cycles)");
  warn(o.op != d.op, "-o (op: the GEMM ops sum)");
  warn(o.root != d.root, "-r (root)");
  warn(o.blocking != d.blocking, "-z (blocking)");
  warn(o.reportCpuTime, "-C (cpu time)");
  warn(o.localRegister, "-R (register: the ops take plain buffers and keep their own workspace)");
  return "";
}

std::vector<sscDataType_t> gemmTypes(const Options& o) {
  if (o.type) return {*o.type};
  return {sscBfloat16, sscFloat16};
}

std::string gemmTableHeader() {
  std::string text = printfString(
      "# %-18s  %6s  %6s  %6s  %6s  %6s  %8s  %-11s  %8s  %7s  %6s  %6s  %6s\n", "layer", "M", "N",
      "K", "rankN", "rankK", "type", "variant", "time", "TFLOP/s", "algbw", "busbw", "#wrong");
  text +=
      printfString("# %-18s  %6s  %6s  %6s  %6s  %6s  %8s  %-11s  %8s  %7s  %6s  %6s  %6s\n", "",
                   "(rows)", "", "", "", "", "", "(ran)", "(us)", "", "(GB/s)", "(GB/s)", "");
  return text;
}

std::string gemmRowText(const GemmRow& r) {
  const std::string wrong =
      r.checked ? printfString("%6lld", static_cast<long long>(r.wrong)) : std::string("   N/A");
  return printfString(
      "  %-18s  %6lld  %6lld  %6lld  %6lld  %6lld  %8s  %-11s  %8s  %7s  %6s  %6s  %6s\n",
      r.layer.c_str(), static_cast<long long>(r.m), static_cast<long long>(r.n),
      static_cast<long long>(r.k), static_cast<long long>(r.rankN), static_cast<long long>(r.rankK),
      r.type, r.variant.c_str(), formatFloat(r.timeUs, 8).c_str(), formatFloat(r.tflops, 7).c_str(),
      formatFloat(r.bw.algBw, 6).c_str(), formatFloat(r.bw.busBw, 6).c_str(), wrong.c_str());
}

std::string gemmRunHeader(const Options& o, const GemmFlags& f) {
  const bool factor = o.stepFactor > 1;
  return printfString(
      "# nThread %d nGpus %d minRows %zu maxRows %zu step: %zu(%s) warmup iters: %d iters: %d "
      "validation: %d variant: %s layers: %s\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, factor ? o.stepFactor : o.stepBytes,
      factor ? "factor" : "rows", o.warmupIters, o.iters, o.check, f.variant.name.c_str(),
      f.layers.empty() ? "all" : f.layers.c_str());
}

std::string gemmRowJson(const RunInfo& run, const Options& o, const GemmFlags& f, const GemmRow& r,
                        const std::string& date) {
  nlohmann::ordered_json record = nlohmann::ordered_json::parse(runIdentityJson(run, date));
  record.update(nlohmann::ordered_json{
      {"layer", r.layer},
      {"M", r.m},
      {"N", r.n},
      {"K", r.k},
      {"rank_N", r.rankN},
      {"rank_K", r.rankK},
      {"type", r.type},
      {"variant_asked", f.variant.name},
      {"variant", r.variant},
      {"time", r.timeUs},
      {"tflops", r.tflops},
      {"alg_bw", r.bw.algBw},
      {"bus_bw", r.bw.busBw},
      {"nwrong", r.checked ? nlohmann::ordered_json(r.wrong) : nlohmann::ordered_json(nullptr)},
      {"units",
       {{"time", "us"}, {"alg_bw", "GB/s"}, {"bus_bw", "GB/s"}, {"tflops", "1e12 flop/s"}}},
      {"iters", o.iters},
      {"warmup_iters", o.warmupIters},
      {"average", o.average},
      {"check", o.check},
  });
  return record.dump();
}

Bandwidth gemmBandwidth(bool reduceScatter, int64_t m, int64_t n, int64_t k, size_t eltSize,
                        double seconds, int nranks) {
  Bandwidth b;
  if (seconds <= 0) return b;
  const double bytes =
      static_cast<double>(m) * static_cast<double>(reduceScatter ? n : k) * eltSize;
  b.algBw = bytes / seconds / 1e9;
  b.busBw = nranks > 1 ? b.algBw * (nranks - 1) / nranks : 0.0;
  return b;
}

std::string gemmUsage(std::string_view program) {
  std::string text = "USAGE: " + std::string(program) + " \n";
  const char* lines[] = {
      "[-b,--minbytes <min M: rows of X, K/M/G suffix>] (default 16)",
      "[-e,--maxbytes <max M>] (default 16384)",
      "[-i,--stepbytes <M increment>] (default 1M: use -f)",
      "[-f,--stepfactor <M factor>] (default 4)",
      "[-n,--iters <iteration count>] (default 10)",
      "[-w,--warmup_iters <warmup iteration count>] (default 3)",
      "[-c,--check <0/1> 1: check up to 9 rows x 65 columns of each rank's output] (default 1)",
      "[-d,--datatype <bfloat16/half/all>] (default bfloat16)",
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] (default "
      "1)",
      "[-A,--algo <...>] sets STARSCREAM_ALGO (the collectives of the unfused and chunked "
      "variants)",
      "[-J,--json <file> write one JSON record per row (JSON Lines)]",
      "[-T,--topo <file> emulation topology, sets STARSCREAM_TOPO_FILE]",
      "[-L,--layers <names>] comma-separated substrings of the layers to time (default all)",
      "[-V,--variant <auto/unfused/chunked/fused/fused_per_rank>] (default auto)",
      "[-h,--help]",
  };
  for (const char* l : lines) text += "\t" + std::string(l) + " \n";
  text += "Layers (per-GPU TP8 shapes, K x N):";
  for (const GemmLayer& l : kLayers)
    text += " " + std::string(l.name) + " " + std::to_string(l.k) + "x" + std::to_string(l.n);
  text +=
      "\nExample (8 MPS partitions of one GPU):\n\ttools/emulate/partition-run.sh 8 build/bin/" +
      std::string(program) +
      " -b 256 -e 16K -f 4 -L llama70b -V auto -J out.json\n"
      "docs/perf.md explains the columns.\n";
  return text;
}

}  // namespace ssc::perf
