// SPDX-License-Identifier: MIT
// The network proxy: a host thread that turns local FIFOs into network messages and back, so
// the executors (host threads, GPU kernels) keep the one FIFO protocol they use with local peers
// (transports/host/shm_transport.h, src/kernels/gpu/plan_kernel.h) and never call the network.
//
// Towards a remote peer, the executor fills an outbox FIFO in this process and advances its
// tail; the proxy sends each posted slot (an 8-byte header with the slot's byte count, then the
// data) and advances the head once the send completed, which frees the slot. From a remote peer,
// the proxy keeps a receive posted for every free slot of the executor's inbox FIFO; when one
// completes it stores the byte count and advances the tail, exactly what a local sender does.
// Counters are monotonic, as everywhere else. For GPU executors the FIFOs are pinned host memory
// the kernel maps: that is the "host-staged" path.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transports/net/net_comm.h"

namespace ssc {

// One direction of one sub-FIFO, as the proxy sees it. The counters are written by one side
// only; the other side reads them (acquire) and the writer publishes with release.
struct NetFifo {
  int peer = 0;
  int tag = 0;                                // distinct per (channel, block) of a peer; < 2^14
  std::atomic<uint64_t>* tail = nullptr;      // slots posted: outbox: executor; inbox: proxy
  std::atomic<uint64_t>* head = nullptr;      // slots freed: outbox: proxy; inbox: executor
  volatile uint64_t* slotBytes = nullptr;     // [slots]: bytes of each posted slot (whole slot)
  std::atomic<uint32_t>* tailWord = nullptr;  // optional futexes bumped with tail / head (host
  std::atomic<uint32_t>* headWord = nullptr;  // backend waits sleep on them)
  char* data = nullptr;                       // slot 0 of this FIFO
  uint64_t slotStride = 0;                    // bytes from one slot to the next
  uint64_t pieceOffset = 0;                   // this sub-FIFO's part of every slot: the bytes
  uint64_t pieceBytes = 0;                    // [off, off + min(piece, slot's bytes - off))
  int slots = 0;
};

class NetProxy {
 public:
  // Called once, from the proxy thread, when the network fails (the message says how); the
  // owner records it on the communicator and aborts its waits.
  using FailureHandler = std::function<void(const std::string& message)>;

  NetProxy(const NetComm& net, std::vector<NetFifo> outboxes, std::vector<NetFifo> inboxes,
           FailureHandler onFailure);
  // Stops the thread and abandons what is still in flight (nothing is, after a clean run).
  ~NetProxy();
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  // Asks the proxy thread to log (WARN) every FIFO's counters on its next pass: what a timeout
  // report needs to tell a lost message from a stalled peer.
  void requestDump() { dump_ = true; }

  // Bytes of sub-FIFO `f`'s piece of a slot that holds `slotBytes` bytes.
  static uint64_t pieceOf(const NetFifo& f, uint64_t slotWord);  // slotWord: (tag << 32) | bytes

 private:
  struct Pending {
    void* header = nullptr;
    void* data = nullptr;
  };
  struct Queue {
    NetFifo fifo;
    uint64_t posted = 0;            // slots handed to the network
    uint64_t completed = 0;         // of those, finished (in order)
    std::vector<Pending> requests;  // [slot]
    std::vector<uint64_t> headers;  // [slot]: byte counts in flight
  };

  void loop();
  bool progressOutbox(Queue& q);  // true when something moved
  bool progressInbox(Queue& q);
  bool finished(void* request, size_t* bytes);
  void failed(const std::string& message);

  const NetComm& net_;
  std::vector<Queue> outboxes_;
  std::vector<Queue> inboxes_;
  FailureHandler onFailure_;
  void dumpState();

  std::atomic<bool> stop_{false};
  std::atomic<bool> dump_{false};
  bool broken_ = false;
  std::thread thread_;
};

}  // namespace ssc
