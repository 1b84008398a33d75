// Host-backend transport: connections between ranks of one host over POSIX shared memory.
//
// Each rank creates one segment (mode 0600) holding the receive FIFOs of all its incoming
// connections, (channel, sender) -> FIFO of `slots` slots. Peers map it, and every rank unlinks
// its own segment as soon as all peers have mapped it, so nothing stays in /dev/shm after a normal
// or an aborted run. Counters are monotonic across calls (epochs): nothing is reset between
// operations. Waits poll briefly, then block on a futex in the shared page, so 64 ranks on 2
// cores do not burn the CPU they wait for.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/device/backend.h"
#include "starscream/starscream.h"

struct sscComm;

namespace ssc {

constexpr int kShmMaxSlots = 32;

// Control block of one FIFO, in the receiver's segment.
struct alignas(64) ShmFifoCtrl {
  alignas(64) std::atomic<uint64_t> tail;   // slots posted (written by the sender)
  std::atomic<uint32_t> tailWord;           // futex word bumped with tail
  alignas(64) std::atomic<uint64_t> head;   // slots consumed (written by the receiver)
  std::atomic<uint32_t> headWord;           // futex word bumped with head
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

class ShmTransport {
 public:
  // Collective over comm (uses its bootstrap). Requires all ranks on this host.
  static sscResult_t create(sscComm* comm, std::unique_ptr<ShmTransport>* out);
  ~ShmTransport();

  size_t chunkBytes() const { return slots_ / 2 * slotBytes_; }
  int channels() const { return channels_; }
  size_t slotBytes() const { return slotBytes_; }
  int slots() const { return slots_; }

  // The FIFO this rank fills when sending to `peer` on `channel` (in the peer's segment).
  ShmFifo sendFifo(int peer, int channel) const;
  // The FIFO this rank drains when receiving from `peer` on `channel` (in its own segment).
  ShmFifo recvFifo(int peer, int channel) const;
  // Rank q's barrier word (mapped from q's segment).
  ShmBarrierCtrl* barrier(int q) const;
  // The epoch of this rank's next barrier (1, 2, ...); executors of one communicator are serial.
  uint32_t nextBarrierEpoch() { return ++barrierEpoch_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

 private:
  ShmTransport() = default;
  size_t fifoIndex(int sender, int channel) const;
  char* segmentBase(int rank) const { return static_cast<char*>(maps_[rank]); }

  int rank_ = 0;
  int nranks_ = 0;
  int channels_ = 1;
  int slots_ = 8;
  size_t slotBytes_ = 0;
  size_t ctrlBytes_ = 0;
  size_t segmentBytes_ = 0;
  std::string name_;
  bool unlinked_ = true;
  uint32_t barrierEpoch_ = 0;
  std::vector<void*> maps_;
};

// Blocks until pred() is true: polls STARSCREAM_SPIN times, then sleeps on `word` (a futex in
// shared memory that the other side bumps after changing the state pred reads). Fails with
// sscRemoteError when *abort becomes true, sscTimeout after STARSCREAM_TIMEOUT seconds.
template <typename Pred>
sscResult_t shmWait(std::atomic<uint32_t>* word, Pred pred, const std::atomic<bool>* abort,
                    const char* what, int peer);

// Bumps `word` and wakes every waiter on it.
void shmNotify(std::atomic<uint32_t>* word);

// Implementation detail of shmWait: one bounded futex sleep while *word == seen.
void shmSleep(std::atomic<uint32_t>* word, uint32_t seen, int timeoutMs);
int shmSpinCount();
double shmTimeoutSeconds();

}  // namespace ssc

#include "transports/host/shm_wait_inl.h"
