// SPDX-License-Identifier: MIT
// The tuner's self-calibration, run by communicator init once the communicator can run calls.
#pragma once

#include "src/comm/comm.h"
#include "tuner/calibrate.h"

namespace ssc {

struct CalibrationOptions {
  // STARSCREAM_TUNE and STARSCREAM_TUNER_PROFILE decide (communicator init); false: `mode` does,
  // whatever the environment says (starscream-tune --calibrate).
  bool fromEnvironment = true;
  TuneMode mode = TuneMode::kAuto;
  // Every power of two of sizes, more calls a point (calibrationPoints' thorough sweep).
  bool thorough = false;
  // No new point is started after this long (the ranks agree on when).
  double budgetSeconds = 4.0;
};

// STARSCREAM_TUNE (tuner/calibrate.h, docs/tuner.md): takes this machine's cached calibration
// when every rank has the same one, else (auto, refresh) times a short sweep of collectives with
// every rank, fits the cost model to it, caches it and makes it the communicator's tuner. A
// calibration that cannot be measured or fitted leaves the uncalibrated tuner, with a warning;
// only a failure of the ranks' bootstrap (they can no longer agree) fails init.
sscResult_t commCalibrate(sscComm* comm, const CalibrationOptions& options = {});

}  // namespace ssc
