// SPDX-License-Identifier: MIT
// The peers' KV pools, mapped here, and every rank's page table mirrored here: what a prefill
// needs to read all of a sequence's pages in place instead of exchanging partials (the
// KV-side strategy, docs/attention.md "How a prefill runs").
//
// The pools are registered on the communicator at cache create (collective: every rank takes
// the same branch, as with the fused exchange's scratch). A page table changes only through
// calls every rank makes with the same arguments (append, release, trim) and allocates pages
// deterministically, so replaying each call on a copy of every other rank's table gives that
// rank's physical pages exactly, with no message.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/ops/attention/paging.h"
#include "starscream/starscream.h"

struct sscKvCache;

namespace ssc::attn {

class PeerPools {
 public:
  // Collective over c->comm. Leaves enabled() false, with the reason in *why, where the pools
  // cannot be mapped (one rank, several nodes, more ranks than a kernel takes, a backend that
  // does not map); every rank reaches the same verdict.
  sscResult_t setup(sscKvCache* c, int maxRanks, std::string* why);
  // Local: deregisters (while the communicator lives). The pools themselves are the cache's.
  void destroy(sscKvCache* c);

  bool enabled() const { return !k_.empty(); }
  int nranks() const { return static_cast<int>(k_.size()); }
  const void* k(int rank) const { return k_[rank]; }
  const void* v(int rank) const { return v_[rank]; }
  // Rank q's page table: c->table for this rank, its mirror otherwise.
  const PageTable& table(int q) const { return mirrors_[q] ? *mirrors_[q] : *own_; }

  // Orders this rank's reads of the peers' pools after everything queued on their streams
  // before (their appends) and after their earlier reads of this rank's pool: a collective of
  // one word on `stream`, which completes on a rank only once every rank has reached it. A
  // prefill that reads the peers' pages calls it before its first read and, unless the
  // rows' gather that follows is itself such a collective, after its last.
  sscResult_t barrier(sscKvCache* c, sscStream_t stream);

  // Replay on the mirrors what the cache's own table just did (the caller checked the
  // arguments and the own table accepted them, so every mirror accepts them too).
  void append(const int32_t* seqIds, int n);
  void release(int seq);
  void trim(int seq, int64_t position);

 private:
  const PageTable* own_ = nullptr;
  std::vector<std::unique_ptr<PageTable>> mirrors_;  // [rank]; null at this rank
  std::vector<const void*> k_, v_;                   // [rank] pools as mapped here
  void* kHandle_ = nullptr;
  void* vHandle_ = nullptr;
  void* word_ = nullptr;            // the barrier's int32 (backend memory)
  std::vector<TokenSlot> scratch_;  // the mirrors' slots, unused
};

}  // namespace ssc::attn
