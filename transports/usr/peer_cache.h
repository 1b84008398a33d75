// SPDX-License-Identifier: MIT
// transports/usr: zero-copy on the application's own buffers. A collective on plain device memory
// (a PyTorch tensor, an nccl-tests buffer) needs each peer's buffer mapped into this process.
// Per call, every rank finds the allocation behind its buffers (PeerMemoryRuntime::query),
// exports it the first time it is seen, and posts (export id, offset) on the node's shared call
// table (ShmAllGather). Every rank then reads every rank's record, opens exports it has not
// opened yet, and hands back the peers' buffers as mapped here. With an allocator that reuses
// its segments (PyTorch's caching allocator, a benchmark's fixed buffers) the steady state opens
// and exports nothing: one shared-memory all-gather of a few hundred bytes per call.
//
// The table of exports is replicated: every rank applies the same records in the same order
// (tickets), so every rank holds the same entries and evicts the same ones, and an export id a
// rank posts as known is known everywhere. Keys are the runtime's allocation ids, never
// addresses: an allocation freed and a new one made at the same address is a new export, and
// the old entry (same owner, overlapping range) is dropped on every rank when the new one
// arrives. Each rank keeps at most `capacity` exports of each peer (least recently used go).
//
// Agreement without a second round: a new export is opened at the finish() of the call that
// posted it, but used from the next call on; each rank reports in its next record whether its
// opens failed, and a failure drops the unconfirmed entries everywhere (the call falls back).
// So every rank decides zero-copy from the same records, and a call waits for its peers once.
//
// Safety of the memory itself comes from the symmetric plans: a peer touches this rank's buffer
// only between the call's first and last barrier, so once this rank's call has finished (stream
// order) no peer reads or writes the buffer, and the application may free or reuse it. A mapping
// is closed only after `quiesce` (the communicator's queued work drained): a launched kernel may
// still use an entry the host has already evicted.
//
// Calls captured into a CUDA/HIP graph (Request::captured): the graph keeps the peers' addresses
// for every replay, long after `quiesce` could see its work. The caller pins the mappings such a
// call uses (pin()) until the graph is destroyed. Pins are local (each rank destroys its graphs
// when it likes), so they never change the replicated table: an entry evicted or dropped while
// pinned leaves the table on every rank alike, but its mapping is held open here, reused if its
// owner posts that very allocation again, and closed at the first call after the last pin on it
// is released. While capturing, nothing waits for the device: closes are put off to the next
// call that is not captured. And a captured call that brings new exports confirms them in a
// second exchange at once (every rank sees the same records, so all take it), so that the
// captured call itself runs zero-copy instead of being frozen into the graph on the fallback.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "starscream/starscream.h"
#include "transports/usr/peer_memory.h"
#include "transports/usr/shm_allgather.h"

namespace ssc {

class PeerMemoryCache {
 public:
  static constexpr size_t kDefaultCapacity = 64;    // exports kept per rank
  static constexpr int kMaxOpenFailures = 3;        // failed rounds of opens before giving up
  static constexpr size_t kFailedAllocsKept = 256;  // allocations remembered as failed once

  PeerMemoryCache(PeerMemoryRuntime* runtime, std::unique_ptr<ShmAllGather> table,
                  std::function<sscResult_t()> quiesce, size_t capacity = kDefaultCapacity);
  ~PeerMemoryCache();  // release()s what is still mapped
  PeerMemoryCache(const PeerMemoryCache&) = delete;
  PeerMemoryCache& operator=(const PeerMemoryCache&) = delete;

  // Bytes of opaque data a record carries for checked mode (STARSCREAM_CHECK,
  // src/comm/call_check.h).
  static constexpr size_t kCheckBytes = 48;

  // One call: its two buffers (kBufIn = 0, kBufOut = 1; null = peers do not touch this rank's)
  // and what must be equal on every rank (collective, count, type, op, root). bytes[b] is the
  // size of buffer b on every rank that posts it (set also where this rank posts none: a peer's
  // posted range is checked against it). A request with neither buffer only carries `check`
  // (checked mode posts one for every collective call).
  struct Request {
    uint64_t fingerprint = 0;
    const void* ptr[2] = {nullptr, nullptr};
    size_t bytes[2] = {0, 0};
    bool inPlace = false;
    bool captured = false;        // the call is being captured into a graph (see the top)
    const void* check = nullptr;  // kCheckBytes posted as they are; null: zeros
  };
  struct Result {
    bool zeroCopy = false;    // every rank's buffers are mapped everywhere
    bool anyInPlace = false;  // some rank called in place (all must then run the in-place plan)
    bool allInPlace = false;  // every rank called in place
    // [buffer][rank] as addressed here, when zeroCopy; empty when no rank posted the buffer,
    // null for a rank that did not.
    std::vector<void*> peers[2];
    // Every rank's check bytes (rank q's at q * kCheckBytes) once the records were collected,
    // also when finish() then fails; empty when they were not.
    std::vector<uint8_t> checks;
    // (owner, allocation id) of every peer's mapping in `peers` (what pin() holds).
    std::vector<std::pair<int, uint64_t>> mappings;
    // A captured call's new exports wait for a second exchange: confirm() completes the call.
    bool confirmPending = false;
    uint64_t confirmTicket = 0;
  };

  // A hold on the mappings of one zero-copy result (a captured call's): they stay open until
  // release(), which any thread may call (a graph's destructor runs on a runtime thread).
  class Pin {
   public:
    void release() { released_.store(true); }

   private:
    friend class PeerMemoryCache;
    std::vector<std::pair<int, uint64_t>> keys_;
    std::atomic<bool> released_{false};
  };
  // Pins what `res` (a zero-copy Result of this cache's last finish()) maps.
  std::shared_ptr<Pin> pin(const Result& res);

  // Posts this rank's record for the next call (local; waits only for ring space).
  sscResult_t post(const Request& req, uint64_t* ticket);
  // Waits for every rank's record of `ticket` (posted with `req`), brings the table up to date
  // and fills `out`. Fails (on every rank alike) when the ranks' fingerprints differ.
  sscResult_t finish(uint64_t ticket, const Request& req, Result* out);
  // When finish() left out->confirmPending (a captured call brought new exports; the same on
  // every rank): waits for every rank's confirmation and completes `out`. Call it after
  // finishing every other communicator's pending call (a thread driving several communicators
  // must post before it waits). A no-op otherwise.
  sscResult_t confirm(const Request& req, Result* out);
  // Closes every mapping (the communicator's work must have drained). Idempotent.
  void release();

  // Drops the entries of `owner`'s exports that overlap `range` (an allocation of `owner`; an
  // entry of that very allocation, the same non-zero id, stays),
  // closing their mappings now, once the communicator's queued work drained. For a registration
  // (sscCommRegister) of memory the owner allocated where an allocation this cache still maps
  // used to be: the runtime refuses to map the new one while the stale mapping of the old one
  // exists ("resource already mapped", measured on the H200 under CUDA 13). Every rank must call
  // it with the same arguments at the same point of its calls (registration is collective), so
  // the replicated tables stay alike.
  sscResult_t dropOverlapping(int owner, const PeerAllocation& range);

  // False once opening peers' exports failed kMaxOpenFailures times with no export opened by
  // every rank in between (on every rank alike), counting only allocations that failed before
  // (an allocation its owner freed before a peer opened it fails once and is never posted again).
  bool enabled() const { return enabled_; }

  struct Stats {
    uint64_t calls = 0, zeroCopyCalls = 0, exports = 0, opens = 0, closes = 0, evictions = 0;
  };
  Stats stats() const { return stats_; }
  // Exports of `rank` this rank holds (tests).
  size_t entries(int rank) const { return table_[rank].size(); }
  // Peers' allocations pinned now, and mappings held open only by pins (tests).
  size_t pinnedMappings() const { return pinCount_.size(); }
  size_t heldMappings() const { return held_.size(); }

 private:
  struct Entry {
    PeerAllocation alloc;
    void* mapped = nullptr;  // peers' exports: the mapping here; own: the allocation's base
    uint64_t lastUse = 0;
    bool confirmed = false;  // every rank opened it (known one call after its insertion)
  };
  struct Record;

  using Key = std::pair<int, uint64_t>;  // (owner, allocation id)
  sscResult_t drop(int q, std::map<uint64_t, Entry>::iterator it);
  sscResult_t closeLater(void* mapped, const PeerAllocation& alloc);
  sscResult_t sweepPins();
  sscResult_t flushCloses();
  sscResult_t settleOpens(const std::vector<Record>& all, bool* failed);
  sscResult_t conclude(const Request& req, Result* out);
  bool usableNow(const std::vector<Record>& all, const Request& req) const;
  void rememberFailed(const std::pair<int, uint64_t>& key);
  sscResult_t evict(int q);
  sscResult_t quiesceOnce();

  PeerMemoryRuntime* runtime_;
  std::unique_ptr<ShmAllGather> shared_;
  std::function<sscResult_t()> quiesce_;
  bool quiesced_ = false;  // within one finish(): drained once already
  size_t capacity_;
  int rank_, nranks_;
  std::vector<Record> all_;                       // the records of the call being finished
  std::vector<std::map<uint64_t, Entry>> table_;  // [rank]: export id -> entry (replicated)
  std::map<uint64_t, uint64_t> own_;              // own allocation id -> export id (local)
  std::vector<std::pair<void*, PeerAllocation>> deferred_;  // closes that must wait for release()
  std::vector<std::pair<void*, PeerAllocation>> later_;     // closes put off while capturing
  bool capturing_ = false;  // within a captured call's finish(): no quiesce, no close
  std::vector<std::shared_ptr<Pin>> pins_;                // live pins (swept each finish())
  std::map<Key, int> pinCount_;                           // pins per peer allocation
  std::map<Key, std::pair<void*, PeerAllocation>> held_;  // out of the table, held by pins
  uint64_t nextExport_ = 0;
  uint64_t clock_ = 0;        // finish() calls so far (the same on every rank)
  uint32_t failedOpens_ = 0;  // opens that failed in this rank's last finish() (posted next)
  int openFailures_ = 0;      // failed rounds of opens since one last succeeded everywhere
  // (owner, allocation id) of exports dropped after a failed round (replicated), bounded.
  std::set<std::pair<int, uint64_t>> failedAllocs_;
  std::deque<std::pair<int, uint64_t>> failedOrder_;
  bool enabled_ = true;
  bool released_ = false;
  Stats stats_;
};

}  // namespace ssc
