// SPDX-License-Identifier: MIT
#include "perf/common/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace ssc::perf {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The seed of the data written before timing; checks use 1, 2, ... (nccl-tests does the same).
constexpr uint64_t kTimingSeed = 99;

}  // namespace

Bench::Bench(const Options& options, const Collective& collective, const World& world,
             const Session& session, DeviceBuffer* send, DeviceBuffer* recv, const RunInfo& run,
             JsonLinesWriter* json)
    : options_(options),
      collective_(collective),
      world_(world),
      session_(session),
      send_(send),
      recv_(recv),
      run_(run),
      json_(json) {}

void Bench::setSize(size_t bytes) {
  counts_ = collCounts(collective_.kind, bytes / elt_, elt_, world_.nranks);
}

CallShape Bench::shape(bool inPlace) const {
  return CallShape{collective_.kind, counts_, world_.rank, world_.nranks, root_, inPlace};
}

void Bench::startColl(bool inPlace, int iter) {
  const size_t total = rowBytes(counts_, elt_);
  const size_t room = std::min(send_->size(), recv_->size());
  const size_t steps = total != 0 ? std::max<size_t>(room / total, 1) : 1;
  const size_t shift = total * (static_cast<size_t>(iter) % steps);
  char* recv = recv_->data() + shift;
  char* send = send_->data() + shift;
  const size_t rank = static_cast<size_t>(world_.rank);
  const void* sendPtr = inPlace ? recv + counts_.sendInplaceOffset * rank * elt_ : send;
  void* recvPtr = inPlace ? recv + counts_.recvInplaceOffset * rank * elt_ : recv;
  PERF_CHECK(collective_.run(sendPtr, recvPtr, counts_.paramCount, type_, sscOp_, root_,
                             session_.comm, session_.stream));
  if (options_.blocking > 0) {
    PERF_CHECK(sscStreamSynchronize(session_.stream));
    if (options_.blocking == 1) barrier();
  }
}

void Bench::completeColl() {
  if (options_.blocking == 0) PERF_CHECK(sscStreamSynchronize(session_.stream));
}

void Bench::initData(bool inPlace, uint64_t seed) {
  const CallShape s = shape(inPlace);
  pattern_.emplace(type_, op_, world_.nranks, seed);
  const BufferImages images = prepareImages(s, *pattern_);
  if (!inPlace) PERF_CHECK(copyToDevice(send_->data(), images.send.data(), images.send.size()));
  PERF_CHECK(copyToDevice(recv_->data(), images.recv.data(), images.recv.size()));
}

int64_t Bench::checkData(bool inPlace) {
  const CallShape s = shape(inPlace);
  std::vector<unsigned char> result(resultBytes(s, elt_));
  PERF_CHECK(
      copyFromDevice(result.data(), recv_->data() + resultOffsetBytes(s, elt_), result.size()));
  return countWrong(s, *pattern_, result.data());
}

Bench::LocalHalf Bench::benchTime(bool inPlace) {
  LocalHalf half;
  // Time the call on real data, after one untimed call and a barrier, so that every rank
  // starts the timed loop together with connections already set up.
  if (options_.check > 0) initData(inPlace, kTimingSeed);
  startColl(inPlace, 0);
  completeColl();
  barrier();

  const int calls = options_.iters * options_.aggIters;
  const Clock::time_point start = Clock::now();
  for (int iter = 0; iter < options_.iters; ++iter) {
    // -m: several calls per group, launched together at the group's end.
    if (options_.aggIters > 1) PERF_CHECK(sscGroupStart());
    for (int a = 0; a < options_.aggIters; ++a) startColl(inPlace, iter * options_.aggIters + a);
    if (options_.aggIters > 1) PERF_CHECK(sscGroupEnd());
  }
  half.cpuSeconds = secondsSince(start) / calls;  // enqueue time only (-C)
  completeColl();
  half.seconds = secondsSince(start) / calls;

  // Check one more call, on fresh data each time, outside the timed loop (as nccl-tests). The
  // call itself synchronizes the ranks; no barrier needed. Every rank runs all -c checks (a
  // rank that stopped early would leave the others waiting), keeping the worst count.
  if (checks(inPlace)) {
    for (int c = 0; c < options_.check; ++c) {
      initData(inPlace, ++checkSeed_);
      startColl(inPlace, 0);
      completeColl();
      half.wrong = std::max(half.wrong, static_cast<double>(checkData(inPlace)));
    }
    if (half.wrong > 0) totals_.failedChecks++;
  }
  return half;
}

bool Bench::checks(bool inPlace) const {
  return options_.check > 0 && (!inPlace || collChecksInPlace(collective_.kind));
}

PlacementResult Bench::summarize(const std::vector<double>& all, size_t at, bool inPlace) {
  PlacementResult result;
  if (inPlace && !collRunsInPlace(collective_.kind)) return result;  // N/A columns
  const size_t n = static_cast<size_t>(world_.nranks);
  std::vector<double> seconds(n), cpuSeconds(n);
  double wrong = 0;
  for (size_t r = 0; r < n; ++r) {
    seconds[r] = all[r * kRowValues + at];
    cpuSeconds[r] = all[r * kRowValues + at + 1];
    wrong += all[r * kRowValues + at + 2];
  }
  const double time = combineOverRanks(seconds, options_.average);
  result.ran = true;
  result.timeUs =
      (options_.reportCpuTime ? combineOverRanks(cpuSeconds, options_.average) : time) * 1.0e6;
  result.bw = bandwidth(collective_.kind, counts_.paramCount, elt_, time, world_.nranks);
  result.checked = checks(inPlace);
  result.wrong = static_cast<int64_t>(wrong);
  totals_.busBwSum += result.bw.busBw;
  totals_.busBwCount++;
  return result;
}

void Bench::row(const RowKey& key, int cycle) {
  const LocalHalf outOfPlace = benchTime(false);
  const LocalHalf inPlace = collRunsInPlace(collective_.kind) ? benchTime(true) : LocalHalf();
  // One gather per row (not one reduction per number): on an oversubscribed host every MPI
  // collective costs a round of context switches across all ranks.
  const double mine[kRowValues] = {outOfPlace.seconds, outOfPlace.cpuSeconds, outOfPlace.wrong,
                                   inPlace.seconds,    inPlace.cpuSeconds,    inPlace.wrong};
  const std::vector<double> all = gatherToRoot(mine, kRowValues);
  if (world_.rank != 0) return;
  const PlacementResult oop = summarize(all, 0, false);
  const PlacementResult ip = summarize(all, 3, true);
  const std::string line = rowPreamble(key) + rowHalf(oop) + rowHalf(ip) + "\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  if (json_ != nullptr) {
    json_->write(rowRecordJson(run_, options_, key, oop, ip, cycle, isoDateUtcNow()));
  }
}

void Bench::timeTest(sscDataType_t type, PerfOp op, int root) {
  type_ = type;
  op_ = op;
  root_ = root;
  elt_ = typeSize(type);
  sscOp_ = toSscOp(op);
  if (op == PerfOp::kMulSum) {
    // Each rank scales its own input by its own scalar, as NCCL's ncclRedOpCreatePreMulSum.
    unsigned char scalar[8] = {};
    Pattern(type, op, world_.nranks, 0).premulScalar(world_.rank, scalar);
    PERF_CHECK(
        sscRedOpCreatePreMulSum(&sscOp_, scalar, type, sscScalarHostImmediate, session_.comm));
  }
  barrier();

  for (size_t bytes : warmupSeries(options_.minBytes, options_.maxBytes)) {
    setSize(bytes);
    for (int iter = 0; iter < options_.warmupIters; ++iter) startColl(false, iter);
    completeColl();
  }

  long repeat = options_.runCycles;  // 0: until killed, as nccl-tests
  int cycle = 0;
  do {
    for (size_t bytes : sizeSeries(options_.minBytes, options_.maxBytes, options_.stepFactor,
                                   options_.stepBytes)) {
      setSize(bytes);
      row({rowBytes(counts_, elt_), counts_.paramCount, typeName(type), opName(op),
           collHasRoot(collective_.kind) ? root : -1},
          cycle);
    }
    ++cycle;
  } while (--repeat != 0);

  if (op == PerfOp::kMulSum) PERF_CHECK(sscRedOpDestroy(sscOp_, session_.comm));
}

}  // namespace ssc::perf
