// SPDX-License-Identifier: MIT
// The reduction ops a communicator's sscRedOpCreatePreMulSum made, under a lock of their own.
// Numbers of destroyed ops are handed out again, lowest first, as NCCL does: frameworks create
// and destroy one per call (PyTorch's PREMUL_SUM), so numbers never reused would run out in a
// long job. Reuse is safe for work already queued: a call copies its op's scalar (or the
// scalar's device address) into its own work when it is queued, and plans do not depend on it.
#pragma once

#include <map>
#include <mutex>
#include <set>

#include "src/core/dtype.h"
#include "starscream/starscream.h"

namespace ssc {

// A reduction op created by sscRedOpCreatePreMulSum: Sum after multiplying each input by a
// scalar held on the host (its value, read at creation) or on the device (read by each call's
// kernels, so it may change between calls).
struct PreMulSumOp {
  sscDataType_t dtype;
  bool onDevice;
  Scalar hostValue;
  const void* devicePtr;
};

class RedOpTable {
 public:
  // Ops are numbered from `first` up to, not including, `end`.
  RedOpTable(int first = sscNumOps, int end = sscMaxRedOp) : end_(end), next_(first) {}
  RedOpTable(const RedOpTable&) = delete;
  RedOpTable& operator=(const RedOpTable&) = delete;

  // Adds `op` under the lowest free number, written to *id; false when every number is in use.
  bool create(const PreMulSumOp& op, int* id);
  // The op numbered `id`; false when there is none (never created, or destroyed).
  bool find(int id, PreMulSumOp* out) const;
  // Removes the op numbered `id`, whose number may then be handed out again; false when none.
  bool destroy(int id);
  size_t size() const;

 private:
  mutable std::mutex mu_;  // a leaf: nothing else is locked or called while it is held
  const int end_;
  int next_;            // numbers from here on were never handed out
  std::set<int> free_;  // numbers below next_ whose ops were destroyed
  std::map<int, PreMulSumOp> ops_;
};

}  // namespace ssc
