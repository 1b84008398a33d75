// SPDX-License-Identifier: MIT
// The GPU backend's connections for one communicator: every rank's FIFOs, control words and
// counters live in one IPC segment (transports/usr), mapped by every peer of its node (peers on
// other nodes get host-staged FIFOs of the same shape, gpu_net.h); this file owns its
// layout and the table of pointers the kernel reads (plan_kernel.h's Conn), the symmetric
// executor's control area (sym_kernel.h: per-block barrier slots, LL inboxes), plus the error
// words through which a kernel reports a timeout or a mismatch, and the abort word through which
// the host stops kernels that wait.
#pragma once

#include <cstdint>
#include <memory>

#include "src/device/backend.h"
#include "src/device/gpu/gpu_net.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/sym_kernel.h"
#include "starscream/starscream.h"
#include "transports/usr/ipc_segment.h"

namespace ssc::gpu {

// Shape of every connection of a communicator. Identical on all ranks (constants for now).
struct FifoShape {
  int channels = 2;          // plans use at most 2 (bidirectional ring, hierarchical)
  int blocksPerChannel = 4;  // several blocks per channel split each slot
  int slots = 8;
  uint64_t slotBytes = 512 << 10;
  uint64_t pieceBytes() const { return slotBytes / blocksPerChannel; }
  // The largest plan step, per plan.h: half a FIFO.
  uint64_t chunkBytes() const { return static_cast<uint64_t>(slots / 2) * slotBytes; }
};

class GpuConnections {
 public:
  // Collective over comm (bootstrap + IPC exchange). Uses the current device.
  static sscResult_t create(CommView* comm, const FifoShape& shape,
                            std::unique_ptr<GpuConnections>* out);
  ~GpuConnections();

  const FifoShape& shape() const { return shape_; }
  // Fills the connection, counter and error fields of a kernel's arguments.
  void fillArgs(KernelArgs* args) const;
  // Fills the symmetric kernel's control pointers (every rank's area) and error words.
  void fillSymArgs(SymArgs* args) const;
  // Logs the state of the host-staged connections to other nodes, if any (after a timeout).
  void dumpNetworkState() const {
    if (net_) net_->requestDump();
  }
  // The error a kernel recorded (kKernelOk if none) and its peer/channel/detail words.
  uint32_t kernelError(uint32_t* peer, uint32_t* channel, uint32_t* detail) const;
  // kKernelP2pMismatch's two counts or sizes (plan_kernel.h), once kernelError reported it.
  void kernelErrorCounts(uint64_t* sent, uint64_t* expected) const;
  int rank() const { return rank_; }
  // Sets the abort word every kernel wait polls: waits end with kKernelAborted. For sscCommAbort:
  // never cleared, as the communicator does not run again.
  void requestAbort();
  // The abort word as kernels address it (see requestAbort).
  const uint32_t* abortWordDevice() const { return errorHostDevice_ + kAbortWord; }

 private:
  GpuConnections() = default;
  FifoShape shape_;
  int rank_ = 0;
  int nranks_ = 0;
  P2pScratch* p2pScratch_ = nullptr;  // device memory: the one-copy handshake's state
  std::unique_ptr<IpcSegment> segment_;
  std::unique_ptr<GpuNetStaging> net_;  // ranks on other nodes (null on one node)
  Conn* conns_ = nullptr;               // device copy of the table, [channel][peer]
  uint64_t* barrierCounters_ = nullptr;
  uint32_t* errorDevice_ = nullptr;
  // Word of the host-mapped area that kernels poll for an abort; kept off words 0..3, which the
  // kernel writes.
  static constexpr int kAbortWord = 8;
  volatile uint32_t* errorHost_ = nullptr;  // pinned, mapped: {code, peer, channel, detail,
                                            // counts (4 words)}, [kAbortWord]: abort
  uint32_t* errorHostDevice_ = nullptr;     // the same words as the kernel addresses them
};

}  // namespace ssc::gpu
