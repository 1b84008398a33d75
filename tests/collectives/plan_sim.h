// SPDX-License-Identifier: MIT
// A single-threaded simulator for full sets of plans (one per rank), used by the plan-level
// tests. Elements are symbolic: each carries the index it came from and the set of ranks whose
// contributions it holds, so the simulator can prove that every element is reduced exactly once,
// lands in the right place, and gets the pre/post steps exactly once. FIFOs have finite capacity
// like the real transports, so a plan that could deadlock is reported as such. Plans marked
// in place (RankPlan::inPlace) see their input and output as one memory (inAliasShift apart), as
// the executors do, so reading input after a step overwrote it yields the wrong element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/collectives/plan.h"

namespace ssc::test {

struct SymElem {
  int64_t tag = -1;    // the element's global index (-1: never written)
  uint64_t ranks = 0;  // contributions reduced into it (bit r = rank r)
  uint64_t pre = 0;    // contributions whose pre-step ran (must equal ranks)
  int post = 0;        // times the post-step ran
  bool operator==(const SymElem&) const = default;
};

struct SimResult {
  std::string error;  // "" when the run completed without a protocol error or deadlock
  std::vector<std::vector<std::vector<SymElem>>> buffers;  // [rank][buf][element]
};

// Runs the plans. inputs[rank][buf] gives the initial content of each buffer (sized to the plan's
// bufElems; in place, the input's content wins where the two overlap, and the result's kBufIn
// and kBufOut are both views of the shared memory). slotElems: elements per FIFO slot; slots:
// FIFO depth.
SimResult simulatePlans(const std::vector<RankPlan>& plans,
                        std::vector<std::vector<std::vector<SymElem>>> inputs, uint64_t slotElems,
                        int slots);

}  // namespace ssc::test
