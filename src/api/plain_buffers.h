// SPDX-License-Identifier: MIT
// Zero-copy for collectives on plain (unregistered) buffers: before a batch of calls launches,
// the calls that qualify agree with their peers (through comm->peerCache) on every rank's
// buffers, and those that every rank can share run the symmetric algorithm on the application's
// own memory. The rest keep their path (packets, staging, FIFOs), the same on every rank.
#pragma once

#include <vector>

#include "src/api/group.h"

namespace ssc {

// Fills peerBuffers, callHash and args (symmetric, the agreed in-place form) of every call in
// `calls` that runs zero-copy on its plain buffers. Calls of one communicator are resolved in
// their order, one call per communicator at a time, each communicator's record posted before any
// is waited on: a thread driving one rank of several communicators never waits for itself.
//
// Checked mode (STARSCREAM_CHECK=1) compares every collective's fingerprint in the same pass:
// through the record the call posts on comm->peerCache (the same round), or through the
// communicator's CallChecker where it has no peer cache. When the ranks of a communicator
// disagree, its calls are marked `refused` (on every rank alike) and the result is
// sscInvalidUsage with the message naming the field and the ranks; the other communicators'
// calls stay resolved.
//
// A call captured into a graph is resolved the same way (its new exports confirmed at once, in
// a second exchange), and the peers' mappings it runs on are pinned until the graph is
// destroyed (Backend::retainUntilGraphDestroyed; peer_cache.h).
sscResult_t resolvePlainBuffers(std::vector<PendingCall>& calls);

}  // namespace ssc
