// SPDX-License-Identifier: MIT
// Size arithmetic of the perf tests: how a row's byte size becomes element counts and buffer
// offsets for each collective, the series of sizes a run visits, and the algorithm and bus
// bandwidth of a measured time. All of it follows nccl-tests (src/*.cu, getCollByteCount and
// getBw), so numbers from the two tools compare directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ssc::perf {

enum class CollKind {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv
};

// "all_reduce", "reduce_scatter", ... (the program is <name>_perf).
const char* collName(CollKind kind);
bool collReduces(CollKind kind);  // takes an op (the redop column is not "none")
bool collHasRoot(CollKind kind);  // broadcast and reduce: -r picks the root
// sscAllToAll forbids overlapping buffers, so alltoall has no in-place run.
bool collRunsInPlace(CollKind kind);
// nccl-tests does not check in-place sendrecv (its send and receive alias the same buffer).
bool collChecksInPlace(CollKind kind);

// Element counts and offsets for one size, as nccl-tests' getCollByteCount gives them.
struct CollCounts {
  size_t sendCount = 0;          // elements in this rank's send buffer
  size_t recvCount = 0;          // elements of the result this rank checks
  size_t paramCount = 0;         // the count argument passed to the call
  size_t sendInplaceOffset = 0;  // in place, send = recvbuff + sendInplaceOffset * rank
  size_t recvInplaceOffset = 0;  // in place, recv = recvbuff + recvInplaceOffset * rank
};

// `count` is the row size divided by the element size. For reduce_scatter, all_gather and
// alltoall, whose size is the whole buffer across ranks, the per-rank count is count / nranks
// rounded down to a multiple of 16 bytes (nccl-tests' "& -(16/eltSize)"), so a row may move a
// little less than its nominal size, and nothing at all below nranks * 16 bytes.
CollCounts collCounts(CollKind kind, size_t count, size_t eltSize, int nranks);

// The "size" column: the larger of the send and receive buffers, in bytes.
size_t rowBytes(const CollCounts& counts, size_t eltSize);

// busbw = algbw * factor, where the factor makes busbw comparable with the hardware's link
// bandwidth whatever the rank count: 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter,
// all-gather and alltoall, 1 for broadcast, reduce and sendrecv.
double busBwFactor(CollKind kind, int nranks);

struct Bandwidth {
  double algBw = 0;  // GB/s (1e9 bytes per second): the user-visible bytes over the time
  double busBw = 0;  // GB/s
};
// nccl-tests' getBw: algbw counts paramCount elements, times nranks for the collectives whose
// size is the total buffer (reduce_scatter, all_gather, alltoall).
Bandwidth bandwidth(CollKind kind, size_t paramCount, size_t eltSize, double seconds, int nranks);

// One number from every rank's per-call time, as -a says: 0 rank 0's, 1 the mean, 2 the
// minimum, 3 the maximum (nccl-tests' "average" modes). 0 for an empty list.
double combineOverRanks(const std::vector<double>& perRank, int average);

// The sizes a run reports: minBytes, then times stepFactor (when > 1) or plus stepBytes, up to
// maxBytes. Where nccl-tests would loop forever on one size, a factor steps from 0 to 1 byte and
// a zero stepBytes ends the series after its first size.
std::vector<size_t> sizeSeries(size_t minBytes, size_t maxBytes, size_t stepFactor,
                               size_t stepBytes);
// The sizes warmed up before measuring: minBytes doubling up to maxBytes, as nccl-tests does.
std::vector<size_t> warmupSeries(size_t minBytes, size_t maxBytes);

}  // namespace ssc::perf
