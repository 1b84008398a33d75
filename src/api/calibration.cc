// SPDX-License-Identifier: MIT
// The tuner's self-calibration at the end of communicator init (tuner/calibrate.h says what is
// measured and kept; this file runs it through the communicator's own collectives). It lives in
// the API layer because it times real calls, argument checks and launch path included, as an
// application sees them.
#include "src/api/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "src/api/api.h"
#include "src/api/group.h"
#include "src/core/bootstrap.h"
#include "src/core/env.h"
#include "src/core/log.h"
#include "tuner/calibrate.h"
#include "tuner/select.h"

namespace ssc {
namespace {

// Calls per timed batch: enough that the batch takes about this long (the host clock and the
// synchronisation then cost a few percent), within [kMinCalls, kMaxCalls]; a thorough sweep
// times three times as long a point.
constexpr double kBatchTargetUs = 1000;
constexpr int kMinCalls = 3, kMaxCalls = 40;
// Timed batches a point, the fastest kept (measure()).
constexpr int kBatches = 2;

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The communicator's settings a point switches, restored when the sweep ends however it ends.
class ConfigGuard {
 public:
  explicit ConfigGuard(sscComm* comm) : comm_(comm), saved_(comm->config) {}
  ~ConfigGuard() { comm_->config = saved_; }

 private:
  sscComm* comm_;
  CommConfig saved_;
};

// Marks this thread as the calibrating one (checkComm lets its calls through while a non-blocking
// init is still in progress), for the guard's lifetime.
class CalibratingThread {
 public:
  explicit CalibratingThread(sscComm* comm) : comm_(comm) {
    comm_->calibrationThread.store(std::this_thread::get_id());
  }
  ~CalibratingThread() { comm_->calibrationThread.store(std::thread::id{}); }

 private:
  sscComm* comm_;
};

struct Buffers {
  sscComm* comm = nullptr;
  void *in = nullptr, *out = nullptr, *hIn = nullptr, *hOut = nullptr;
  sscStream_t stream = nullptr;
  ~Buffers() {
    if (hIn != nullptr) (void)sscCommDeregister(comm, hIn);
    if (hOut != nullptr) (void)sscCommDeregister(comm, hOut);
    if (stream != nullptr) (void)sscStreamDestroy(stream);
    if (in != nullptr) (void)sscMemFree(in);
    if (out != nullptr) (void)sscMemFree(out);
  }
};

// Every rank's flag is true (an all-gather of one byte each).
sscResult_t allTrue(sscComm* comm, bool mine, bool* all) {
  std::vector<uint8_t> flags(static_cast<size_t>(comm->nranks), 0);
  flags[static_cast<size_t>(comm->rank)] = mine ? 1 : 0;
  SSC_CHECK(comm->bootstrap->allGather(flags.data(), 1));
  *all = std::all_of(flags.begin(), flags.end(), [](uint8_t f) { return f != 0; });
  return sscSuccess;
}

// The largest of every rank's value (a rank that failed reports -1, which the caller checks).
sscResult_t maxOverRanks(sscComm* comm, double mine, double* most, bool* anyFailed) {
  std::vector<double> all(static_cast<size_t>(comm->nranks), 0);
  all[static_cast<size_t>(comm->rank)] = mine;
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(double)));
  *most = *std::max_element(all.begin(), all.end());
  *anyFailed = std::any_of(all.begin(), all.end(), [](double v) { return v < 0; });
  return sscSuccess;
}

sscResult_t launch(const CalibrationPoint& p, Buffers& b, sscComm* comm) {
  const uint64_t elems = p.bytes / sizeof(float);
  const uint64_t n = static_cast<uint64_t>(comm->nranks);
  switch (p.coll) {
    case CollKind::kAllReduce:
      return sscAllReduce(b.in, b.out, elems, sscFloat32, sscSum, comm, b.stream);
    case CollKind::kReduceScatter:
      return sscReduceScatter(b.in, b.out, elems / n, sscFloat32, sscSum, comm, b.stream);
    case CollKind::kAllGather:
      return sscAllGather(b.in, b.out, elems / n, sscFloat32, comm, b.stream);
    default: return fail(sscInternalError, "calibration: no launcher for {}", collName(p.coll));
  }
}

// Times `calls` launches of `fn` after the ranks meet: microseconds per call on this rank, or -1
// when a call failed (its message is logged).
template <class Fn>
double timeBatch(sscComm* comm, sscStream_t stream, int calls, Fn fn) {
  if (comm->bootstrap->barrier() != sscSuccess) return -1;
  const double t0 = nowSeconds();
  for (int i = 0; i < calls; ++i)
    if (fn() != sscSuccess) {
      SSC_LOG(kWarn, "tuner calibration: a timed call failed: {}", lastError());
      (void)sscStreamSynchronize(stream);
      return -1;
    }
  if (sscStreamSynchronize(stream) != sscSuccess) return -1;
  return (nowSeconds() - t0) * 1e6 / calls;
}

// Measures the sweep's points into *timesUs (0: not reached) and the per-rank copy rate. Fails
// only on a bootstrap failure (the ranks can no longer agree); a failed call or a rank out of
// memory ends the sweep on every rank with what was measured so far.
sscResult_t measure(sscComm* comm, const std::vector<CalibrationPoint>& points,
                    const CalibrationOptions& options, std::vector<double>* timesUs,
                    double* copyGBps) {
  timesUs->assign(points.size(), 0);
  *copyGBps = 0;
  const uint64_t bytes = calibrationBufferBytes(points);
  Buffers b;
  b.comm = comm;
  bool ok = sscMemAlloc(&b.in, bytes) == sscSuccess && sscMemAlloc(&b.out, bytes) == sscSuccess &&
            sscStreamCreate(&b.stream) == sscSuccess;
  if (!ok)
    SSC_LOG(kWarn, "tuner calibration: cannot allocate 2 x {} bytes: {}", bytes, lastError());
  bool all = false;
  SSC_CHECK(allTrue(comm, ok, &all));
  if (!all) return sscSuccess;
  // Registration is collective: every rank registers or none goes on.
  ok = sscCommRegister(comm, b.in, bytes, &b.hIn) == sscSuccess &&
       sscCommRegister(comm, b.out, bytes, &b.hOut) == sscSuccess;
  if (!ok) SSC_LOG(kWarn, "tuner calibration: cannot register its buffers: {}", lastError());
  SSC_CHECK(allTrue(comm, ok, &all));
  if (!all) return sscSuccess;

  // The copy rate local steps run at, with every rank copying at once (as they do in a call).
  {
    auto copy = [&] { return comm->backend->enqueueCopy(comm, b.out, b.in, bytes, b.stream); };
    double warm = copy() == sscSuccess && sscStreamSynchronize(b.stream) == sscSuccess ? 0 : -1;
    double us = warm < 0 ? -1 : timeBatch(comm, b.stream, kMinCalls, copy);
    double most = 0;
    bool failed = false;
    SSC_CHECK(maxOverRanks(comm, us, &most, &failed));
    if (!failed && most > 0) *copyGBps = static_cast<double>(bytes) / most * 1e-3;
  }

  const double start = nowSeconds();
  for (size_t i = 0; i < points.size(); ++i) {
    const CalibrationPoint& p = points[i];
    comm->config.forcedAlgos = noForcedAlgos();
    comm->config.forcedAlgos[static_cast<size_t>(p.coll)] = p.algo;
    // LL packets run only where allowed; a pinned bulk point turns them off.
    comm->config.packetMaxBytes = p.pinned && p.protocol == Protocol::kLL ? UINT64_MAX : 0;
    comm->config.zeroCopyGrid = !p.pinned                               ? ZeroCopyGrid::kAuto
                                : p.protocol == Protocol::kZeroCopyWide ? ZeroCopyGrid::kWide
                                                                        : ZeroCopyGrid::kBulk;
    auto call = [&] { return launch(p, b, comm); };
    // Two untimed calls (plans, mappings, first-touch), one timed alone to size the batch.
    double single =
        call() == sscSuccess && call() == sscSuccess && sscStreamSynchronize(b.stream) == sscSuccess
            ? timeBatch(comm, b.stream, 1, call)
            : -1;
    if (single < 0) SSC_LOG(kWarn, "tuner calibration: a call failed: {}", lastError());
    double most = 0;
    bool failed = false;
    // A rank past the budget says so with its single time: the gathered flag is the same on all.
    // The budget: init stays within a few seconds on slow devices too; what was measured by
    // then is fitted.
    const bool over = nowSeconds() - start > options.budgetSeconds;
    SSC_CHECK(maxOverRanks(comm, over && single >= 0 ? 1e300 : single, &most, &failed));
    if (failed) {
      SSC_LOG(kWarn, "tuner calibration: {} {} of {} bytes failed on some rank; the sweep ends",
              collName(p.coll), algoName(p.algo), p.bytes);
      return sscSuccess;
    }
    if (most >= 1e300) {
      SSC_LOG(kInfo, "tuner calibration: time budget reached after {} of {} points", i,
              points.size());
      break;
    }
    const double target = kBatchTargetUs * (options.thorough ? 3 : 1);
    const int calls = std::clamp(static_cast<int>(std::ceil(target / std::max(most, 1.0))),
                                 kMinCalls, kMaxCalls * (options.thorough ? 3 : 1));
    // The faster of kBatches batches: the anchors are cached and rank this machine's calls from
    // then on, so one batch that something else held up (another process starting on the same
    // GPU, a burst of page faults) must not stand for the algorithm (docs/tuner.md).
    double fastest = 0;
    for (int batch = 0; batch < kBatches; ++batch) {
      const double us = timeBatch(comm, b.stream, calls, call);
      SSC_CHECK(maxOverRanks(comm, us, &most, &failed));
      if (failed) return sscSuccess;
      if (batch == 0 || most < fastest) fastest = most;
    }
    (*timesUs)[i] = fastest;
  }
  return sscSuccess;
}

}  // namespace

sscResult_t commCalibrate(sscComm* comm, const CalibrationOptions& options) {
  TuneMode mode = options.mode;
  if (options.fromEnvironment) {
    // As the communicator read them when it was created (and env::validate checked them).
    (void)parseTuneMode(comm->settings.getString("STARSCREAM_TUNE"), &mode);
    // An explicit profile is the user's word on the machine (docs/tuner.md).
    if (!comm->settings.getString("STARSCREAM_TUNER_PROFILE").empty()) return sscSuccess;
  }
  if (mode == TuneMode::kOff || comm->nranks < 2 || comm->tuner == nullptr) return sscSuccess;
  const bool host = std::string(comm->backend->name()) == "host";
  // The host backend's ranks share one RAM and its built-in estimates choose well enough; it is
  // calibrated only when asked for by name (which the tests do, to run this path without a GPU).
  if (host && mode == TuneMode::kAuto) return sscSuccess;
  // Several ranks of one process (sscCommInitAll), or calls that a group would hold back: the
  // sweep's calls could not run one after the other here.
  if (!comm->onePerProcess || groupDepth() > 0) {
    SSC_LOG(kInfo, "tuner: no calibration ({}): the uncalibrated model chooses",
            !comm->onePerProcess ? "several ranks in one process" : "init inside a group");
    return sscSuccess;
  }
  const Tuner& current = *comm->tuner;
  GpuRuntimeInfo info{};
  const bool haveInfo = comm->backend->runtimeInfo(&info);
  CalibrationKey key;
  key.backend = comm->backend->name();
  key.gpuModel = haveInfo ? std::string(info.name, strnlen(info.name, sizeof(info.name))) : "";
  key.driver = comm->backend->driverVersion();
  key.library =
      fmt::format("{}.{}.{}/model-{}", SSC_MAJOR, SSC_MINOR, SSC_PATCH, kCostModelRevision);
  key.partitionsPerGpu = comm->topo.maxPartitions();
  key.gpus = static_cast<int>(comm->topo.gpus.size());
  key.nodes = comm->topo.nnodes;
  key.nranks = comm->nranks;
  key.computeUnits = haveInfo ? info.computeUnits : 0;
  key.limitsHash = limitsHash(current.limits());
  const std::string dir = calibrationCacheDir();

  // Every rank must end with the same profile and anchors: use the cache only when every rank
  // found the same one in its own.
  Calibration cached;
  bool found = false;
  if (mode != TuneMode::kRefresh) {
    std::string why;
    bool outdated = false;
    found = readCalibration(dir, key, &cached, &why, &outdated);
    if (outdated)
      SSC_LOG(kInfo, "tuner: calibrating again: the cache file {}", why);
    else if (!why.empty())
      SSC_LOG(kWarn, "tuner: ignoring the calibration cache file {}", why);
  }
  std::vector<uint64_t> hashes(static_cast<size_t>(comm->nranks), 0);
  const uint64_t mine = found ? std::hash<std::string>{}(profileToJson(cached.profile) +
                                                         anchorsToJson(cached.anchors)) |
                                    1
                              : 0;
  hashes[static_cast<size_t>(comm->rank)] = mine;
  SSC_CHECK(comm->bootstrap->allGather(hashes.data(), sizeof(uint64_t)));
  const bool agreed =
      mine != 0 && std::all_of(hashes.begin(), hashes.end(), [&](uint64_t h) { return h == mine; });
  Calibration calibration;
  if (agreed) {
    calibration = std::move(cached);
    SSC_LOG(kInfo, "tuner: calibration from the cache ({})", calibration.profile.origin);
  } else if (mode == TuneMode::kCached) {
    SSC_LOG(kInfo,
            "tuner: STARSCREAM_TUNE=cached and no calibration cached alike on every rank "
            "(key {}): the uncalibrated model chooses",
            key.text());
    return sscSuccess;
  } else {
    const double t0 = nowSeconds();
    // The host backend is calibrated to test this path: its sweep stops at a few MiB, where its
    // shared-memory copies already run at their rate, so the test's ranks need little memory.
    const uint64_t cap = host ? uint64_t{4} << 20 : 0;
    const std::vector<CalibrationPoint> points =
        calibrationPoints(comm->topo, current.limits(), cap, options.thorough);
    std::vector<double> times;
    double copy = 0;
    {
      CalibratingThread self(comm);
      ConfigGuard restore(comm);
      SSC_CHECK(measure(comm, points, options, &times, &copy));
    }
    const size_t measured = static_cast<size_t>(
        std::count_if(times.begin(), times.end(), [](double t) { return t > 0; }));
    if (measured == 0) {
      SSC_LOG(kWarn, "tuner: calibration measured nothing: the uncalibrated model chooses");
      return sscSuccess;
    }
    if (fitCalibration(comm->topo, current.limits(), current.profile(), points, times, copy, key,
                       &calibration.profile) != sscSuccess) {
      SSC_LOG(kWarn, "tuner: calibration fit failed ({}): the uncalibrated model chooses",
              lastError());
      return sscSuccess;
    }
    // The times themselves rank the algorithms they measured (tuner/anchors.h): the fit's error
    // is enough to flip a choice where two predictions are close and the machine's times are not.
    calibration.anchors = anchorsFromSweep(points, times);
    SSC_LOG(kInfo,
            "tuner: calibrated in {:.2f} s ({} of {} points, kept as {} measured series; {})",
            nowSeconds() - t0, measured, points.size(), calibration.anchors.series.size(),
            calibration.profile.source);
    if (writeCalibration(dir, key, calibration) != sscSuccess)
      SSC_LOG(kWarn, "tuner: the calibration is used but not cached: {}", lastError());
    else
      calibration.profile.origin = dir + "/" + key.fileName();
  }
  auto tuner = std::make_shared<const Tuner>(comm->topo, std::move(calibration.profile),
                                             current.limits(), std::move(calibration.anchors));
  // The ranks' profiles came from one gathered data set (or one agreed file): check anyway, as
  // init does, since a difference would make them choose different algorithms.
  std::vector<uint64_t> prints(static_cast<size_t>(comm->nranks), 0);
  prints[static_cast<size_t>(comm->rank)] = tuner->fingerprint();
  SSC_CHECK(comm->bootstrap->allGather(prints.data(), sizeof(uint64_t)));
  for (int q = 0; q < comm->nranks; ++q)
    if (prints[static_cast<size_t>(q)] != prints[static_cast<size_t>(comm->rank)])
      return fail(sscInternalError,
                  "tuner calibration: rank {} and rank {} fitted different "
                  "profiles",
                  comm->rank, q);
  comm->tuner = std::move(tuner);
  comm->plans.clearCollPlans();
  return sscSuccess;
}

}  // namespace ssc
