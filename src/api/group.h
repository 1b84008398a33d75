// SPDX-License-Identifier: MIT
// Group semantics (sscGroupStart/End): inside a group, calls are validated and recorded; the
// outermost sscGroupEnd launches them, fusing each communicator's sends and receives into one
// plan so that matching send/recv pairs can never deadlock on each other.
#pragma once

#include <string>
#include <vector>

#include "src/api/api.h"
#include "src/comm/call_check.h"
#include "src/collectives/algorithms.h"

namespace ssc {

// A validated call, ready to launch.
struct PendingCall {
  sscComm* comm = nullptr;
  sscStream_t stream = nullptr;
  bool isP2p = false;
  // collectives
  CollArgs args;
  ReduceSpec reduce;
  size_t elemBytes = 1;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  std::vector<std::vector<void*>> peerBuffers;  // set when args.symmetric
  uint32_t callHash = 0;
  // False for a pre-multiplied sum: each rank scales its input by its own scalar, which
  // zero-copy steps (reading peers' raw inputs) cannot apply, so such calls use the FIFOs.
  bool zeroCopyOk = true;
  // point-to-point (bytes)
  P2pOp p2p;
  void* p2pBuff = nullptr;
  // Checked mode (STARSCREAM_CHECK=1, call_check.h): the call's fingerprint, compared across the
  // ranks before anything launches. checkOnly: nothing to launch (a count of 0, or a call this
  // rank refused: its peers must learn of it at the same call). refused: the comparison failed
  // on this call's communicator, so none of its calls in the batch launch (on any rank).
  bool checked = false;
  bool checkOnly = false;
  bool refused = false;
  CallFingerprint check;
};

// Launches `call` now, or records it when a group is open. Returns the launch result.
sscResult_t submitCall(const PendingCall& call);

// Depth of this thread's open groups (0: none).
int groupDepth();

// Marks the open group (if any) as failed: its sscGroupEnd reports `code` and launches nothing.
void groupRecordError(sscResult_t code);

// For the internal interface (ssc_internal.h), which the NCCL shim uses so that its groups are
// these groups. The message the open group's failure reports, when it is `was`, becomes `now`:
// the same failure restated by a caller naming its own entry point.
void groupRestateError(const std::string& was, const std::string& now);
// Ends a level as sscGroupEnd does, but the outermost launches nothing: its calls are dropped,
// and a failure recorded in the group is returned as sscGroupEnd would return it.
sscResult_t groupDiscard();

}  // namespace ssc
