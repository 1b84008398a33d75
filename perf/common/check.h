// SPDX-License-Identifier: MIT
// Where each collective's inputs go and where its results must land: the host images of a rank's
// buffers before a call, and the count of wrong elements after it. Pure host code over byte
// images; the caller moves them to and from the device (device_buffer.h), and the unit tests
// drive it with collectives simulated on the host.
//
// Layouts follow nccl-tests' InitData/CheckData: the receive buffer starts zeroed, in-place runs
// put the input where the API expects it inside the receive buffer, and the checked region is
// recvCount elements at recvbuff + recvInplaceOffset * rank (in place) or recvbuff.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf/common/coll_math.h"
#include "perf/common/data_pattern.h"

namespace ssc::perf {

// One call's shape, as the check sees it.
struct CallShape {
  CollKind kind;
  CollCounts counts;
  int rank = 0;
  int nranks = 1;
  int root = 0;  // broadcast and reduce
  bool inPlace = false;
};

// Host images of this rank's send buffer (out of place only; empty in place) and receive buffer
// just before the call. Sizes: sendCount and, in place, max(sendCount, recvCount) elements for
// the receive buffer (recvCount out of place).
struct BufferImages {
  std::vector<unsigned char> send;
  std::vector<unsigned char> recv;
};
BufferImages prepareImages(const CallShape& shape, const Pattern& pattern);

// Byte offset, from recvbuff, of the region countWrong checks, and its length.
size_t resultOffsetBytes(const CallShape& shape, size_t eltSize);
size_t resultBytes(const CallShape& shape, size_t eltSize);

// Wrong elements in `result` (resultBytes long, read from resultOffsetBytes).
int64_t countWrong(const CallShape& shape, const Pattern& pattern, const void* result);

}  // namespace ssc::perf
