// SPDX-License-Identifier: MIT
#include "perf/common/check.h"

#include <algorithm>

namespace ssc::perf {
namespace {

// Broadcast reads only the root's input; every other collective reads every rank's.
bool hasInput(const CallShape& s) { return s.kind != CollKind::kBroadcast || s.rank == s.root; }

}  // namespace

BufferImages prepareImages(const CallShape& shape, const Pattern& pattern) {
  const size_t elt = pattern.elementSize();
  const CollCounts& c = shape.counts;
  BufferImages images;
  if (!shape.inPlace) {
    images.send.assign(c.sendCount * elt, 0);
    images.recv.assign(c.recvCount * elt, 0);
    if (hasInput(shape)) pattern.fillInput(shape.rank, 0, c.sendCount, images.send.data());
    return images;
  }
  // In place the input lives inside the receive buffer, where the API's in-place rule puts it:
  // block `rank` for all_gather, the start for reduce_scatter and the rest.
  images.recv.assign(std::max(c.sendCount, c.recvCount) * elt, 0);
  if (hasInput(shape)) {
    const size_t at = c.sendInplaceOffset * static_cast<size_t>(shape.rank) * elt;
    pattern.fillInput(shape.rank, 0, c.sendCount, images.recv.data() + at);
  }
  return images;
}

size_t resultOffsetBytes(const CallShape& shape, size_t eltSize) {
  return shape.inPlace ? shape.counts.recvInplaceOffset * static_cast<size_t>(shape.rank) * eltSize
                       : 0;
}

size_t resultBytes(const CallShape& shape, size_t eltSize) {
  return shape.counts.recvCount * eltSize;
}

int64_t countWrong(const CallShape& shape, const Pattern& pattern, const void* result) {
  const auto* out = static_cast<const unsigned char*>(result);
  const size_t elt = pattern.elementSize();
  const CollCounts& c = shape.counts;
  const int n = shape.nranks;
  int64_t wrong = 0;
  switch (shape.kind) {
    case CollKind::kAllReduce: return pattern.countReducedMismatches(out, 0, c.recvCount);
    case CollKind::kReduceScatter:
      // Rank r holds the reduction of block r of everyone's input.
      return pattern.countReducedMismatches(out, static_cast<size_t>(shape.rank) * c.recvCount,
                                            c.recvCount);
    case CollKind::kAllGather:
      // Block r is rank r's whole input.
      for (int r = 0; r < n; ++r) {
        wrong += pattern.countInputMismatches(out + r * c.paramCount * elt, r, 0, c.paramCount);
      }
      return wrong;
    case CollKind::kBroadcast: return pattern.countInputMismatches(out, shape.root, 0, c.recvCount);
    case CollKind::kReduce:
      if (shape.rank == shape.root) return pattern.countReducedMismatches(out, 0, c.recvCount);
      // Elsewhere recvbuff is not the call's to touch: still zero, or still the input in place.
      if (shape.inPlace) return pattern.countInputMismatches(out, shape.rank, 0, c.recvCount);
      return pattern.countNonZero(out, c.recvCount);
    case CollKind::kAllToAll:
      // Block p comes from rank p's send block addressed to this rank.
      for (int p = 0; p < n; ++p) {
        wrong += pattern.countInputMismatches(out + p * c.paramCount * elt, p,
                                              static_cast<size_t>(shape.rank) * c.paramCount,
                                              c.paramCount);
      }
      return wrong;
    case CollKind::kSendRecv:
      // Each rank receives from rank - 1 (and sends to rank + 1).
      return pattern.countInputMismatches(out, (shape.rank - 1 + n) % n, 0, c.recvCount);
  }
  return wrong;
}

}  // namespace ssc::perf
