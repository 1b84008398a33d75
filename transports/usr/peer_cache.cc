// SPDX-License-Identifier: MIT
#include "transports/usr/peer_cache.h"

#include <cstring>

#include "src/core/errors.h"
#include "src/core/log.h"

namespace ssc {

namespace {

// One buffer of one rank's call, as posted on the shared call table.
struct PostedBuffer {
  uint64_t exportId;  // this rank's export of the allocation (0: none)
  uint64_t offset;    // of the call's buffer in the allocation
  uint64_t base;      // PeerAllocation of the export
  uint64_t bytes;
  uint64_t id;
  uint32_t isNew;      // first post of this export: handle is valid, peers open it
  uint32_t shareable;  // 0: the buffer is needed but cannot be shared (the call falls back)
  uint8_t handle[kPeerHandleBytes];
};

bool overlaps(const PeerAllocation& a, const PeerAllocation& b) {
  return a.base < b.base + b.bytes && b.base < a.base + a.bytes;
}

}  // namespace

struct PeerMemoryCache::Record {
  uint64_t fingerprint;
  uint32_t inPlace;
  uint32_t failedOpens;  // opens that failed in this rank's previous finish()
  uint32_t needed;       // bit b: buffer b is touched by peers in this call
  uint32_t captured;     // the call is being captured into a graph
  PostedBuffer buf[2];
  uint8_t check[PeerMemoryCache::kCheckBytes];
};

PeerMemoryCache::PeerMemoryCache(PeerMemoryRuntime* runtime, std::unique_ptr<ShmAllGather> table,
                                 std::function<sscResult_t()> quiesce, size_t capacity)
    : runtime_(runtime),
      shared_(std::move(table)),
      quiesce_(std::move(quiesce)),
      capacity_(capacity < 2 ? 2 : capacity),
      rank_(shared_->rank()),
      nranks_(shared_->nranks()),
      table_(static_cast<size_t>(shared_->nranks())) {}

PeerMemoryCache::~PeerMemoryCache() { release(); }

sscResult_t PeerMemoryCache::post(const Request& req, uint64_t* ticket) {
  static_assert(sizeof(Record) <= ShmAllGather::kMaxBytes,
                "a call's record must fit a slot of the shared call table");
  Record r;
  std::memset(&r, 0, sizeof(r));
  r.fingerprint = req.fingerprint;
  r.inPlace = req.inPlace ? 1 : 0;
  r.captured = req.captured ? 1 : 0;
  r.failedOpens = failedOpens_;
  if (req.check != nullptr) std::memcpy(r.check, req.check, kCheckBytes);
  for (int b = 0; b < 2; ++b) {
    if (req.ptr[b] == nullptr) continue;
    r.needed |= 1u << b;
    PostedBuffer& pb = r.buf[b];
    PeerAllocation a;
    std::string why;
    if (!runtime_->query(req.ptr[b], req.bytes[b], &a, &why)) {
      SSC_LOG(kTrace, "buffer {} ({} bytes) cannot be mapped by peers: {}", req.ptr[b],
              req.bytes[b], why);
      continue;
    }
    auto known = own_.find(a.id);
    if (known != own_.end()) {
      pb.exportId = known->second;
    } else {
      if (!runtime_->exportHandle(a, pb.handle, &why)) {
        SSC_LOG(kInfo,
                "exporting the allocation at {:#x} ({} bytes) failed: {}; calls on it use "
                "the staged or FIFO path",
                a.base, a.bytes, why);
        continue;
      }
      pb.exportId = ++nextExport_;
      pb.isNew = 1;
      own_[a.id] = pb.exportId;
      ++stats_.exports;
    }
    pb.offset = reinterpret_cast<uintptr_t>(req.ptr[b]) - a.base;
    pb.base = a.base;
    pb.bytes = a.bytes;
    pb.id = a.id;
    pb.shareable = 1;
  }
  return shared_->post(&r, sizeof(r), ticket);
}

sscResult_t PeerMemoryCache::quiesceOnce() {
  if (quiesced_ || !quiesce_) return sscSuccess;
  SSC_CHECK(quiesce_());
  quiesced_ = true;
  return sscSuccess;
}

sscResult_t PeerMemoryCache::closeLater(void* mapped, const PeerAllocation& alloc) {
  // While capturing nothing may wait for the device: the next call that is not captured closes.
  if (capturing_) {
    later_.push_back({mapped, alloc});
    return sscSuccess;
  }
  // Work already launched may still read the mapping: close it once the communicator's queued
  // work is done; if that wait fails (a kernel timed out), keep it mapped until release.
  if (quiesceOnce() == sscSuccess) {
    runtime_->close(mapped, alloc);
    ++stats_.closes;
  } else {
    deferred_.push_back({mapped, alloc});
  }
  return sscSuccess;
}

sscResult_t PeerMemoryCache::drop(int q, std::map<uint64_t, Entry>::iterator it) {
  Entry& e = it->second;
  if (q != rank_ && e.mapped != nullptr) {
    // A captured graph still uses this mapping: hold it (the table entry goes on every rank).
    const Key key{q, e.alloc.id};
    if (pinCount_.count(key) != 0)
      held_[key] = {e.mapped, e.alloc};
    else
      SSC_CHECK(closeLater(e.mapped, e.alloc));
  }
  if (q == rank_) {
    auto own = own_.find(e.alloc.id);
    if (own != own_.end() && own->second == it->first) own_.erase(own);
  }
  table_[q].erase(it);
  return sscSuccess;
}

std::shared_ptr<PeerMemoryCache::Pin> PeerMemoryCache::pin(const Result& res) {
  auto p = std::make_shared<Pin>();
  p->keys_ = res.mappings;
  for (const Key& k : p->keys_) ++pinCount_[k];
  pins_.push_back(p);
  return p;
}

sscResult_t PeerMemoryCache::sweepPins() {
  for (auto it = pins_.begin(); it != pins_.end();) {
    if (!(*it)->released_.load()) {
      ++it;
      continue;
    }
    for (const Key& k : (*it)->keys_) {
      auto c = pinCount_.find(k);
      if (c == pinCount_.end() || --c->second > 0) continue;
      pinCount_.erase(c);
      auto h = held_.find(k);
      if (h == held_.end()) continue;  // still in the table: closed when it leaves
      const auto mapping = h->second;
      held_.erase(h);
      SSC_CHECK(closeLater(mapping.first, mapping.second));
    }
    it = pins_.erase(it);
  }
  return sscSuccess;
}

sscResult_t PeerMemoryCache::flushCloses() {
  if (capturing_ || later_.empty()) return sscSuccess;
  auto closes = std::move(later_);
  later_.clear();
  for (auto& [mapped, alloc] : closes) SSC_CHECK(closeLater(mapped, alloc));
  return sscSuccess;
}

void PeerMemoryCache::rememberFailed(const std::pair<int, uint64_t>& key) {
  if (!failedAllocs_.insert(key).second) return;
  failedOrder_.push_back(key);
  // Bounded: the oldest go first (every rank inserts the same keys in the same order).
  while (failedOrder_.size() > kFailedAllocsKept) {
    failedAllocs_.erase(failedOrder_.front());
    failedOrder_.pop_front();
  }
}

sscResult_t PeerMemoryCache::dropOverlapping(int owner, const PeerAllocation& range) {
  if (owner < 0 || owner >= nranks_ || released_) return sscSuccess;
  quiesced_ = false;   // outside finish(): the queued work must drain before any close
  capturing_ = false;  // registration is not captured: close now (the runtime needs it)
  SSC_CHECK(flushCloses());
  auto& t = table_[owner];
  for (auto it = t.begin(); it != t.end();) {
    auto next = std::next(it);
    // The very allocation (same id) is not stale: it stays.
    const bool same = range.id != 0 && it->second.alloc.id == range.id;
    if (!same && overlaps(it->second.alloc, range)) SSC_CHECK(drop(owner, it));
    it = next;
  }
  return sscSuccess;
}

sscResult_t PeerMemoryCache::evict(int q) {
  auto& t = table_[q];
  while (t.size() > capacity_) {
    auto victim = t.end();
    for (auto it = t.begin(); it != t.end(); ++it)
      if (it->second.lastUse < clock_ &&
          (victim == t.end() || it->second.lastUse < victim->second.lastUse))
        victim = it;
    if (victim == t.end()) break;  // everything was used by this very call
    SSC_CHECK(drop(q, victim));
    ++stats_.evictions;
  }
  return sscSuccess;
}

// Step 1 of every exchange: the previous round's opens are confirmed everywhere, or a failure
// (any record's failedOpens) drops every unconfirmed entry. Depends only on the records.
sscResult_t PeerMemoryCache::settleOpens(const std::vector<Record>& all, bool* failedOut) {
  bool failed = false, confirmedSome = false, failedBefore = false;
  for (const Record& r : all) failed = failed || r.failedOpens != 0;
  for (int q = 0; q < nranks_; ++q) {
    auto& t = table_[q];
    for (auto it = t.begin(); it != t.end();) {
      auto next = std::next(it);
      if (!it->second.confirmed) {
        if (failed) {
          const std::pair<int, uint64_t> key{q, it->second.alloc.id};
          failedBefore = failedBefore || failedAllocs_.count(key) != 0;
          rememberFailed(key);
          SSC_CHECK(drop(q, it));
        } else {
          it->second.confirmed = confirmedSome = true;
        }
      }
      it = next;
    }
  }
  // Failures count until some export is opened everywhere again, and only where an allocation
  // failed a second time: its owner posted it again, so it is alive and the runtime cannot open
  // it. A first failure may be an owner that freed its buffer before a slow peer opened it (the
  // owner does not wait for that: a program that allocates a buffer per call and frees it right
  // after), which says nothing about the runtime; counting those once turned zero-copy off for
  // the rest of a communicator's life (mpirun tests at 6 ranks, 65-byte buffers of the
  // small-count cases).
  if (confirmedSome) openFailures_ = 0;
  if (failed && failedBefore && ++openFailures_ >= kMaxOpenFailures && enabled_) {
    enabled_ = false;
    SSC_LOG(kWarn,
            "opening peers' buffers failed {} times with no success in between: calls on "
            "plain buffers stop trying zero-copy on this communicator (staged or FIFO path)",
            openFailures_);
  }
  *failedOut = failed;
  return sscSuccess;
}

// Whether every buffer the records name is in the table, confirmed, mapped and large enough.
bool PeerMemoryCache::usableNow(const std::vector<Record>& all, const Request& req) const {
  if (!enabled_) return false;
  for (int q = 0; q < nranks_; ++q)
    for (int b = 0; b < 2; ++b) {
      if ((all[q].needed & (1u << b)) == 0) continue;
      const PostedBuffer& pb = all[q].buf[b];
      if (!pb.shareable) return false;
      auto it = table_[q].find(pb.exportId);
      if (it == table_[q].end() || !it->second.confirmed ||
          (q != rank_ && it->second.mapped == nullptr) ||
          pb.offset + req.bytes[b] > it->second.alloc.bytes)
        return false;
    }
  return true;
}

sscResult_t PeerMemoryCache::finish(uint64_t ticket, const Request& req, Result* out) {
  out->zeroCopy = false;
  out->anyInPlace = req.inPlace;
  out->allInPlace = req.inPlace;
  out->peers[0].clear();
  out->peers[1].clear();
  out->mappings.clear();
  out->confirmPending = false;
  all_.assign(static_cast<size_t>(nranks_), Record{});
  std::vector<Record>& all = all_;
  out->checks.clear();
  SSC_CHECK(shared_->collect(ticket, all.data(), sizeof(Record)));
  out->checks.resize(static_cast<size_t>(nranks_) * kCheckBytes);
  for (int q = 0; q < nranks_; ++q)
    std::memcpy(out->checks.data() + static_cast<size_t>(q) * kCheckBytes, all[q].check,
                kCheckBytes);
  ++clock_;
  ++stats_.calls;
  quiesced_ = false;
  capturing_ = req.captured;
  // Local: pins released since the last call, closes put off while capturing.
  SSC_CHECK(sweepPins());
  SSC_CHECK(flushCloses());

  // Everything below depends only on the records, so every rank updates its table alike.
  // 1. The previous call's opens: confirmed everywhere, or a failure drops what is unconfirmed.
  bool failed = false;
  SSC_CHECK(settleOpens(all, &failed));

  // 2. This call's records: insert new exports (opening peers'), touch known ones.
  failedOpens_ = 0;
  int mismatch = -1;
  bool anyNew = false, anyCaptured = false;
  for (int q = 0; q < nranks_; ++q) {
    const Record& r = all[q];
    if (r.fingerprint != all[rank_].fingerprint && mismatch < 0) mismatch = q;
    out->anyInPlace = out->anyInPlace || r.inPlace != 0;
    out->allInPlace = out->allInPlace && r.inPlace != 0;
    anyCaptured = anyCaptured || r.captured != 0;
    for (int b = 0; b < 2; ++b) {
      if ((r.needed & (1u << b)) == 0) continue;
      const PostedBuffer& pb = r.buf[b];
      if (!pb.shareable) continue;
      auto& t = table_[q];
      if (pb.isNew) {
        anyNew = true;
        const PeerAllocation alloc{pb.base, pb.bytes, pb.id};
        // Same owner, overlapping range: the old allocation is gone (freed, and this one made
        // where it was). Drop its entry so no stale mapping outlives it.
        for (auto it = t.begin(); it != t.end();) {
          auto next = std::next(it);
          if (overlaps(it->second.alloc, alloc)) SSC_CHECK(drop(q, it));
          it = next;
        }
        Entry e;
        e.alloc = alloc;
        e.lastUse = clock_;
        if (q == rank_) {
          e.mapped = reinterpret_cast<void*>(pb.base);
        } else if (auto h = held_.find({q, alloc.id}); h != held_.end()) {
          // Evicted while a graph pinned it, and posted again: the mapping is still open.
          e.mapped = h->second.first;
          held_.erase(h);
        } else {
          std::string why;
          if (runtime_->open(pb.handle, alloc, &e.mapped, &why)) {
            ++stats_.opens;
          } else {
            e.mapped = nullptr;
            ++failedOpens_;
            SSC_LOG(kWarn,
                    "mapping rank {}'s allocation ({} bytes) failed: {}; the ranks fall back "
                    "to the staged or FIFO path for it",
                    q, pb.bytes, why);
          }
        }
        t[pb.exportId] = e;  // used once every rank has confirmed its open
        continue;
      }
      auto it = t.find(pb.exportId);
      if (it == t.end()) {
        // Expected right after a failed open dropped it (its owner posted before learning so);
        // anything else means the replicated tables diverged.
        if (!failed)
          SSC_LOG(kWarn,
                  "rank {} names export {} that this rank does not hold (internal: the "
                  "replicated tables diverged); falling back for this call",
                  q, pb.exportId);
        continue;
      }
      it->second.lastUse = clock_;
    }
  }
  for (int q = 0; q < nranks_; ++q) SSC_CHECK(evict(q));
  if (mismatch >= 0)
    return fail(sscInvalidUsage,
                "rank {} issued a different call than rank {} at the same point "
                "(collective, count, type, op or root differ)",
                mismatch, rank_);
  if (anyCaptured && anyNew && enabled_) {
    // A graph would keep this call's fallback for every replay: confirm the new exports now, in
    // a second exchange every rank takes (the same records decide). Posted here, collected by
    // confirm(), so that a thread driving several communicators posts all before waiting.
    Record r;
    std::memset(&r, 0, sizeof(r));
    r.fingerprint = all[rank_].fingerprint;
    r.captured = 1;
    r.failedOpens = failedOpens_;
    SSC_CHECK(shared_->post(&r, sizeof(r), &out->confirmTicket));
    out->confirmPending = true;
    failedOpens_ = 0;  // reported by that record
    return sscSuccess;
  }
  return conclude(req, out);
}

sscResult_t PeerMemoryCache::confirm(const Request& req, Result* out) {
  if (!out->confirmPending) return sscSuccess;
  out->confirmPending = false;
  std::vector<Record> conf(static_cast<size_t>(nranks_));
  SSC_CHECK(shared_->collect(out->confirmTicket, conf.data(), sizeof(Record)));
  quiesced_ = false;
  bool failed = false;
  SSC_CHECK(settleOpens(conf, &failed));
  return conclude(req, out);
}

sscResult_t PeerMemoryCache::conclude(const Request& req, Result* out) {
  const std::vector<Record>& all = all_;
  // A buffer may be posted by some ranks only (a broadcast's input: the root's; a reduce's
  // output: the root's); the others' entries stay null.
  uint32_t posted = 0;
  for (const Record& r : all) posted |= r.needed;
  if (posted == 0 || !usableNow(all, req)) return sscSuccess;
  for (int b = 0; b < 2; ++b) {
    if ((posted & (1u << b)) == 0) continue;
    out->peers[b].assign(static_cast<size_t>(nranks_), nullptr);
    for (int q = 0; q < nranks_; ++q) {
      if ((all[q].needed & (1u << b)) == 0) continue;
      const PostedBuffer& pb = all[q].buf[b];
      if (q == rank_) {
        out->peers[b][q] = const_cast<void*>(req.ptr[b]);
        continue;
      }
      const Entry& e = table_[q].at(pb.exportId);
      out->peers[b][q] = static_cast<char*>(e.mapped) + pb.offset;
      out->mappings.emplace_back(q, e.alloc.id);
    }
  }
  out->zeroCopy = true;
  ++stats_.zeroCopyCalls;
  return sscSuccess;
}

void PeerMemoryCache::release() {
  if (released_) return;
  released_ = true;
  for (int q = 0; q < nranks_; ++q) {
    if (q == rank_) continue;
    for (auto& [id, e] : table_[q])
      if (e.mapped != nullptr) {
        runtime_->close(e.mapped, e.alloc);
        ++stats_.closes;
      }
  }
  for (auto& [mapped, alloc] : deferred_) runtime_->close(mapped, alloc);
  deferred_.clear();
  // A graph that still holds these must not be replayed after its communicator is gone.
  for (auto& [mapped, alloc] : later_) runtime_->close(mapped, alloc);
  later_.clear();
  for (auto& [key, mapping] : held_) runtime_->close(mapping.first, mapping.second);
  held_.clear();
  for (auto& t : table_) t.clear();
  own_.clear();
}

}  // namespace ssc
