// SPDX-License-Identifier: MIT
// transports/usr: a host-side all-gather of small records among the ranks of one node, through
// one shared-memory segment. It is what lets every collective call on plain (unregistered)
// buffers agree on the peers' buffers without a socket round trip: each rank posts a record of a
// few hundred bytes and spins until every rank's record of the same ticket is there, a few
// microseconds when the ranks enqueue in step (they do: every rank issues the same calls).
//
// Tickets are issued in the same order on every rank (every rank posts the same sequence of
// calls), so ticket t means the same call everywhere. A ring of kDepth slots per rank holds the
// records; a rank posts ticket t only once every rank has collected ticket t - kDepth, so a slot
// is never overwritten while a slow rank still reads it.
//
// post() and collect() are separate so that one thread driving several communicators (one rank
// of each, in a group) posts on all of them before it waits on any: NCCL's contract lets a call
// block for its peers only inside such a group.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "transports/peer_view.h"
#include "starscream/starscream.h"

namespace ssc {

class ShmAllGather {
 public:
  static constexpr size_t kMaxBytes = 448;  // largest record
  static constexpr uint64_t kDepth = 8;     // slots per rank

  // Bytes of the shared segment for nranks ranks (zero-filled memory is the initial state).
  static size_t segmentBytes(int nranks);

  // Over memory the caller shares among the ranks (tests: one process, several threads). `abort`
  // (may be null) ends waits with sscRemoteError; a wait longer than timeoutSeconds (<= 0: no
  // limit) ends with sscTimeout naming the ranks that did not arrive.
  ShmAllGather(void* segment, int rank, int nranks, const std::atomic<bool>* abort,
               double timeoutSeconds);
  ~ShmAllGather();
  ShmAllGather(const ShmAllGather&) = delete;
  ShmAllGather& operator=(const ShmAllGather&) = delete;

  // Collective over comm's bootstrap, all ranks on one host: the lowest rank creates an
  // anonymous segment (memfd, so nothing is left in /dev/shm when a process dies) and the others
  // map it through /proc/<pid>/fd. Every rank reaches the same outcome: *out stays null on all
  // when any rank could not map it (the caller then does without). Errors are returned only for
  // failures of the bootstrap itself.
  static sscResult_t createShared(PeerView* comm, std::unique_ptr<ShmAllGather>* out);

  // Publishes this rank's record for the next ticket (bytes <= kMaxBytes, the same on every
  // rank for one ticket). Waits only for ring space.
  sscResult_t post(const void* record, size_t bytes, uint64_t* ticket);
  // Waits for every rank's record of `ticket` and copies them to all[rank * bytes].
  sscResult_t collect(uint64_t ticket, void* all, size_t bytes);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

 private:
  struct Slot;
  struct RankArea;
  RankArea* area(int q) const;
  sscResult_t waitFor(const char* what, uint64_t ticket,
                      bool (*ready)(const ShmAllGather*, int, uint64_t));

  char* segment_;
  int rank_;
  int nranks_;
  const std::atomic<bool>* abort_;
  double timeoutSeconds_;
  uint64_t nextTicket_ = 1;
  size_t mappedBytes_ = 0;  // createShared: the mapping to undo
};

}  // namespace ssc
