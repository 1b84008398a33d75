// SPDX-License-Identifier: MIT
#include "src/ops/attention/paging.h"

#include <algorithm>
#include <map>

#include "src/core/errors.h"

namespace ssc::attn {

int Placement::pageOwner(int seq, int64_t page) const {
  if (mode == Interleave::kSequenceOwner) return seq % nranks;
  return static_cast<int>((page / runPages()) % nranks);
}

int64_t Placement::localSlot(int seq, int64_t page) const {
  (void)seq;
  if (mode == Interleave::kSequenceOwner) return page;
  const int64_t run = runPages();
  return (page / (run * nranks)) * run + page % run;
}

int64_t Placement::pageOfSlot(int seq, int rank, int64_t slot) const {
  (void)seq;
  if (mode == Interleave::kSequenceOwner) return slot;
  const int64_t run = runPages();
  return (slot / run) * run * nranks + static_cast<int64_t>(rank) * run + slot % run;
}

int64_t Placement::pagesOwned(int seq, int64_t length, int rank) const {
  const int64_t pages = (length + pageSize - 1) / pageSize;
  if (mode == Interleave::kSequenceOwner) return seq % nranks == rank ? pages : 0;
  const int64_t run = runPages(), cycle = run * nranks;
  const int64_t rest = pages % cycle - static_cast<int64_t>(rank) * run;
  return (pages / cycle) * run + std::clamp<int64_t>(rest, 0, run);
}

PageTable::PageTable(const Placement& placement, int rank, int maxSeqs, int maxPages)
    : placement_(placement),
      rank_(rank),
      maxPages_(maxPages),
      lengths_(maxSeqs, 0),
      trimmed_(maxSeqs, 0),
      used_(placement.nranks, 0),
      pages_(maxSeqs) {
  // Hand out low page numbers first (a stack popped from the back).
  free_.reserve(maxPages);
  for (int p = maxPages - 1; p >= 0; --p) free_.push_back(p);
}

sscResult_t PageTable::append(const char* fn, const int32_t* seqIds, int n,
                              std::vector<TokenSlot>* slots) {
  // Validate everything before touching anything, so a refused append leaves every rank as it
  // was (each rank computes the same verdict from the same replicated counts).
  std::map<int, int64_t> added;
  for (int i = 0; i < n; ++i) {
    const int s = seqIds[i];
    if (s < 0 || s >= maxSeqs())
      return fail(sscInvalidArgument, "{}: seqIds[{}] = {} is not a sequence id (0 .. {})", fn, i,
                  s, maxSeqs() - 1);
    ++added[s];
  }
  std::vector<int64_t> need(placement_.nranks, 0);
  for (const auto& [s, count] : added) {
    if (lengths_[s] + count > INT32_MAX)
      return fail(sscInvalidArgument, "{}: sequence {} would exceed {} tokens", fn, s, INT32_MAX);
    for (int r = 0; r < placement_.nranks; ++r)
      need[r] += placement_.pagesOwned(s, lengths_[s] + count, r) -
                 placement_.pagesOwned(s, lengths_[s], r);
  }
  for (int r = 0; r < placement_.nranks; ++r)
    if (used_[r] + need[r] > maxPages_)
      return fail(sscInvalidUsage,
                  "{}: rank {} would need {} more page(s) but has {} of {} "
                  "free; release or trim sequences or create the cache with more maxPages",
                  fn, r, need[r], maxPages_ - used_[r], maxPages_);
  for (int r = 0; r < placement_.nranks; ++r) used_[r] += need[r];
  if (n > 0) ++version_;

  slots->assign(n, TokenSlot{});
  for (int i = 0; i < n; ++i) {
    const int s = seqIds[i];
    const int64_t pos = lengths_[s]++;
    const int64_t page = pos / placement_.pageSize;
    if (placement_.pageOwner(s, page) != rank_) continue;
    const int64_t slot = placement_.localSlot(s, page);
    auto& list = pages_[s];
    // Slots fill in order: a rank's pages of a sequence are appended one after the other.
    if (slot == static_cast<int64_t>(list.size())) {
      list.push_back(free_.back());
      free_.pop_back();
    }
    (*slots)[i] = TokenSlot{list[slot], static_cast<int32_t>(pos % placement_.pageSize)};
  }
  return sscSuccess;
}

void PageTable::release(int seq) {
  ++version_;
  // The pages a trim freed were counted off already.
  const int64_t gone = trimmed_[seq] / placement_.pageSize * placement_.pageSize;
  for (int r = 0; r < placement_.nranks; ++r)
    used_[r] -= placement_.pagesOwned(seq, lengths_[seq], r) - placement_.pagesOwned(seq, gone, r);
  for (auto it = pages_[seq].rbegin(); it != pages_[seq].rend(); ++it)
    if (*it >= 0) free_.push_back(*it);
  pages_[seq].clear();
  lengths_[seq] = 0;
  trimmed_[seq] = 0;
}

void PageTable::trim(int seq, int64_t position) {
  if (position <= trimmed_[seq]) return;
  const int64_t ps = placement_.pageSize;
  const int64_t from = trimmed_[seq] / ps, to = position / ps;  // pages [from, to) go
  trimmed_[seq] = position;
  if (to == from) return;  // the same pages hold the same tokens: the page lists stand
  ++version_;
  for (int r = 0; r < placement_.nranks; ++r)
    used_[r] -= placement_.pagesOwned(seq, to * ps, r) - placement_.pagesOwned(seq, from * ps, r);
  // The slots stay (as -1), so later pages keep their slot numbers and appends their order.
  auto& list = pages_[seq];
  for (int64_t page = from; page < to; ++page) {
    if (placement_.pageOwner(seq, page) != rank_) continue;
    int32_t& held = list[placement_.localSlot(seq, page)];
    free_.push_back(held);
    held = -1;
  }
}

void PageTable::spans(int seq, int64_t begin, std::vector<PageSpan>* out) const {
  const int64_t length = lengths_[seq], ps = placement_.pageSize;
  const auto& list = pages_[seq];
  // Slots are in page order, so the first one that can hold `begin` is the count of this
  // rank's pages before begin's page: a window over a long sequence skips the rest unread.
  const int64_t firstSlot = placement_.pagesOwned(seq, begin / ps * ps, rank_);
  for (size_t slot = static_cast<size_t>(std::max<int64_t>(firstSlot, 0)); slot < list.size();
       ++slot) {
    if (list[slot] < 0) continue;  // trimmed: never reached when begin >= trimmedFrom(seq)
    const int64_t page = placement_.pageOfSlot(seq, rank_, static_cast<int64_t>(slot));
    const int64_t first = std::max(page * ps, begin), last = std::min((page + 1) * ps, length);
    if (first >= last) continue;
    out->push_back(PageSpan{list[slot], static_cast<int32_t>(first - page * ps),
                            static_cast<int32_t>(last - page * ps), first});
  }
}

void flattenSpans(const PageTable& table, const int32_t* seqIds, const int64_t* starts, int batch,
                  std::vector<int32_t>* out) {
  out->assign(static_cast<size_t>(batch) + 1, 0);
  std::vector<PageSpan> spans;
  for (int b = 0; b < batch; ++b) {
    (*out)[b] = static_cast<int32_t>((out->size() - (batch + 1)) / 3);
    spans.clear();
    table.spans(seqIds[b], starts[b], &spans);
    for (const PageSpan& sp : spans) out->insert(out->end(), {sp.page, sp.rowBegin, sp.rowEnd});
  }
  (*out)[batch] = static_cast<int32_t>((out->size() - (batch + 1)) / 3);
}

}  // namespace ssc::attn
