// SPDX-License-Identifier: MIT
// Host-backend memory that peers can map: sscMemAlloc returns memfd-backed shared mappings, and
// a symmetric registration maps every rank's allocation into every other rank through
// /proc/<pid>/fd/<fd> (same user, same host). This is what lets the zero-copy algorithms run,
// and be tested, without a GPU.
#pragma once

#include <cstddef>
#include <vector>

#include "transports/peer_view.h"
#include "starscream/starscream.h"
#include "transports/usr/peer_memory.h"

namespace ssc {

// Allocates `bytes` of shareable memory (page aligned).
sscResult_t shmAlloc(size_t bytes, void** out);
// Frees memory from shmAlloc; sscInvalidArgument for anything else. Peers' mappings stay valid.
sscResult_t shmFree(void* p);

// Collective: maps every rank's [buff, buff + bytes) here. peerBases stays empty (on every rank)
// when any rank's buffer is not from shmAlloc or cannot be mapped.
sscResult_t shmRegister(PeerView* comm, void* buff, size_t bytes, std::vector<void*>* peerBases);
// Unmaps the peers' mappings made by shmRegister.
sscResult_t shmDeregister(PeerView* comm, void* buff, const std::vector<void*>& peerBases);

// Plain (unregistered) sscMemAlloc buffers mapped by peers per call (transports/usr/peer_cache.h):
// the host backend's PeerMemoryRuntime, so CI runs the same cache the GPU uses.
PeerMemoryRuntime* shmPeerMemory();

}  // namespace ssc
