// SPDX-License-Identifier: MIT
// A unit of enqueued work: one plan plus the call's buffers and reduction, as an executor needs it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/collectives/algorithms.h"
#include "src/collectives/plan.h"
#include "src/core/dtype.h"
#include "src/device/work_timing.h"

namespace ssc {

// The reduction as executors apply it: a combiner plus NCCL's pre/post steps.
struct ReduceSpec {
  sscDataType_t dtype = sscFloat32;
  ReduceKind kind = ReduceKind::kSum;
  bool hasPreScale = false;              // PreMulSum / float Avg: multiply each input by a scalar
  Scalar preScale;                       // the scalar when known at enqueue time
  const void* preScaleDevice = nullptr;  // or read from device memory when the work runs
  uint64_t postDivisor = 0;              // integer Avg: divide the final sum (0: none)
};

struct Work {
  std::shared_ptr<const RankPlan> plan;
  ReduceSpec reduce;
  size_t elemBytes = 1;
  std::vector<void*> buffers;  // indexed by BufId; kBufScratch is filled in by the executor
  // For plans with peer steps (Algo::kSymmetric): peerBuffers[buf][q] is rank q's buffer `buf`
  // (kBufIn, kBufOut) as mapped into this process, already at the call's offset. Entries of a
  // buffer peers never touch are null (reduce-scatter's output, all-gather's input): steps use
  // the local buffers[] for this rank's own side.
  std::vector<std::vector<void*>> peerBuffers;
  // Identifies the call (collective, count, offsets in the registrations); ranks compare it at
  // the first barrier so mismatched calls fail instead of reading the wrong memory.
  uint32_t callHash = 0;
  // One-copy point-to-point (kSendRecv plans with kP2pOffer / kP2pPush / kP2pWait steps, see
  // plan.h): the group's operations (op i is buffer kBufUserBase + i) and, per receive, the
  // address at which its sender has the buffer mapped (0: the FIFOs) and whether it is offered
  // for a swap (its buffer is also the send to that peer with the same index and size).
  struct P2pDirect {
    std::vector<P2pOp> ops;
    std::vector<uint64_t> offer;
    std::vector<uint8_t> swap;
  };
  std::shared_ptr<const P2pDirect> p2p;
  // Set when the call is traced (STARSCREAM_TRACE): the backend records when the work ran.
  std::shared_ptr<WorkTiming> timing;
};

}  // namespace ssc
