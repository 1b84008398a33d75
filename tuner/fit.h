// SPDX-License-Identifier: MIT
// Calibration: fits a profile variant's parameters to measured call times. The model's prediction
// is linear in (launch, latency, 1 / bandwidth) of each tier and protocol once the critical channel
// is fixed (model.h, Features), so the fit is a non-negative least-squares in relative error,
// repeated a few times because a new parameter set can move the critical channel.
#pragma once

#include <string>
#include <vector>

#include "tuner/model.h"

namespace ssc {

struct Measurement {
  CollKind coll = CollKind::kAllReduce;
  Algo algo = Algo::kRing;
  uint64_t bytes = 0;  // as Tuner::estimate counts them
  double timeUs = 0;
  bool symmetric = true;  // the benchmark's buffers were registered
  // The benchmark pinned the symmetric algorithm's protocol (gpu_coll_perf's symmetric_ll,
  // symmetric_bulk, symmetric_wide rows): the model costs the point with it.
  bool pinned = false;
  Protocol protocol = Protocol::kZeroCopy;
  const Protocol* as() const { return pinned ? &protocol : nullptr; }
};

struct ErrorStats {
  double median = 0;  // of |model - measured| / measured
  double worst = 0;
  size_t points = 0;
  std::string worstWhat;          // "allreduce ring 8 B: model 12.0 us, measured 95.0 us"
  std::vector<std::string> rows;  // one "coll algo bytes model measured error" line per point
};

// The model's error on `data` (points the model cannot serve are skipped).
ErrorStats modelError(const Tuner& tuner, const std::vector<Measurement>& data);

// Fits launch and the (tier, protocol) pairs the data exercises into a copy of `start`'s variant
// for the topology's partition count; copyGBps is taken as measured (0: keep start's).
// sscInvalidArgument when the data is empty or exercises nothing.
sscResult_t fitVariant(const Topology& topo, const ModelLimits& limits, const TunerProfile& start,
                       const std::vector<Measurement>& data, double copyGBps, ProfileVariant* out);

// Reads gpu_coll_perf's JSON ({"K", "copy_GBps", "results": [{coll, algo, bytes, time_us}]}).
// Rows of the "default" algorithm are skipped (the model predicts algorithms, not the default's
// mix), and so are the plain "symmetric" all-gather rows: their grid was the run's own tuner's
// pick, which the symmetric_bulk and symmetric_wide rows pin. symmetric_ll, symmetric_bulk and
// symmetric_wide rows are the symmetric algorithm with their protocol pinned (Measurement).
sscResult_t readPerfJson(const std::string& path, std::vector<Measurement>* out, int* k,
                         double* copyGBps);

}  // namespace ssc
