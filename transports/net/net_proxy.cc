// SPDX-License-Identifier: MIT
#include "transports/net/net_proxy.h"

#include <algorithm>
#include <chrono>

#include "src/core/futex_wait.h"
#include "src/core/log.h"

namespace ssc {

namespace {

// A message's two parts travel with two tags, so a data receive never matches a header.
int headerTag(const NetFifo& f) { return 2 * f.tag; }
int dataTag(const NetFifo& f) { return 2 * f.tag + 1; }

void bump(std::atomic<uint32_t>* word) {
  if (word != nullptr) shmNotify(word);
}

// How long the destructor lets sends still in flight finish before abandoning them (a clean run
// has none left: every slot a peer consumed was received in full).
constexpr auto kDrainLimit = std::chrono::seconds(2);

}  // namespace

uint64_t NetProxy::pieceOf(const NetFifo& f, uint64_t slotWord) {
  // A slot's size word carries the step's tag in its upper half (src/collectives/plan.h's
  // Step::tag); the bytes are the lower half. The word travels whole, for the receiver's check.
  const uint64_t slotBytes = slotWord & 0xffffffffu;
  return slotBytes > f.pieceOffset ? std::min(f.pieceBytes, slotBytes - f.pieceOffset) : 0;
}

NetProxy::NetProxy(const NetComm& net, std::vector<NetFifo> outboxes, std::vector<NetFifo> inboxes,
                   FailureHandler onFailure)
    : net_(net), onFailure_(std::move(onFailure)) {
  // Counters start where each FIFO stands (0 for a fresh one): nothing is in flight yet.
  auto queues = [](std::vector<NetFifo>& fifos, bool outbox) {
    std::vector<Queue> out(fifos.size());
    for (size_t i = 0; i < fifos.size(); ++i) {
      out[i].fifo = fifos[i];
      out[i].requests.resize(fifos[i].slots);
      out[i].headers.resize(fifos[i].slots);
      out[i].posted = out[i].completed =
          (outbox ? fifos[i].head : fifos[i].tail)->load(std::memory_order_acquire);
    }
    return out;
  };
  outboxes_ = queues(outboxes, true);
  inboxes_ = queues(inboxes, false);
  thread_ = std::thread([this] { loop(); });
}

NetProxy::~NetProxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void NetProxy::failed(const std::string& message) {
  if (broken_) return;
  broken_ = true;
  SSC_LOG(kWarn, "net transport: {}", message);
  onFailure_(message);
}

bool NetProxy::finished(void* request, size_t* bytes) {
  int done = 0;
  sscNetError_t err{};
  if (net_.ops().test(request, &done, bytes, &err) != 0) {
    failed(err.text);
    return false;
  }
  return done != 0;
}

bool NetProxy::progressOutbox(Queue& q) {
  const NetFifo& f = q.fifo;
  const auto slots = static_cast<uint64_t>(f.slots);
  bool moved = false;
  // Hand newly posted slots to the network.
  const uint64_t tail = f.tail->load(std::memory_order_acquire);
  while (q.posted < tail && !broken_) {
    const uint64_t s = q.posted % slots;
    q.headers[s] = f.slotBytes[s];
    char* data = f.data + s * f.slotStride + f.pieceOffset;
    sscNetError_t err{};
    Pending& p = q.requests[s];
    if (net_.ops().isend(net_.handle(), f.peer, headerTag(f), &q.headers[s], sizeof(uint64_t),
                         &p.header, &err) != 0 ||
        net_.ops().isend(net_.handle(), f.peer, dataTag(f), data, pieceOf(f, q.headers[s]), &p.data,
                         &err) != 0) {
      failed(fmt::format("sending to rank {}: {}", f.peer, err.text));
      return false;
    }
    SSC_LOG(kTrace, "net: send slot {} ({} bytes) to rank {} tag {}", q.posted,
            q.headers[s] & 0xffffffffu, f.peer, f.tag);
    ++q.posted;
    moved = true;
  }
  // Free slots whose sends finished, in order (the executor reuses them round-robin).
  while (q.completed < q.posted && !broken_) {
    Pending& p = q.requests[q.completed % slots];
    size_t bytes = 0;
    if (p.header != nullptr && finished(p.header, &bytes)) p.header = nullptr;
    if (p.data != nullptr && finished(p.data, &bytes)) p.data = nullptr;
    if (p.header != nullptr || p.data != nullptr) break;
    ++q.completed;
    f.head->store(q.completed, std::memory_order_release);
    bump(f.headWord);
    moved = true;
  }
  return moved;
}

bool NetProxy::progressInbox(Queue& q) {
  const NetFifo& f = q.fifo;
  const auto slots = static_cast<uint64_t>(f.slots);
  bool moved = false;
  // Keep a receive posted for every slot the executor has freed.
  const uint64_t head = f.head->load(std::memory_order_acquire);
  while (q.posted < head + slots && !broken_) {
    const uint64_t s = q.posted % slots;
    char* data = f.data + s * f.slotStride + f.pieceOffset;
    sscNetError_t err{};
    Pending& p = q.requests[s];
    if (net_.ops().irecv(net_.handle(), f.peer, headerTag(f), &q.headers[s], sizeof(uint64_t),
                         &p.header, &err) != 0 ||
        net_.ops().irecv(net_.handle(), f.peer, dataTag(f), data, f.pieceBytes, &p.data, &err) !=
            0) {
      failed(fmt::format("receiving from rank {}: {}", f.peer, err.text));
      return false;
    }
    ++q.posted;
    moved = true;
  }
  // Publish arrived slots in order, as a local sender would: byte count, then tail.
  while (q.completed < q.posted && !broken_) {
    const uint64_t s = q.completed % slots;
    Pending& p = q.requests[s];
    size_t bytes = 0;
    if (p.header != nullptr && finished(p.header, &bytes)) p.header = nullptr;
    if (p.header == nullptr && p.data != nullptr) {
      if (!finished(p.data, &bytes)) break;
      p.data = nullptr;
      if (bytes != pieceOf(f, q.headers[s])) {
        failed(fmt::format("rank {} sent {} bytes of a slot whose header says {} (piece {})",
                           f.peer, bytes, q.headers[s] & 0xffffffffu, pieceOf(f, q.headers[s])));
        return false;
      }
    }
    if (p.header != nullptr || p.data != nullptr) break;
    f.slotBytes[s] = q.headers[s];
    SSC_LOG(kTrace, "net: received slot {} ({} bytes) from rank {} tag {}", q.completed,
            q.headers[s] & 0xffffffffu, f.peer, f.tag);
    ++q.completed;
    f.tail->store(q.completed, std::memory_order_release);
    bump(f.tailWord);
    moved = true;
  }
  return moved;
}

void NetProxy::dumpState() {
  auto line = [](const char* kind, const Queue& q) {
    const NetFifo& f = q.fifo;
    return fmt::format(
        "\n  {} rank {} tag {}: executor tail {} head {}, proxy posted {} completed {}", kind,
        f.peer, f.tag, f.tail->load(), f.head->load(), q.posted, q.completed);
  };
  std::string text;
  for (const Queue& q : outboxes_) text += line("to  ", q);
  for (const Queue& q : inboxes_) text += line("from", q);
  SSC_LOG(kWarn, "net transport state{}{}", broken_ ? " (failed)" : "", text);
}

void NetProxy::loop() {
  // Spin while traffic flows (the network needs polling to progress), yield when it pauses,
  // then nap: a proxy of an idle communicator must not take a core from the ranks it serves.
  int idle = 0;
  std::chrono::steady_clock::time_point drainDeadline{};
  for (;;) {
    // Read before progressing: the owner posts its last slots before it asks to stop, so a pass
    // that starts after the request sees them (checking after the pass could miss them).
    const bool stopping = stop_.load();
    if (dump_.exchange(false)) dumpState();
    bool moved = false;
    if (!broken_) {
      for (Queue& q : outboxes_) moved |= progressOutbox(q);
      for (Queue& q : inboxes_) moved |= progressInbox(q);
    }
    if (stopping) {
      const auto now = std::chrono::steady_clock::now();
      if (drainDeadline == std::chrono::steady_clock::time_point{})
        drainDeadline = now + kDrainLimit;
      bool sending = false;
      for (const Queue& q : outboxes_) sending |= q.completed < q.posted;
      if (!sending || broken_ || now > drainDeadline) break;
    }
    if (moved) {
      idle = 0;
    } else if (++idle > 2048) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } else if (idle > 64) {
      std::this_thread::yield();
    }
  }
  // Abandon what is in flight: receives posted for slots no peer will fill, and (after a failure
  // or the drain limit) sends.
  sscNetError_t err{};
  for (auto* queues : {&outboxes_, &inboxes_})
    for (Queue& q : *queues)
      for (Pending& p : q.requests)
        for (void** r : {&p.header, &p.data})
          if (*r != nullptr) {
            if (net_.ops().cancel(*r, &err) != 0) SSC_LOG(kWarn, "net transport: {}", err.text);
            *r = nullptr;
          }
}

}  // namespace ssc
