// SPDX-License-Identifier: MIT
// Renders DOT text to a PNG through Graphviz's `dot` program, which is optional: it is not on
// every machine we run on (the H200 host has none), so its absence is an error message, not a
// build dependency.
#pragma once

#include <string>

namespace ssc::topo {

// Runs `dot -Tpng -o pngPath` (found on PATH) with `dot` on its standard input. Returns "" on
// success, else a message saying what went wrong (dot missing, dot failed, cannot write).
std::string renderPng(const std::string& dot, const std::string& pngPath);

}  // namespace ssc::topo
