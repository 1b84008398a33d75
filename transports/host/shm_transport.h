// SPDX-License-Identifier: MIT
// Host-backend transport: connections between ranks of one host over POSIX shared memory, and to
// ranks on other nodes through the network proxy (transports/net).
//
// Each rank creates one segment holding the receive FIFOs of all its incoming connections,
// (channel, sender) -> FIFO of `slots` slots: an anonymous file (memfd) its peers open through
// /proc/<pid>/fd (same user), so it never has a name in /dev/shm that a killed rank could leave
// behind. A rank maps only the segments of ranks on its own node; towards a rank on
// another node it fills a private outbox FIFO that the network proxy sends, and the proxy fills
// the inbox FIFO from that rank in its own segment: the executor sees FIFOs either way.
// Counters are monotonic across calls (epochs): nothing is reset between
// operations. Waits poll briefly, then block on a futex in the shared page, so 64 ranks on 2
// cores do not burn the CPU they wait for.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/futex_wait.h"
#include "starscream/starscream.h"
#include "transports/peer_view.h"

namespace ssc {

constexpr int kShmMaxSlots = 32;

// Control block of one FIFO, in the receiver's segment.
struct alignas(64) ShmFifoCtrl {
  alignas(64) std::atomic<uint64_t> tail;        // slots posted (written by the sender)
  std::atomic<uint32_t> tailWord;                // futex word bumped with tail
  alignas(64) std::atomic<uint64_t> head;        // slots consumed (written by the receiver)
  std::atomic<uint32_t> headWord;                // futex word bumped with head
  alignas(64) uint64_t slotBytes[kShmMaxSlots];  // bytes posted in each slot (size check)
};

// Each rank's barrier word, in its own segment: (epoch << 32) | call hash. Epochs only grow.
struct alignas(64) ShmBarrierCtrl {
  std::atomic<uint64_t> state;
  std::atomic<uint32_t> word;  // futex bumped with state
};

// One end of a connection: its control block and slot memory (mapped from the receiver).
struct ShmFifo {
  ShmFifoCtrl* ctrl = nullptr;
  char* data = nullptr;
};

class NetComm;
class NetProxy;

class ShmTransport {
 public:
  // Collective over comm (uses its bootstrap). Ranks the topology puts on this rank's node must
  // share this host; ranks on other nodes are reached over the network plugin.
  static sscResult_t create(PeerView* comm, std::unique_ptr<ShmTransport>* out);
  ~ShmTransport();
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  size_t chunkBytes() const { return slots_ / 2 * slotBytes_; }
  int channels() const { return channels_; }
  size_t slotBytes() const { return slotBytes_; }
  int slots() const { return slots_; }
  // How long a wait on a peer's FIFO or barrier may take: the communicator's, fixed at create.
  const WaitLimits& waits() const { return waits_; }

  // The FIFO this rank fills when sending to `peer` on `channel` (in the peer's segment).
  ShmFifo sendFifo(int peer, int channel) const;
  // The FIFO this rank drains when receiving from `peer` on `channel` (in its own segment).
  ShmFifo recvFifo(int peer, int channel) const;
  // Rank q's barrier word (mapped from q's segment; null for a rank on another node, which
  // zero-copy plans never include).
  ShmBarrierCtrl* barrier(int q) const;
  // The epoch of this rank's next barrier (1, 2, ...); executors of one communicator are serial.
  uint32_t nextBarrierEpoch() { return ++barrierEpoch_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

 private:
  ShmTransport() = default;
  size_t fifoIndex(int sender, int channel) const;
  char* segmentBase(int rank) const { return static_cast<char*>(maps_[rank]); }
  sscResult_t connectNetwork(PeerView* comm, const std::vector<int>& netPeers);

  int rank_ = 0;
  int nranks_ = 0;
  int channels_ = 1;
  int slots_ = 8;
  size_t slotBytes_ = 0;
  size_t ctrlBytes_ = 0;
  size_t segmentBytes_ = 0;
  WaitLimits waits_;
  uint32_t barrierEpoch_ = 0;
  std::vector<void*> maps_;
  // Towards ranks on other nodes: outbox FIFOs [channel][peer] (ctrl null for local peers),
  // their memory, and the proxy that moves them (destroyed first: it uses the rest).
  std::vector<ShmFifo> outboxes_;
  std::vector<char> outboxData_;
  std::unique_ptr<ShmFifoCtrl[]> outboxCtrl_;
  std::unique_ptr<NetComm> net_;
  std::unique_ptr<NetProxy> proxy_;
};

}  // namespace ssc
