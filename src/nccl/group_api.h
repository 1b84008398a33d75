// SPDX-License-Identifier: MIT
// NCCL group semantics on top of Starscream's: ncclGroupStart/End are sscGroupStart/End, whose
// per-thread state (depth, recorded calls, the group's first failure) is the one group state of
// the process. A call the shim refuses inside a group fails that group through the library's
// internal interface, so ncclGroupEnd returns its error and launches nothing, as in NCCL. What
// the shim adds is the NCCL-only work of the outermost ncclGroupEnd: completing host-backend
// communicators' queued calls, and the communicator creations started inside the group.
#pragma once

#include <memory>

#include "src/nccl/comm.h"

namespace ssc::nccl {

// Depth of this thread's open groups (0: none): Starscream's.
int groupDepth();

// The shim refused a call inside the open group (this thread's last error says why): the group
// fails with `code` and launches nothing, as NCCL does. No effect outside a group.
void groupFail(ncclResult_t code);

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
