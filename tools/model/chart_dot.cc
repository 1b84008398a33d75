// SPDX-License-Identifier: MIT
#include "tools/model/chart_dot.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace ssc::model {
namespace {

// Plot area, inches: x is log2(bytes), y is busbw from 0 to the largest prediction.
constexpr double kWidth = 9, kHeight = 5.5;
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c",
                                   "#d62728", "#9467bd", "#8c564b"};

std::string sizeLabel(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", bytes, units[u]);
}

// A node drawn at (x, y) inches and never moved by the layout.
std::string at(double x, double y) { return fmt::format("pos=\"{:.3f},{:.3f}!\"", x, y); }

}  // namespace

std::string chartDot(const nlohmann::json& doc) {
  const auto& rows = doc.at("rows");
  std::vector<std::string> algos;
  double lo = 0, hi = 1, top = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double x = std::log2(rows[i].at("bytes").get<double>());
    lo = i == 0 ? x : std::min(lo, x);
    hi = i == 0 ? x + 1 : std::max(hi, x);
    for (const auto& [name, a] : rows[i].at("algos").items()) {
      if (std::find(algos.begin(), algos.end(), name) == algos.end()) algos.push_back(name);
      if (!a.is_null()) top = std::max(top, a.at("busbw_gbps").get<double>());
    }
  }
  if (top <= 0) top = 1;
  const auto X = [&](double bytes) { return (std::log2(bytes) - lo) / (hi - lo) * kWidth; };
  const auto Y = [&](double bw) { return bw / top * kHeight; };
  std::string d = "graph chart {\n  layout=neato; splines=false; outputorder=edgesfirst;\n";
  d += fmt::format(
      "  label=\"{} ({} ranks), {}, {} buffers, profile {}: predicted busbw (GB/s) "
      "against bytes per rank; circles: the tuner's choice\"; labelloc=t; "
      "fontsize=16;\n",
      doc.value("topology", ""), doc.value("nranks", 0), doc.value("collective", ""),
      doc.value("buffers", ""), doc.value("profile", ""));
  d += "  node [shape=point, width=0.06, label=\"\"]; edge [penwidth=2];\n";
  // Axes, ticks at every size and at fifths of the busbw range.
  d += fmt::format("  o [{}, style=invis]; xe [{}, style=invis]; ye [{}, style=invis];\n", at(0, 0),
                   at(kWidth, 0), at(0, kHeight));
  d += "  o -- xe [penwidth=1]; o -- ye [penwidth=1];\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const double b = rows[i].at("bytes").get<double>();
    d += fmt::format("  xt{} [shape=plaintext, fontsize=11, label=\"{}\", {}];\n", i, sizeLabel(b),
                     at(X(b), -0.25));
  }
  for (int k = 0; k <= 5; ++k)
    d += fmt::format("  yt{} [shape=plaintext, fontsize=11, label=\"{:.0f}\", {}];\n", k,
                     top * k / 5, at(-0.4, kHeight * k / 5));
  // One polyline per algorithm; a legend line for each.
  for (size_t a = 0; a < algos.size(); ++a) {
    const char* color = kColors[a % std::size(kColors)];
    std::string prev;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& v = rows[i].at("algos").value(algos[a], nlohmann::json());
      if (v.is_null()) {
        prev.clear();
        continue;
      }
      const double b = rows[i].at("bytes").get<double>(), bw = v.at("busbw_gbps").get<double>();
      const std::string id = fmt::format("p{}_{}", a, i);
      d += fmt::format("  {} [color=\"{}\", {}];\n", id, color, at(X(b), Y(bw)));
      if (!prev.empty()) d += fmt::format("  {} -- {} [color=\"{}\"];\n", prev, id, color);
      prev = id;
      if (rows[i].value("choice", "") == algos[a])
        d += fmt::format("  c{} [shape=circle, width=0.22, color=black, {}];\n", id,
                         at(X(b), Y(bw)));
    }
    d += fmt::format("  l{} [shape=plaintext, fontsize=13, fontcolor=\"{}\", label=\"{}\", {}];\n",
                     a, color, algos[a], at(kWidth + 1.0, kHeight - 0.35 * a));
  }
  d += "}\n";
  return d;
}

}  // namespace ssc::model
