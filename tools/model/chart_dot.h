// SPDX-License-Identifier: MIT
// The projection chart (predicted busbw of every algorithm against size, the tuner's choice
// circled) as Graphviz DOT with pinned positions, so the repo's PNG writer
// (tools/topo/render_png.h, Graphviz `dot`) draws it without a plotting library.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ssc::model {

// `doc` is starscream-model's --json document ({topology, nranks, collective, buffers, profile,
// rows: [{bytes, algos: {name: {busbw_gbps} | null}, choice}]}).
std::string chartDot(const nlohmann::json& doc);

}  // namespace ssc::model
