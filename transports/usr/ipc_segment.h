// SPDX-License-Identifier: MIT
// transports/usr: memory of one rank mapped into every other rank of a communicator through
// runtime IPC handles exchanged over the bootstrap. Between partitions of one GPU (processes
// under MPS) the mapping is plain HBM; between GPUs of a node the same handles are opened over
// the peer link (transports/xgmi checks that one exists). Kernels then load and store peers'
// memory directly.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "transports/peer_view.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

class IpcSegment {
 public:
  // Collective over comm: allocates `bytes` of zeroed device memory on the current device and
  // maps the segment of every peer r with mapPeer[r] (ranks of this node; all ranks pass the
  // same size). Fails on every rank when any rank fails, so no rank is left waiting for a peer
  // that gave up.
  static sscResult_t create(PeerView* comm, size_t bytes, const std::vector<bool>& mapPeer,
                            std::unique_ptr<IpcSegment>* out);
  ~IpcSegment();
  IpcSegment(const IpcSegment&) = delete;
  IpcSegment& operator=(const IpcSegment&) = delete;

  // Base of `rank`'s segment as this process addresses it (its own for rank == this rank;
  // null for a rank that was not mapped).
  char* base(int rank) const { return static_cast<char*>(maps_[rank]); }
  size_t bytes() const { return bytes_; }

 private:
  IpcSegment() = default;
  int rank_ = 0;
  size_t bytes_ = 0;
  std::vector<void*> maps_;
};

}  // namespace ssc::gpu
