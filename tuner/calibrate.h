// SPDX-License-Identifier: MIT
// Self-calibration: what a communicator measures when its machine has no calibration yet, how the
// measurements become a profile, and where that profile is kept between runs.
//
// The cost model (model.h) is structural: step counts, bytes, loads and stores come from the
// plans. What it cannot know from first principles is how fast this device runs each protocol's
// kernel at this partitioning (the FIFO kernel's few blocks, the zero-copy kernels' loads and
// stores, launches, barriers). So on first use of a (device, driver, partitioning) the ranks time a
// short sweep of real collectives together (calibrationPoints: every algorithm and pinned
// protocol at a handful of sizes), take each point's slowest rank, fit the model's rates to that
// (fitVariant, the fitter starscream-tune uses) and keep the profile in a per-user cache keyed by
// what changes the rates, with the measured times themselves as anchors (tuner/anchors.h): where
// the sweep timed the algorithms a call could take, their times rank them, not the fit. Every rank
// fits the same numbers and holds the same anchors, so they choose alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tuner/anchors.h"
#include "tuner/fit.h"
#include "tuner/model.h"
#include "tuner/profile.h"

namespace ssc {

// STARSCREAM_TUNE: auto (use the cache, calibrate when it has nothing for this machine), cached
// (use the cache, never measure), off (never read or measure: the shipped profile or the
// topology's figures), refresh (measure again and overwrite the cache).
enum class TuneMode : uint8_t { kAuto, kCached, kOff, kRefresh };
bool parseTuneMode(const std::string& text, TuneMode* out);
const char* tuneModeName(TuneMode m);

// What a calibration depends on. Two runs with equal keys may share a calibration; anything that
// changes a measured rate is in it (the SMs a rank may use, under MPS, change with the cap).
struct CalibrationKey {
  std::string backend;   // "gpu", "host"
  std::string gpuModel;  // the runtime's device name
  std::string driver;    // the driver's version as the runtime reports it
  std::string library;   // library version and cost-model revision: a new model refits
  int partitionsPerGpu = 0;
  int gpus = 0;  // GPUs of the communicator
  int nodes = 0;
  int nranks = 0;
  int computeUnits = 0;     // SMs / CUs this rank may use
  uint64_t limitsHash = 0;  // the executor's limits the model was fitted with (ModelLimits)

  std::string text() const;      // one line, every field: stored in the file and compared
  std::string fileName() const;  // "<model>-<parts>p-<hash>.json", safe as a file name
  bool operator==(const CalibrationKey&) const = default;
};

// A fingerprint of the limits a fit depends on (chunk, channels, LL limit, FIFO blocks...).
uint64_t limitsHash(const ModelLimits& limits);

// One timed point of the calibration sweep: a collective with an algorithm (and, for the
// symmetric algorithm, a pinned protocol) at one size (bytes as Tuner::estimate counts them).
struct CalibrationPoint {
  CollKind coll = CollKind::kAllReduce;
  Algo algo = Algo::kRing;
  bool pinned = false;
  Protocol protocol = Protocol::kFifo;
  uint64_t bytes = 0;
};

// The sweep for this topology: all-reduce, reduce-scatter and all-gather with every algorithm
// that can serve them (the symmetric one with each of its protocols: LL where it applies, the
// bulk and, for all-gather, the wide grid), at sizes from latency-bound to bandwidth-bound. Each
// series starts at the smallest size a call can have (one element per rank), so the anchors reach
// every latency-bound size. Ordered by size within each (collective, algorithm) so a caller may
// stop early on its budget.
// `maxBytes` caps the sizes (0: none). `thorough`: every power of two from 256 B to 256 MiB
// instead of the handful of sizes init measures (starscream-tune --calibrate).
std::vector<CalibrationPoint> calibrationPoints(const Topology& topo, const ModelLimits& limits,
                                                uint64_t maxBytes = 0, bool thorough = false);

// The largest per-rank buffer (bytes) the sweep needs, for the input and for the output.
uint64_t calibrationBufferBytes(const std::vector<CalibrationPoint>& points);

// What a calibration is: the fitted profile and the sweep's measured times, the anchors.
struct Calibration {
  TunerProfile profile;
  Anchors anchors;
  bool operator==(const Calibration&) const = default;
};

// The sweep's times as anchors: one series per (collective, algorithm, protocol) of the points
// measured (timesUs[i] > 0), each time to four significant digits, so the anchors a fresh
// calibration uses are those its cache file gives back.
Anchors anchorsFromSweep(const std::vector<CalibrationPoint>& points,
                         const std::vector<double>& timesUs);

// Fits a profile to the sweep's times (`timesUs[i]` for points[i]; <= 0: not measured) and the
// measured copy rate (GB/s a rank copies while every rank copies; 0: keep start's). `start`
// supplies what the data cannot determine. The result has one variant, for this partitioning.
sscResult_t fitCalibration(const Topology& topo, const ModelLimits& limits,
                           const TunerProfile& start, const std::vector<CalibrationPoint>& points,
                           const std::vector<double>& timesUs, double copyGBps,
                           const CalibrationKey& key, TunerProfile* out);

// The cache directory: STARSCREAM_TUNE_CACHE when set, else $XDG_CACHE_HOME/starscream, else
// $HOME/.cache/starscream; "" when none of them is set.
std::string calibrationCacheDir();

// Reads the calibration for `key` from `dir`. Returns true with *out filled when a file for the
// key exists, parses, and was written for exactly this key. A missing file is false with an empty
// *why; a corrupt or foreign one (another key, an unknown format) is false with *why saying which
// and why, for the caller's warning. A file of an earlier calibration format (one without
// anchors) is false with *outdated set and *why saying so: not an error, the machine is
// calibrated again and the file replaced.
bool readCalibration(const std::string& dir, const CalibrationKey& key, Calibration* out,
                     std::string* why, bool* outdated = nullptr);

// Reads a calibration cache file whatever its key (starscream-model --calibration shows what a
// machine's calibration chooses); *keyText: the key it was written for. sscInvalidArgument naming
// the file when it is not a calibration of the current format.
sscResult_t loadCalibrationFile(const std::string& path, Calibration* out, std::string* keyText);

// Writes the calibration for `key` into `dir` (created, with its parents, when missing): a
// temporary file in the same directory renamed over the final name, so a reader sees the old
// file or the new one, never half of one, and concurrent writers (ranks of one node, several
// jobs) each publish a whole file. sscSystemError naming the path on failure.
sscResult_t writeCalibration(const std::string& dir, const CalibrationKey& key,
                             const Calibration& calibration);

// The cache file's text for a key and calibration (format "starscream-calibration/2": the key,
// the profile, the anchors).
std::string calibrationJson(const CalibrationKey& key, const Calibration& calibration);

}  // namespace ssc
