// SPDX-License-Identifier: MIT
// NCCL group semantics on top of Starscream's: ncclGroupStart/End nest and map onto
// sscGroupStart/End, which record and launch the calls (fusing each communicator's sends and
// receives). What the shim adds per thread: communicator creations started inside the group
// (NCCL completes them at ncclGroupEnd), host-backend communicators whose queued work the group
// end must complete, errors the shim itself found inside the group, and ncclGroupSimulateEnd.
#pragma once

#include <memory>

#include "src/nccl/comm.h"

namespace ssc::nccl {

// Depth of this thread's open groups (0: none).
int groupDepth();

// A Starscream call was recorded in the open group.
void groupNoteSscCall();

// The shim rejected a call inside the open group: ncclGroupEnd reports `code` (with this
// thread's message at the time) and launches nothing, as NCCL does.
void groupRecordError(ncclResult_t code);

// A creation started inside the open group: ncclGroupEnd waits for it when its configuration
// is blocking, and returns ncclInProgress while a non-blocking one still runs.
void groupAwaitCreation(const std::shared_ptr<ncclComm>& comm);
// A creation job without a communicator of its own on this rank (a split with
// NCCL_SPLIT_NOCOLOR still takes part in the split): waited for at ncclGroupEnd.
void groupAwaitJob(const std::shared_ptr<CreateJob>& job);

// Finishes a call on `comm` as NCCL's stream semantics require: on a GPU backend the work is
// on the caller's stream and nothing more is done; on the host backend the call (or, inside a
// group, the whole group at ncclGroupEnd) is completed before returning.
ncclResult_t completeCall(const char* fn, const std::shared_ptr<ncclComm>& comm);

}  // namespace ssc::nccl
