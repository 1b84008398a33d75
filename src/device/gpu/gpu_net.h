// SPDX-License-Identifier: MIT
// The GPU backend's connections to ranks on other nodes: host-staged FIFOs (transports/net).
//
// A kernel cannot reach another node's memory, so for each remote peer it gets FIFOs in pinned
// host memory that it maps, laid out exactly like the FIFOs in a local peer's IPC segment
// (plan_kernel.h's Conn): it writes the outbox (data, byte counts, tail) and reads the inbox as
// it would a local peer's, while the network proxy moves every block's piece of every slot over
// the plugin. The kernel code is the same for both; only the pointers differ.
#pragma once

#include <memory>
#include <vector>

#include "src/device/backend.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "starscream/starscream.h"

namespace ssc {
class NetComm;
class NetProxy;
}  // namespace ssc

namespace ssc::gpu {

struct FifoShape;

class GpuNetStaging {
 public:
  // Collective over comm: creates the network communicator and the staging FIFOs for every
  // (channel, peer in netPeers), and starts the proxy.
  static sscResult_t create(CommView* comm, const FifoShape& shape,
                            const std::vector<int>& netPeers, std::unique_ptr<GpuNetStaging>* out);
  // Stops the proxy, then frees the staging memory (no kernel may still use it).
  ~GpuNetStaging();
  GpuNetStaging(const GpuNetStaging&) = delete;
  GpuNetStaging& operator=(const GpuNetStaging&) = delete;

  // Logs the network FIFOs' counters (from the proxy thread, shortly).
  void requestDump();

  // Points k's FIFO fields (not its counters) at the staging FIFOs of `peer` on `channel`.
  void fillConn(int channel, int peer, Conn* k) const;

 private:
  GpuNetStaging() = default;
  struct Region;  // byte offsets of one (channel, peer)'s FIFOs in the pinned block
  char* regionHost(int channel, int peer) const;

  int blocks_ = 0;
  int channels_ = 0;
  uint64_t fifoBytes_ = 0;
  uint64_t regionBytes_ = 0;
  std::vector<int> slotOf_;  // by rank: index among netPeers, -1 for local ranks
  int npeers_ = 0;
  char* host_ = nullptr;    // pinned, mapped
  char* device_ = nullptr;  // the same memory as kernels address it
  std::unique_ptr<NetComm> net_;
  std::unique_ptr<NetProxy> proxy_;
};

}  // namespace ssc::gpu
