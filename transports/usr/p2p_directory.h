// SPDX-License-Identifier: MIT
// transports/usr: the node's directory of receive buffers for one-copy point-to-point. A send and
// its receive are two ranks' calls with no collective agreement between them, and neither host
// may wait for the other (rank 0 may call ncclSend and then MPI_Send while rank 1 calls MPI_Recv
// and then ncclRecv: legal with NCCL, because a send only enqueues). So the agreement is made
// ahead of time, one allocation at a time, and the per-message decision travels with the data:
//
//  - A receiving rank (the owner) exports the allocation behind each receive buffer once and
//    lists it in its row of this shared table (at most kSlots allocations per owner).
//  - A sending rank, at each of its own launches, opens the exports of the owners it sends to
//    that it has not opened yet, and confirms each one in the table with the address it mapped
//    it at (refresh()).
//  - At the receive's launch the owner looks its buffer up (offer()): when the sender has
//    confirmed the allocation, the receive is offered as that address (plus the offset); else it
//    takes the FIFOs this time (the sender opens the export at its next launch, so the next
//    receive into that allocation goes one-copy).
//  - The offer reaches the sender in the plan itself (the kP2pOffer / kP2pPush steps of
//    src/collectives/plan.h): the receiver's executor sends the list of its offers as the first
//    slot of the pair's FIFO, the sender's executor stores straight into each offered buffer
//    and answers with one slot that says it is done (or why the pair's calls do not match), and
//    moves the rest through the FIFOs as before. The choice is made once, by the receiver, and
//    both executors read it from the same slot, so the two sides can never disagree.
//
// Neither host ever waits for the other: offer() reads a confirmation the sender wrote at some
// earlier launch, refresh() reads exports the owner wrote at some earlier launch.
//
// Lifetime. A mapping is used by the sender only while an offer naming it is in flight, and an
// offer is in flight only while work the owner queued before is unfinished. So the owner changes
// a slot (evicts it for another allocation, or retires it because its memory was freed and
// reused) in two steps: it stops offering the slot and takes a ticket of the work it has queued
// so far, and changes the slot once that work has finished. The sender, seeing the change,
// withdraws its confirmation at once and closes its mapping once the work it had queued by then
// has finished. Both check and never wait (a wait for queued work could wait for a peer's host,
// the deadlock this design avoids), and neither needs its rank to be idle: under a steady stream
// of calls the change completes a call or two later, and until then the receive takes the FIFOs.
// Offers made while capturing a CUDA/HIP graph are replayed for as long as the graph lives: their
// slots are pinned (never evicted) until the graph is destroyed (pin(), released by the runtime's
// user object through the caller).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "starscream/starscream.h"
#include "transports/peer_view.h"
#include "transports/usr/peer_memory.h"

namespace ssc {

// What the directory knows of its rank's work, without waiting: `issued` is a ticket for the
// operations queued so far, `finished(t)` whether those of ticket t have all finished
// (Backend::workIssued / workFinished).
struct WorkClock {
  std::function<uint64_t()> issued;
  std::function<bool(uint64_t)> finished;
};

class P2pDirectory {
 public:
  static constexpr int kSlots = 32;  // exported allocations per owner

  // Bytes of the shared table for nranks ranks (zero-filled memory is the initial state).
  static size_t segmentBytes(int nranks);

  // Over memory the ranks share (tests: one process, several threads). `work`: this rank's
  // (the communicator's) work tickets; a slot or a mapping changes once the work queued before
  // the decision to change it has finished.
  P2pDirectory(void* segment, int rank, int nranks, PeerMemoryRuntime* runtime, WorkClock work);
  ~P2pDirectory();  // closes what is still mapped (the communicator's work must have drained)
  P2pDirectory(const P2pDirectory&) = delete;
  P2pDirectory& operator=(const P2pDirectory&) = delete;

  // Collective over comm's bootstrap, all ranks on one host: the lowest rank creates the table,
  // the others map it. *out stays null on every rank when any rank could not map it (then
  // point-to-point keeps the FIFOs, on every rank alike). Errors are the bootstrap's only.
  static sscResult_t createShared(PeerView* comm, PeerMemoryRuntime* runtime, WorkClock work,
                                  std::unique_ptr<P2pDirectory>* out);

  // Sender side: opens the exports of `owners` not opened yet and confirms them; withdraws the
  // confirmations of slots their owner changed and closes their mappings once the work this
  // rank had queued when it saw the change has finished (else at a later launch).
  // `capturing`: the launch is being captured into a graph: nothing is closed then.
  sscResult_t refresh(const std::vector<int>& owners, bool capturing);

  // Receiver side: [p, p + bytes) of this rank, received from `sender`. Returns the address at
  // which the sender has it mapped, or 0 when the receive must take the FIFOs (exports the
  // allocation first where needed, so that a later receive can go one-copy). When `pinSlot` is
  // given and the result is not 0, *pinSlot is the slot to pin (captured calls).
  sscResult_t offer(int sender, const void* p, size_t bytes, uint64_t* peerAddress,
                    int* pinSlot = nullptr);

  // Keeps slot `slot` of this rank from being evicted until release() (graph lifetime). Any
  // thread may call release (a graph's destructor runs on a runtime thread).
  class Pin {
   public:
    explicit Pin(std::atomic<int>* count) : count_(count) { count_->fetch_add(1); }
    void release() {
      if (!released_.exchange(true)) count_->fetch_sub(1);
    }

   private:
    std::atomic<int>* count_;
    std::atomic<bool> released_{false};
  };
  std::shared_ptr<Pin> pin(int slot);

  // Closes every mapping (the communicator's work must have drained). Idempotent.
  void release();

  struct Slot;     // shared: one exported allocation (p2p_directory.cc)
  struct Confirm;  // shared: a sender's mapping of one slot

  struct Stats {
    uint64_t offers = 0, oneCopyOffers = 0, exports = 0, opens = 0, closes = 0, evictions = 0;
  };
  Stats stats() const { return stats_; }

 private:
  Slot* slot(int owner, int s) const;
  Confirm* confirm(int owner, int sender, int s) const;
  sscResult_t claimSlot(const PeerAllocation& a, int* out);

  char* seg_;
  int rank_, nranks_;
  PeerMemoryRuntime* runtime_;
  WorkClock work_;
  size_t mappedBytes_ = 0;  // unmapped at destruction when createShared mapped it
  // Owner side (local): what each of this rank's slots holds, and its generation.
  struct Own {
    PeerAllocation alloc;
    uint64_t gen = 0;  // 0: free
    uint64_t lastUse = 0;
    uint64_t lastTicket = 0;  // work issued when last offered: the launch being built if current
    bool failed = false;      // the export failed: never offered
    bool retiring = false;    // no longer offered; changes once work `retireTicket` finished
    uint64_t retireTicket = 0;
  };
  std::vector<Own> own_;
  std::unique_ptr<std::atomic<int>[]> pins_;  // [slot]
  uint64_t nextGen_ = 0, clock_ = 0;
  // Sender side (local): per (owner, slot) the generation mapped here and where.
  struct Mapped {
    uint64_t gen = 0;
    void* at = nullptr;
    PeerAllocation alloc;
    bool failed = false;   // opening this generation failed: not retried
    bool closing = false;  // the owner changed the slot: closed once work `closeTicket` finished
    uint64_t closeTicket = 0;
  };
  std::vector<std::vector<Mapped>> mapped_;  // [owner][slot]
  bool released_ = false;
  Stats stats_;
};

}  // namespace ssc
