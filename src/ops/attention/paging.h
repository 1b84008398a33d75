// SPDX-License-Identifier: MIT
// Where the tokens of a sharded KV cache live: which rank owns each page of a sequence under
// each interleave (Placement), and each rank's page table (PageTable). Pure host logic, no
// memory of the cache itself, so CI tests it exhaustively.
#pragma once

#include <cstdint>
#include <vector>

#include "starscream/starscream.h"

namespace ssc::attn {

enum class Interleave { kRoundRobin = 0, kContiguous = 1, kSequenceOwner = 2 };

// The placement rule, identical on every rank. Round-robin is the contiguous rule with runs of
// one page: page p of a sequence belongs to rank (p / runPages) % nranks, and is that rank's
// local slot (p / (runPages * nranks)) * runPages + p % runPages among the sequence's pages. A
// sequence-owner cache keeps all of sequence s on rank s % nranks, slot = page.
struct Placement {
  int nranks = 1;
  int pageSize = 1;
  Interleave mode = Interleave::kRoundRobin;
  int blockPages = 1;  // kContiguous only

  int runPages() const { return mode == Interleave::kContiguous ? blockPages : 1; }
  int pageOwner(int seq, int64_t page) const;
  int tokenOwner(int seq, int64_t position) const { return pageOwner(seq, position / pageSize); }
  // Index of `page` among the pages of `seq` its owner holds.
  int64_t localSlot(int seq, int64_t page) const;
  // Inverse of localSlot on `rank`: the sequence page held in that rank's slot.
  int64_t pageOfSlot(int seq, int rank, int64_t slot) const;
  // How many of the pages covering tokens [0, length) of seq `rank` owns.
  int64_t pagesOwned(int seq, int64_t length, int rank) const;
};

// Where one appended token goes on this rank: a physical page of the pool and the row in it,
// or page -1 when another rank owns it.
struct TokenSlot {
  int32_t page = -1;
  int32_t row = 0;
};

// One contiguous run of this rank's tokens of a sequence, within one physical page: rows
// [rowBegin, rowEnd) of pool page `page`, holding sequence positions firstPosition onwards.
struct PageSpan {
  int32_t page;
  int32_t rowBegin;
  int32_t rowEnd;
  int64_t firstPosition;
};

// The bookkeeping of one rank: sequence lengths (replicated: every rank sees every append),
// how many pool pages every rank uses (replicated, so an append that would overflow any rank's
// pool is refused on all of them alike), and this rank's own page lists and free pool pages.
class PageTable {
 public:
  PageTable(const Placement& placement, int rank, int maxSeqs, int maxPages);

  const Placement& placement() const { return placement_; }
  int rank() const { return rank_; }
  int maxSeqs() const { return static_cast<int>(lengths_.size()); }
  int maxPages() const { return maxPages_; }

  // Appends tokens seqIds[0..n): validates ids and every rank's pool first (nothing changes on
  // failure: sscInvalidArgument for a bad id, sscInvalidUsage when a pool would overflow), then
  // fills (*slots)[i] with token i's place here. `fn` prefixes the error messages.
  sscResult_t append(const char* fn, const int32_t* seqIds, int n, std::vector<TokenSlot>* slots);
  // Forgets seq: length 0, pages back to the pools, no trim.
  void release(int seq);
  // Forgets the tokens of seq before `position` (0 <= position <= length(seq), checked by the
  // caller): the pages holding only such tokens go back to their owners' pools (every rank's
  // count, this rank's pool), while positions, the length and the placement stay as they were.
  // Attention over seq must then start at or after trimmedFrom(seq) (the API refuses windows
  // that reach below it). A position at or below an earlier trim changes nothing.
  void trim(int seq, int64_t position);
  int64_t trimmedFrom(int seq) const { return trimmed_[seq]; }

  int64_t length(int seq) const { return lengths_[seq]; }
  // Changes whenever an append or a release changed anything, so a decode can reuse the page
  // lists it uploaded last time while the version (and its arguments) are the same.
  uint64_t version() const { return version_; }
  int64_t pagesUsed(int rank) const { return used_[rank]; }
  int64_t freePages() const { return static_cast<int64_t>(free_.size()); }
  // This rank's pool pages of seq, by local slot (-1: trimmed).
  const std::vector<int32_t>& pages(int seq) const { return pages_[seq]; }
  // This rank's tokens of seq at positions [begin, length), page by page in position order.
  // begin >= trimmedFrom(seq): a trimmed page is never part of a span.
  void spans(int seq, int64_t begin, std::vector<PageSpan>* out) const;

 private:
  Placement placement_;
  int rank_;
  int maxPages_;
  uint64_t version_ = 0;
  std::vector<int64_t> lengths_;             // [seq]
  std::vector<int64_t> trimmed_;             // [seq] tokens before this position are gone
  std::vector<int64_t> used_;                // [rank] pool pages in use
  std::vector<std::vector<int32_t>> pages_;  // [seq][local slot] this rank's pool page
  std::vector<int32_t> free_;                // this rank's free pool pages (a stack)
};

// The page lists a decode kernel walks, flattened for one upload: out[0 .. batch] are span
// offsets (sequence b's spans are [out[b], out[b + 1])), followed by 3 ints per span: pool page,
// first row, end row. starts[b] is the first position sequence seqIds[b] attends to.
void flattenSpans(const PageTable& table, const int32_t* seqIds, const int64_t* starts, int batch,
                  std::vector<int32_t>* out);

}  // namespace ssc::attn
