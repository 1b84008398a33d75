// SPDX-License-Identifier: MIT
#include "perf/common/coll_math.h"

#include <algorithm>
#include <limits>

namespace ssc::perf {
namespace {

// count / nranks rounded down to a multiple of 16 bytes, for elements of at most 16 bytes.
size_t alignedShare(size_t count, size_t eltSize, int nranks) {
  const size_t perRank = count / static_cast<size_t>(nranks);
  const size_t eltsPer16 = eltSize >= 16 ? 1 : 16 / eltSize;
  return perRank - perRank % eltsPer16;
}

// a * b, or 0 when that overflows (which ends a size series).
size_t checkedMul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a) return 0;
  return a * b;
}

}  // namespace

const char* collName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce: return "all_reduce";
    case CollKind::kReduceScatter: return "reduce_scatter";
    case CollKind::kAllGather: return "all_gather";
    case CollKind::kBroadcast: return "broadcast";
    case CollKind::kReduce: return "reduce";
    case CollKind::kAllToAll: return "alltoall";
    case CollKind::kSendRecv: return "sendrecv";
  }
  return "?";
}

bool collReduces(CollKind kind) {
  return kind == CollKind::kAllReduce || kind == CollKind::kReduceScatter ||
         kind == CollKind::kReduce;
}

bool collHasRoot(CollKind kind) {
  return kind == CollKind::kBroadcast || kind == CollKind::kReduce;
}

bool collRunsInPlace(CollKind kind) { return kind != CollKind::kAllToAll; }

bool collChecksInPlace(CollKind kind) {
  return collRunsInPlace(kind) && kind != CollKind::kSendRecv;
}

CollCounts collCounts(CollKind kind, size_t count, size_t eltSize, int nranks) {
  CollCounts c;
  const size_t n = static_cast<size_t>(std::max(nranks, 1));
  switch (kind) {
    case CollKind::kAllReduce:
    case CollKind::kBroadcast:
    case CollKind::kReduce:
    case CollKind::kSendRecv: c.sendCount = c.recvCount = c.paramCount = count; break;
    case CollKind::kReduceScatter: {
      const size_t base = alignedShare(count, eltSize, nranks);
      c.sendCount = base * n;
      c.recvCount = c.paramCount = base;
      c.recvInplaceOffset = base;  // rank r's result is block r of the input
      break;
    }
    case CollKind::kAllGather: {
      const size_t base = alignedShare(count, eltSize, nranks);
      c.sendCount = c.paramCount = base;
      c.recvCount = base * n;
      c.sendInplaceOffset = base;  // rank r's input is block r of the output
      break;
    }
    case CollKind::kAllToAll: {
      const size_t base = alignedShare(count, eltSize, nranks);
      c.paramCount = base;  // elements to each peer
      c.sendCount = c.recvCount = base * n;
      break;
    }
  }
  return c;
}

size_t rowBytes(const CollCounts& counts, size_t eltSize) {
  return std::max(counts.sendCount, counts.recvCount) * eltSize;
}

double busBwFactor(CollKind kind, int nranks) {
  const double n = nranks;
  switch (kind) {
    case CollKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollKind::kReduceScatter:
    case CollKind::kAllGather:
    case CollKind::kAllToAll: return (n - 1) / n;
    case CollKind::kBroadcast:
    case CollKind::kReduce:
    case CollKind::kSendRecv: return 1.0;
  }
  return 1.0;
}

Bandwidth bandwidth(CollKind kind, size_t paramCount, size_t eltSize, double seconds, int nranks) {
  double bytes = static_cast<double>(paramCount) * static_cast<double>(eltSize);
  if (kind == CollKind::kReduceScatter || kind == CollKind::kAllGather ||
      kind == CollKind::kAllToAll) {
    bytes *= nranks;
  }
  Bandwidth bw;
  if (seconds > 0) bw.algBw = bytes / 1.0e9 / seconds;
  bw.busBw = bw.algBw * busBwFactor(kind, nranks);
  return bw;
}

double combineOverRanks(const std::vector<double>& perRank, int average) {
  if (perRank.empty()) return 0;
  switch (average) {
    case 0: return perRank.front();
    case 2: return *std::min_element(perRank.begin(), perRank.end());
    case 3: return *std::max_element(perRank.begin(), perRank.end());
    default: {
      double sum = 0;
      for (double v : perRank) sum += v;
      return sum / static_cast<double>(perRank.size());
    }
  }
}

std::vector<size_t> sizeSeries(size_t minBytes, size_t maxBytes, size_t stepFactor,
                               size_t stepBytes) {
  std::vector<size_t> sizes;
  for (size_t size = minBytes; size <= maxBytes;) {
    sizes.push_back(size);
    // From 0, a factor steps to 1 byte (nccl-tests would repeat size 0 forever).
    const size_t next =
        stepFactor > 1 ? (size == 0 ? 1 : checkedMul(size, stepFactor)) : size + stepBytes;
    if (next <= size) break;  // stepBytes 0, or overflow
    size = next;
  }
  return sizes;
}

std::vector<size_t> warmupSeries(size_t minBytes, size_t maxBytes) {
  return sizeSeries(minBytes, maxBytes, 2, 0);
}

}  // namespace ssc::perf
